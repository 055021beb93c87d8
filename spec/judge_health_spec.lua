-- The health view through the one judge: health findings first within their
-- level (on a GPU someone is on, then on a free one), each GPU's health
-- verdict, the health column of ls and of the page, and a GPU that
-- nvidia-smi no longer lists, still reported from Nomad's devices.
local H = require "helper"
local html = require "gpuledger.render.html"
local json = require "gpuledger.json"
local json_render = require "gpuledger.render.json"
local metrics = require "gpuledger.render.metrics"
local table_render = require "gpuledger.render.table"

describe("the judge's health view", function()
  it("the health rules have the levels of the issue and say they are health rules", function()
    local set = H.rule_set()
    local bad = { ["gpu-lost"] = true, ["gpu-requires-reset"] = true, ["gpu-recovery-action"] = true, ["row-remap-pending"] = true,
      ["row-remap-failed"] = true, ["retired-pages-pending"] = true, ["ecc-uncorrected"] = true, ["xid-fatal"] = true,
      ["nomad-schedules-failing-gpu"] = true }
    local warn = { "ecc-disabled", "hw-slowdown", "mig-mode-pending", "pcie-degraded", "persistence-off",
      "power-brake", "retired-pages-high", "row-remap-uncorrectable", "xid-app", "xid-memory" }
    for code in pairs(bad) do
      assert.same({ "BAD", true }, { H.rule(set, code).level, H.rule(set, code).health }, code)
    end
    for _, code in ipairs(warn) do
      assert.same({ "WARN", true }, { H.rule(set, code).level, H.rule(set, code).health }, code)
    end
    for _, code in ipairs { "source-unavailable", "unreserved-tenant", "unmanaged-tenant", "contended", "reserved-idle",
      "encoder-saturated", "hot", "idle", "held" } do
      assert.is_nil(H.rule(set, code).health, code)
    end
  end)

  it("find nothing on a GPU without health data, and nothing on a healthy H100", function()
    local healthy = {
      persistenceMode = true, eccMode = true, eccModePending = true, eccCorrectedVolatile = 0, eccUncorrectedVolatile = 0,
      remappedRowsCorrectable = 0, remappedRowsUncorrectable = 0, remappedRowsPending = false, remappedRowsFailure = false,
      hwSlowdown = false, powerBrake = false, swPowerCap = true, pcieGenCurrent = 5, pcieGenMax = 5, pcieWidthCurrent = 16,
      pcieWidthMax = 16, powerLimitEnforcedW = 700.0, powerLimitDefaultW = 700.0, migMode = false, migModePending = false,
      recoveryAction = "None",
    }
    for _, fields in ipairs { {}, { health = healthy, xids = {}, nomadDevice = { healthy = true, healthDescription = "" } } } do
      assert.same({ "OK idle gpu0 GPU-fef8089b" }, H.summary(H.run_rules(H.ledger { H.gpu(fields) })))
    end
  end)

  local reserved = H.gpu { index = 0, health = { remappedRowsPending = true }, reservations = { H.reservation() } }
  local free = H.gpu { index = 1, health = { retiredPagesPending = true } }
  local unmanaged = H.gpu { index = 2, health = { persistenceMode = false }, tenants = { H.docker_tenant() } }
  local quiet = H.gpu { index = 3, health = { persistenceMode = true } }
  local unread = H.gpu { index = 4 }

  it("sorts BAD health on a reserved GPU first, then on a free one, then the other BAD findings", function()
    local found = H.run_rules(H.ledger { free, unmanaged, reserved, quiet, unread })
    assert.same({
      "BAD row-remap-pending gpu0 GPU-fef8089b",
      "BAD retired-pages-pending gpu1 GPU-ac81e44d",
      "BAD unmanaged-tenant gpu2 GPU-c41b9e27",
      "WARN persistence-off gpu2 GPU-c41b9e27",
      "WARN reserved-idle gpu0 GPU-fef8089b",
      "OK idle gpu1 GPU-ac81e44d",
      "OK idle gpu3 GPU-61d0e8b3",
      "OK idle gpu4 GPU-00000004",
    }, H.summary(found))
  end)

  it("gives each GPU with health data its verdict: the worst health level and its codes", function()
    reserved.nomadDevice = { healthy = true, healthDescription = "" }
    local _, _, report = H.run_rules(H.ledger { reserved, free, quiet, unread })
    local entries = report.ledger.entries
    assert.same({ level = "BAD", codes = { "row-remap-pending", "nomad-schedules-failing-gpu" } }, entries[1].healthVerdict)
    assert.same({ level = "BAD", codes = { "retired-pages-pending" } }, entries[2].healthVerdict)
    assert.same({ level = "OK", codes = {} }, entries[3].healthVerdict)
    assert.is_nil(entries[4].healthVerdict)
    assert.equal("BAD row-remap-pending +1", table_render.health_cell(entries[1]))
    assert.equal("OK", table_render.health_cell(entries[3]))
    assert.equal("-", table_render.health_cell(entries[4]))
    reserved.nomadDevice = nil
  end)

  it("shows the health column in ls and on the page", function()
    local _, _, report = H.run_rules(H.ledger { reserved, quiet })
    local ls = table_render.ls(report.ledger)
    assert.matches("│ state         │ health                │", ls, 1, true)
    assert.matches("│ reserved-idle │ BAD row-remap-pending │", ls, 1, true)
    local page = html.node(report, { interval = 15 })
    assert.matches("<th>state</th><th>health · findings</th>", page, 1, true)
    assert.matches('<span class="level BAD">BAD</span></li><li>row-remap-pending</li>', page, 1, true)
  end)

  -- A node whose nvidia-smi lists GPU 0 and whose Nomad still lists a second GPU at 00000000:AF:00.0.
  local function lost_gpu_snapshot()
    local snap = H.snapshot {
      gpus = { H.smi_row { index = 0 } },
      allocations = { H.alloc { id = "9a8b7c6d-0000-4000-8000-000000000000", job = "train", tasks = { trainer = { "GPU-dead0000-0000-4000-8000-000000000000" } } } },
    }
    snap.sources.nomad_devices = { ok = true, node_id = "node-1", devices = { { Name = "NVIDIA L4", Instances = {
      { ID = H.UUID0, Healthy = true, HealthDescription = "", PciBusID = "00000000:01:00.0" },
      { ID = "GPU-dead0000-0000-4000-8000-000000000000", Healthy = true, HealthDescription = "", PciBusID = "00000000:AF:00.0" },
    } } } }
    return snap
  end

  it("reports a GPU gone from nvidia-smi from Nomad's device list, with its reservation", function()
    local found, _, report = H.run_rules(lost_gpu_snapshot())
    local lost = report.ledger.entries[2]
    assert.same({ -1, true, "00000000:AF:00.0", "reserved-idle" }, { lost.index, lost.missing, lost.busId, lost.state })
    local messages = {}
    for _, f in ipairs(found) do
      if f.gpu == "gpu? GPU-dead0000" then
        messages[#messages + 1] = f.code .. ": " .. f.message
      end
    end
    assert.matches("^gpu%-lost: nvidia%-smi no longer lists the GPU at 00000000:AF:00%.0 %(Nomad still lists it%) — .* — reserved by ", messages[1])
    assert.matches("^nomad%-schedules%-failing%-gpu: ", messages[2])
    assert.equal("?", table_render.cells.gpu(report.ledger, lost))
  end)

  it("leaves what nothing measured of a lost GPU unknown: ? in ls, no field in --json, no sample in /metrics", function()
    local found, _, report = H.run_rules(lost_gpu_snapshot())
    assert.matches("│ ?   │ NVIDIA L4 │ ?    │ ?           │ ?     │ ?   │ reserved-idle │", table_render.ls(report.ledger), 1, true)
    local entry = json.decode(json_render.ledger(report.ledger)).entries[2]
    assert.same({ "00000000:AF:00.0", true }, { entry.busId, entry.missing })
    for _, field in ipairs { "utilizationPct", "memoryUtilizationPct", "memoryUsedMiB", "memoryTotalMiB", "temperatureC",
      "powerW", "encoderSessions", "encoderAverageFps" } do
      assert.is_nil(entry[field], field)
    end
    local text = metrics.node(report)
    assert.matches('gpuledger_gpu_info{node="gpud",gpu="?",uuid="GPU-dead0000-0000-4000-8000-000000000000"', text, 1, true)
    for _, family in ipairs { "utilization_percent", "memory_used_bytes", "memory_total_bytes", "temperature_celsius",
      "power_watts", "encoder_sessions" } do
      assert.matches("gpuledger_gpu_" .. family .. '{node="gpud",gpu="0"', text, 1, true)
      assert.is_nil(text:find("gpuledger_gpu_" .. family .. '{node="gpud",gpu="?"', 1, true), family)
    end
    local page = html.node(report, { interval = 15 })
    local lost_row = page:match('<tr id="gpu%-GPU%-dead0000[^"]*" [^>]*>(.-)</tr>')
    assert.matches('<td class="bar" data-label="util"><span class="none">unknown</span></td>', lost_row, 1, true)
    assert.matches('<td class="bar" data-label="memory"><span class="none">unknown</span></td>', lost_row, 1, true)
    assert.matches('<td class="num" data-label="temp"><span class="none">unknown</span></td>', lost_row, 1, true)
    for _, f in ipairs(found) do -- the rules that read a temperature or a count pass it over
      assert.are_not.equal("rule-error", f.code, f.message)
    end
  end)
end)
