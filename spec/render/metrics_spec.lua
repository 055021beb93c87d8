-- /metrics (docs/contract.md#metrics).
local H = require "helper"
local ruleset = require "gpuledger.ruleset"
local fleet = require "gpuledger.fleet"
local history = require "gpuledger.history"
local metrics = require "gpuledger.render.metrics"

local FAMILIES = {
  "gpuledger_up", "gpuledger_findings", "gpuledger_worst_level", "gpuledger_node_info", "gpuledger_gpu_info",
  "gpuledger_gpu_utilization_percent", "gpuledger_gpu_memory_used_bytes", "gpuledger_gpu_memory_total_bytes",
  "gpuledger_gpu_temperature_celsius", "gpuledger_gpu_power_watts", "gpuledger_gpu_encoder_sessions",
  "gpuledger_gpu_thermal_margin_celsius", "gpuledger_gpu_thermal_slowdown", "gpuledger_gpu_tenants",
  "gpuledger_gpu_reservations", "gpuledger_gpu_state", "gpuledger_gpu_state_since_timestamp_seconds",
  "gpuledger_mig_state", "gpuledger_mig_memory_used_bytes", "gpuledger_mig_memory_total_bytes", "gpuledger_mig_tenants",
  "gpuledger_mig_reservations",
  "gpuledger_gpu_health_level", "gpuledger_gpu_xid_events", "gpuledger_gpu_remapped_rows", "gpuledger_gpu_ecc_errors",
  "gpuledger_gpu_pcie_link", "gpuledger_gpu_power_limit_watts",
  "gpuledger_tenant_memory_bytes", "gpuledger_tenant_reserved", "gpuledger_gpu_state_seconds_total",
  "gpuledger_job_gpu_seconds_total", "gpuledger_mig_job_gpu_seconds_total", "gpuledger_tenant_gpu_seconds_total", "gpuledger_rules_loaded", "gpuledger_rule_errors",
  "gpuledger_gpu_finding", "gpuledger_source_up", "gpuledger_refresh_duration_seconds",
  "gpuledger_last_refresh_timestamp_seconds", "gpuledger_build_info",
}

-- Renders ledger with the embedded rules (or `set`), history h and serve's refresh.
local function render(ledger, h, set, given, refresh)
  local _, _, report = H.run_rules(ledger, given, set)
  return metrics.node(report, h, refresh)
end

local function lines_of(text)
  local lines = {}
  for line in text:gmatch("[^\n]+") do
    lines[#lines + 1] = line
  end
  return lines
end

-- The samples of family `name`: their lines.
local function samples(text, name)
  local out = {}
  for _, line in ipairs(lines_of(text)) do
    if line:sub(1, #name + 1) == name .. "{" then
      out[#out + 1] = line
    end
  end
  return out
end

local function has_line(text, line)
  for _, l in ipairs(lines_of(text)) do
    if l == line then
      return true
    end
  end
  return false
end

local function busy_node()
  return H.ledger {
    H.gpu { index = 0, model = 'Quadro "RTX" 4000', busId = "", memoryUsedMiB = 1, powerW = 4.5, tenants = {
      H.docker_tenant { container = false, containerId = "cccccccccccc", image = "secret/image:1", pids = { 777 }, processes = { "HandBrakeCLI" } },
      H.docker_tenant { container = false, containerId = "bbbbbbbbbbbb", image = "secret/image:1", pids = { 778 }, processes = { "ffmpeg" } },
      H.host_tenant(),
    } },
    H.gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } } },
  }
end

describe("render.metrics", function()
  it("has every family in order, each contiguous, with HELP then TYPE, even without samples", function()
    local text = render(H.ledger {}, nil)
    local seen, order = {}, {}
    local current
    for _, line in ipairs(lines_of(text)) do
      local help = line:match("^# HELP (%S+) ")
      if help then
        assert.is_nil(seen[help], "family twice: " .. help)
        seen[help] = true
        order[#order + 1] = help
        current = help
      elseif line:match("^# TYPE ") then
        assert.equal(current, line:match("^# TYPE (%S+) "))
      else
        assert.equal(current, line:match("^([%w_]+){"), "sample outside its family: " .. line)
      end
    end
    assert.same(FAMILIES, order)
  end)

  it("names the node's driver and CUDA versions and its Nomad node in gpuledger_node_info, empty where unknown", function()
    local ledger = H.ledger({}, { driverVersion = "590.48.01", cudaVersion = "13.1",
      nomadNode = { id = "f7476465-4d6e-c0de-26d0-e383c49be941", name = "gpu-node-07", class = "", pool = "default", datacenter = "dc1" } })
    assert.truthy(render(ledger, nil):find('\ngpuledger_node_info{node="gpud",driver_version="590.48.01",cuda_version="13.1",'
      .. 'nomad_node_id="f7476465-4d6e-c0de-26d0-e383c49be941",nomad_node_name="gpu-node-07",nomad_datacenter="dc1",'
      .. 'nomad_node_pool="default",nomad_node_class=""} 1\n', 1, true))
    assert.truthy(render(H.ledger {}, nil):find('\ngpuledger_node_info{node="gpud",driver_version="",cuda_version="",'
      .. 'nomad_node_id="",nomad_node_name="",nomad_datacenter="",nomad_node_pool="",nomad_node_class=""} 1\n', 1, true))
  end)

  it("writes labels and numbers in the text format", function()
    local text = render(busy_node(), nil)
    assert.truthy(has_line(text, string.format(
      'gpuledger_gpu_info{node="gpud",gpu="0",uuid="%s",model="Quadro \\"RTX\\" 4000",bus=""} 1', H.UUID0)))
    assert.truthy(has_line(text, string.format('gpuledger_gpu_memory_used_bytes{node="gpud",gpu="0",uuid="%s"} 1048576', H.UUID0)))
    assert.truthy(has_line(text, string.format('gpuledger_gpu_power_watts{node="gpud",gpu="0",uuid="%s"} 4.5', H.UUID0)))
    assert.truthy(has_line(text, string.format('gpuledger_gpu_power_watts{node="gpud",gpu="1",uuid="%s"} 30', H.UUID1)))
    assert.equal("text/plain; version=0.0.4; charset=utf-8", metrics.CONTENT_TYPE)
  end)

  it("escapes backslashes, quotes and newlines in label values", function()
    assert.equal('a\\\\b\\"c\\nd', metrics.escape('a\\b"c\nd'))
    local l = H.ledger({}, { node = 'evil"\nnode\\' })
    assert.truthy(render(l, nil):find('gpuledger_up{node="evil\\"\\nnode\\\\"} 1', 1, true))
  end)

  it("replaces control and bidirectional characters in label values", function()
    assert.equal("job\u{FFFD}]0;x\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}", metrics.escape("job\27]0;x\7\0\r\u{202E}"))
  end)

  it("never puts a process name, pid, image or path in a label, nor job or instance", function()
    local text = render(busy_node(), nil)
    for _, secret in ipairs { "HandBrakeCLI", "ffmpeg", "python3", "777", "6060", "secret/image", "/" } do
      for _, line in ipairs(lines_of(text)) do
        if not line:match("^#") then
          local labels = line:match("{(.*)}")
          assert.falsy(labels:find(secret, 1, true), secret .. " in " .. line)
        end
      end
    end
    assert.falsy(text:find('[{,]job="'))
    assert.falsy(text:find('[{,]instance="'))
  end)

  it("keeps two unnamed containers apart by container_id", function()
    local text = render(busy_node(), nil)
    local tenant_lines = samples(text, "gpuledger_tenant_memory_bytes")
    assert.equal(3, #tenant_lines)
    assert.truthy(tenant_lines[1]:find('kind="host",container="",container_id=""', 1, true))
    assert.truthy(tenant_lines[2]:find('container_id="bbbbbbbbbbbb"', 1, true))
    assert.truthy(tenant_lines[3]:find('container_id="cccccccccccc"', 1, true))
  end)

  it("says up 0 when a source failed", function()
    local text = render(H.ledger({}, { errors = { "docker: connection refused" } }), nil)
    assert.truthy(has_line(text, 'gpuledger_up{node="gpud"} 0'))
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="source-unavailable",level="ERROR"} 1'))
    assert.truthy(has_line(text, 'gpuledger_worst_level{node="gpud"} 3'))
  end)

  it("has one series per finding code, zero when absent, with counts and the worst level", function()
    local l = H.ledger {
      H.gpu { index = 0, tenants = { H.docker_tenant(), H.host_tenant() } },
      H.gpu { index = 1 },
    }
    local text = render(l, nil)
    local lines = samples(text, "gpuledger_findings")
    assert.equal(#H.DEFAULT_CODES, #lines)
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="unmanaged-tenant",level="BAD"} 2'))
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="contended",level="WARN"} 1'))
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="idle",level="OK"} 1'))
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="hot",level="WARN"} 0'))
    assert.truthy(has_line(text, 'gpuledger_worst_level{node="gpud"} 2'))
    local allowed = render(l, nil, nil, { allow_unmanaged = true })
    assert.truthy(has_line(allowed, 'gpuledger_findings{node="gpud",code="unmanaged-tenant",level="WARN"} 2'))
  end)

  it("gives a site rule's code its zero series too, and counts the rules", function()
    local set = H.site_rules {
      ["mig.lua"] = [[return { code = "mig-misconfigured", level = "WARN", evaluate = function() end }]],
    }
    local text = render(H.ledger {}, nil, set)
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="mig-misconfigured",level="WARN"} 0'))
    assert.truthy(has_line(text, string.format('gpuledger_rules_loaded{node="gpud"} %d', #set.rules)))
    assert.truthy(has_line(text, 'gpuledger_rule_errors{node="gpud"} 0'))
  end)

  it("gives the build's version and Lua's in gpuledger_build_info", function()
    local _, _, report = H.run_rules(H.ledger {})
    local text = metrics.node(report, nil, nil, { version = "0.1.0+gabc", lua = "5.4" })
    assert.truthy(has_line(text, 'gpuledger_build_info{version="0.1.0+gabc",lua="5.4"} 1'))
  end)

  it("counts rule errors and shows the rule-error findings", function()
    local set = H.site_rules { ["broken.lua"] = "return {" }
    local text = render(H.ledger {}, nil, set)
    assert.truthy(has_line(text, 'gpuledger_rule_errors{node="gpud"} 1'))
    assert.truthy(has_line(text, 'gpuledger_findings{node="gpud",code="rule-error",level="ERROR"} 1'))
  end)

  it("has one state series per GPU, and since only when the history knows it", function()
    local l = busy_node()
    local text = render(l, nil)
    assert.equal(2, #samples(text, "gpuledger_gpu_state"))
    assert.truthy(has_line(text, string.format('gpuledger_gpu_state{node="gpud",gpu="1",uuid="%s",state="reserved-idle"} 1', H.UUID1)))
    assert.equal(0, #samples(text, "gpuledger_gpu_state_since_timestamp_seconds"))
    l.entries[2].stateSince = H.ago(5400)
    text = render(l, nil)
    local since = require("gpuledger.clock").parse_time(H.AT) - 5400
    assert.truthy(has_line(text, string.format(
      'gpuledger_gpu_state_since_timestamp_seconds{node="gpud",gpu="1",uuid="%s",state="reserved-idle"} %d', H.UUID1, since)))
  end)

  it("has thermal series only for what the driver reported", function()
    local l = H.ledger {
      H.gpu { index = 0, thermalMarginC = 0, thermalSlowdown = false },
      H.gpu { index = 1 },
    }
    local text = render(l, nil)
    assert.same({ string.format('gpuledger_gpu_thermal_margin_celsius{node="gpud",gpu="0",uuid="%s"} 0', H.UUID0) },
      samples(text, "gpuledger_gpu_thermal_margin_celsius"))
    assert.same({ string.format('gpuledger_gpu_thermal_slowdown{node="gpud",gpu="0",uuid="%s"} 0', H.UUID0) },
      samples(text, "gpuledger_gpu_thermal_slowdown"))
  end)

  it("has no counter samples without a history", function()
    local text = render(busy_node(), nil)
    assert.falsy(text:find("_seconds_total{", 1, true))
    assert.truthy(text:find("# TYPE gpuledger_gpu_state_seconds_total counter", 1, true))
    assert.truthy(text:find("# TYPE gpuledger_job_gpu_seconds_total counter", 1, true))
  end)

  it("has four state counters per remembered GPU and two per job", function()
    local h = history.new()
    local function at(t, reservations, tenants)
      local clock = require "gpuledger.clock"
      return H.ledger({ H.gpu { index = 0, reservations = reservations, tenants = tenants } },
        { at = clock.format_time(clock.parse_time(H.AT) + t) })
    end
    local held = { { H.reservation() }, { H.nomad_tenant() } }
    history.observe(h, at(0, table.unpack(held)), 45)
    history.observe(h, at(15, table.unpack(held)), 45)
    history.observe(h, at(30, table.unpack(held)), 45)
    history.observe(h, at(45.5, { H.reservation() }, {}), 45)
    local text = render(at(45.5, { H.reservation() }, {}), h)
    assert.same({
      string.format('gpuledger_gpu_state_seconds_total{node="gpud",gpu="0",uuid="%s",state="free"} 0', H.UUID0),
      string.format('gpuledger_gpu_state_seconds_total{node="gpud",gpu="0",uuid="%s",state="held"} 45.5', H.UUID0),
      string.format('gpuledger_gpu_state_seconds_total{node="gpud",gpu="0",uuid="%s",state="reserved-idle"} 0', H.UUID0),
      string.format('gpuledger_gpu_state_seconds_total{node="gpud",gpu="0",uuid="%s",state="unaccounted"} 0', H.UUID0),
    }, samples(text, "gpuledger_gpu_state_seconds_total"))
    assert.same({
      'gpuledger_job_gpu_seconds_total{node="gpud",namespace="video",nomad_job="worker",use="held"} 45.5',
      'gpuledger_job_gpu_seconds_total{node="gpud",namespace="video",nomad_job="worker",use="idle"} 0',
    }, samples(text, "gpuledger_job_gpu_seconds_total"))
  end)

  it("has two counters per job and MIG slice, in GPU-seconds (the slice's share of its GPU)", function()
    local h = history.new()
    local function at(t)
      local clock = require "gpuledger.clock"
      return H.ledger({ H.gpu { index = 0, model = "NVIDIA H100 80GB HBM3", migDevices = {
        { uuid = "MIG-a", index = 0, profile = "3g.40gb", state = "held", memoryUsedMiB = 1024, memoryTotalMiB = 40192,
          reservations = { H.reservation() }, tenants = { H.nomad_tenant() } },
      } } }, { at = clock.format_time(clock.parse_time(H.AT) + t) })
    end
    history.observe(h, at(0), 45)
    history.observe(h, at(14), 45)
    assert.same({
      string.format('gpuledger_mig_job_gpu_seconds_total{node="gpud",gpu="0",uuid="%s",mig_uuid="MIG-a",'
        .. 'mig_profile="3g.40gb",namespace="video",nomad_job="worker",use="held"} 6', H.UUID0),
      string.format('gpuledger_mig_job_gpu_seconds_total{node="gpud",gpu="0",uuid="%s",mig_uuid="MIG-a",'
        .. 'mig_profile="3g.40gb",namespace="video",nomad_job="worker",use="idle"} 0', H.UUID0),
    }, samples(render(at(14), h), "gpuledger_mig_job_gpu_seconds_total"))
  end)

  it("has one counter per tenant used without a reservation, by its kind, job or container and name", function()
    local h = history.new()
    local function at(t)
      local clock = require "gpuledger.clock"
      return H.ledger({ H.gpu { index = 0, tenants = {
        H.nomad_tenant { jobName = "encode", taskName = "enc", allocId = "9eab414d", reserved = false },
        H.docker_tenant(), H.host_tenant { owner = "user", uid = 1000, user = "alice" }, H.nomad_tenant(),
      } } }, { at = clock.format_time(clock.parse_time(H.AT) + t) })
    end
    history.observe(h, at(0), 45)
    history.observe(h, at(20), 45)
    assert.same({
      'gpuledger_tenant_gpu_seconds_total{node="gpud",kind="docker",namespace="",nomad_job="",task="",'
        .. 'container="ffmpeg-manual",tenant="ffmpeg-manual",use="unmanaged"} 20',
      'gpuledger_tenant_gpu_seconds_total{node="gpud",kind="host",namespace="",nomad_job="",task="",'
        .. 'container="",tenant="user alice (uid 1000)",use="unmanaged"} 20',
      'gpuledger_tenant_gpu_seconds_total{node="gpud",kind="nomad",namespace="video",nomad_job="encode",task="enc",'
        .. 'container="",tenant="encode/enc",use="unreserved"} 20',
    }, samples(render(at(20), h), "gpuledger_tenant_gpu_seconds_total"))
  end)

  it("names each finding's card: one series per GPU, code and level, the count of such findings", function()
    local l = H.ledger {
      H.gpu { index = 0, tenants = { H.host_tenant { owner = "user", uid = 1000, user = "alice", pids = { 1 } },
        H.host_tenant { owner = "process", uid = 0, user = "root", pids = { 2 } } } },
      H.gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } } },
    }
    local text = render(l, nil)
    assert.same({
      string.format('gpuledger_gpu_finding{node="gpud",gpu="0",uuid="%s",code="contended",level="WARN"} 1', H.UUID0),
      string.format('gpuledger_gpu_finding{node="gpud",gpu="0",uuid="%s",code="unmanaged-tenant",level="BAD"} 2', H.UUID0),
      string.format('gpuledger_gpu_finding{node="gpud",gpu="1",uuid="%s",code="reserved-idle",level="WARN"} 1', H.UUID1),
    }, samples(text, "gpuledger_gpu_finding"))
  end)

  it("two host tenants of a GPU (a session, a bare process) are one tenant series, their memory summed", function()
    local l = H.ledger { H.gpu { index = 0, tenants = {
      H.host_tenant { owner = "user", uid = 1000, user = "alice", usedMemoryMiB = 1 },
      H.host_tenant { owner = "process", uid = 0, user = "root", usedMemoryMiB = 2 } } } }
    local text = render(l, nil)
    assert.same({
      string.format('gpuledger_tenant_memory_bytes{node="gpud",gpu="0",uuid="%s",kind="host",container="",container_id="",nomad_job="",task="",alloc="",namespace=""} 3145728', H.UUID0),
    }, samples(text, "gpuledger_tenant_memory_bytes"))
    assert.equal(1, #samples(text, "gpuledger_tenant_reserved"))
  end)

  it("tenants whose labels print the same are one series: no two samples of a family share their labels", function()
    local l = H.ledger { H.gpu { index = 0, tenants = {
      H.docker_tenant { container = "render\1", containerId = false, usedMemoryMiB = 1 },
      H.docker_tenant { container = "render\2", containerId = false, usedMemoryMiB = 2 } } } }
    local text = render(l, nil)
    assert.same({
      string.format('gpuledger_tenant_memory_bytes{node="gpud",gpu="0",uuid="%s",kind="docker",container="render\u{FFFD}",container_id="",nomad_job="",task="",alloc="",namespace=""} 3145728', H.UUID0),
    }, samples(text, "gpuledger_tenant_memory_bytes"))
    assert.equal(1, #samples(text, "gpuledger_tenant_reserved"))
  end)

  it("writes the same labels at the next render, and none of a tenant that has left", function()
    local function node(name)
      return H.ledger { H.gpu { index = 0, tenants = { H.docker_tenant { container = name, usedMemoryMiB = 1 } } } }
    end
    local first = render(node('zq "hi"\\'), nil)
    assert.equal(first, render(node('zq "hi"\\'), nil))
    local other = render(node("other"), nil)
    assert.truthy(other:find('container="other"', 1, true))
    assert.falsy(other:find("zq", 1, true))
    assert.truthy(first:find('container="zq \\"hi\\"\\\\"', 1, true))
  end)

  it("says which sources were read (1) or failed (0); none for a source not asked", function()
    local l = H.ledger({}, { sources = { nvidia = "read", proc = "read", docker = "failed", podman = "off", nomad = "read" } })
    assert.same({
      'gpuledger_source_up{node="gpud",source="nvidia"} 1', 'gpuledger_source_up{node="gpud",source="proc"} 1',
      'gpuledger_source_up{node="gpud",source="docker"} 0', 'gpuledger_source_up{node="gpud",source="nomad"} 1',
    }, samples(render(l, nil), "gpuledger_source_up"))
  end)

  it("times serve's refresh, and has no such samples without one", function()
    local text = render(H.ledger {}, nil, nil, nil, { at = 1764489600.25, seconds = 0.125 })
    assert.same({ 'gpuledger_refresh_duration_seconds{node="gpud"} 0.125' }, samples(text, "gpuledger_refresh_duration_seconds"))
    assert.same({ 'gpuledger_last_refresh_timestamp_seconds{node="gpud"} 1764489600.25' },
      samples(text, "gpuledger_last_refresh_timestamp_seconds"))
    assert.same({}, samples(render(H.ledger {}, nil), "gpuledger_refresh_duration_seconds"))
  end)

  it("writes each GPU's health: its level, this boot's Xids, and only the values its driver reported", function()
    local failing = H.gpu { index = 0, reservations = { H.reservation() },
      health = { remappedRowsCorrectable = 0, remappedRowsUncorrectable = 2, remappedRowsPending = true, remappedRowsFailure = false,
        eccUncorrectedVolatile = 0, eccUncorrectedAggregate = 2, pcieGenCurrent = 4, pcieGenMax = 4, pcieWidthCurrent = 8,
        pcieWidthMax = 16, powerLimitEnforcedW = 72.0, powerLimitDefaultW = 72.0 },
      xids = { { xid = 63, count = 2, class = "memory", meaning = "m", action = "a", message = "x", processes = {} } } }
    local unread = H.gpu { index = 1 }
    local text = render(H.ledger { failing, unread })
    local labels = string.format('node="gpud",gpu="0",uuid="%s"', H.UUID0)
    assert.same({ string.format("gpuledger_gpu_health_level{%s} 2", labels) }, samples(text, "gpuledger_gpu_health_level"))
    assert.same({ string.format('gpuledger_gpu_xid_events{%s,xid="63"} 2', labels) }, samples(text, "gpuledger_gpu_xid_events"))
    assert.same({
      string.format('gpuledger_gpu_remapped_rows{%s,kind="correctable"} 0', labels),
      string.format('gpuledger_gpu_remapped_rows{%s,kind="uncorrectable"} 2', labels),
      string.format('gpuledger_gpu_remapped_rows{%s,kind="pending"} 1', labels),
      string.format('gpuledger_gpu_remapped_rows{%s,kind="failure"} 0', labels),
    }, samples(text, "gpuledger_gpu_remapped_rows"))
    assert.same({
      string.format('gpuledger_gpu_ecc_errors{%s,kind="uncorrected",scope="volatile"} 0', labels),
      string.format('gpuledger_gpu_ecc_errors{%s,kind="uncorrected",scope="aggregate"} 2', labels),
    }, samples(text, "gpuledger_gpu_ecc_errors"))
    assert.same({
      string.format('gpuledger_gpu_pcie_link{%s,what="gen_current"} 4', labels),
      string.format('gpuledger_gpu_pcie_link{%s,what="gen_max"} 4', labels),
      string.format('gpuledger_gpu_pcie_link{%s,what="width_current"} 8', labels),
      string.format('gpuledger_gpu_pcie_link{%s,what="width_max"} 16', labels),
    }, samples(text, "gpuledger_gpu_pcie_link"))
    assert.same({
      string.format('gpuledger_gpu_power_limit_watts{%s,which="enforced"} 72', labels),
      string.format('gpuledger_gpu_power_limit_watts{%s,which="default"} 72', labels),
    }, samples(text, "gpuledger_gpu_power_limit_watts"))
  end)

  it("labels a GPU nvidia-smi no longer lists gpu=\"?\", each by its uuid", function()
    local function lost(uuid)
      return H.gpu { index = -1, missing = true, uuid = uuid, nomadDevice = { healthy = true, healthDescription = "" } }
    end
    local text = render(H.ledger { lost("GPU-dead"), lost("GPU-gone") })
    assert.same({ 'gpuledger_gpu_health_level{node="gpud",gpu="?",uuid="GPU-dead"} 2', 'gpuledger_gpu_health_level{node="gpud",gpu="?",uuid="GPU-gone"} 2' },
      samples(text, "gpuledger_gpu_health_level"))
    assert.same({
      'gpuledger_gpu_finding{node="gpud",gpu="?",uuid="GPU-dead",code="gpu-lost",level="BAD"} 1',
      'gpuledger_gpu_finding{node="gpud",gpu="?",uuid="GPU-dead",code="nomad-schedules-failing-gpu",level="BAD"} 1',
      'gpuledger_gpu_finding{node="gpud",gpu="?",uuid="GPU-gone",code="gpu-lost",level="BAD"} 1',
      'gpuledger_gpu_finding{node="gpud",gpu="?",uuid="GPU-gone",code="nomad-schedules-failing-gpu",level="BAD"} 1',
    }, samples(text, "gpuledger_gpu_finding"))
  end)

  it("says whether the health sources were read", function()
    local l = H.ledger({}, { sources = { nvidia = "read", health = "failed", kernel_log = "read", nomad_devices = "off" } })
    assert.same({
      'gpuledger_source_up{node="gpud",source="nvidia"} 1', 'gpuledger_source_up{node="gpud",source="health"} 0',
      'gpuledger_source_up{node="gpud",source="kernel_log"} 1',
    }, samples(render(l, nil), "gpuledger_source_up"))
  end)

  it("writes numbers the way Go does", function()
    assert.equal("30", metrics.number(30.0))
    assert.equal("15.5", metrics.number(15.5))
    assert.equal("98.5", metrics.number(98.5))
    assert.equal("0.1", metrics.number(0.1))
    assert.equal("7", metrics.number(7))
    assert.equal("1", metrics.number(true))
  end)
end)

describe("render.metrics: fleet serve", function()
  it("writes fleet serve's /metrics with a zero series for every state and code", function()
    local summary, found = H.fleet_judged()
    local set = H.rule_set("/nonexistent")
    local text = metrics.fleet(summary, fleet.group_findings(found), ruleset.codes(set, {}))
    assert.truthy(text:find("\ngpuledger_fleet_up 1\n", 1, true))
    assert.truthy(text:find('gpuledger_fleet_nodes{state="read"} 2', 1, true))
    assert.truthy(text:find('gpuledger_fleet_nodes{state="unreachable"} 1', 1, true))
    assert.truthy(text:find('gpuledger_fleet_gpus{state="free"} 1', 1, true))
    assert.truthy(text:find('gpuledger_fleet_job_gpus{namespace="video",nomad_job="worker",use="held"} 0', 1, true))
    assert.truthy(text:find('gpuledger_fleet_findings{code="hot",level="WARN"} 0', 1, true))
    assert.truthy(text:find('gpuledger_fleet_findings{code="source-unavailable",level="ERROR"} 1', 1, true))
    assert.falsy(text:find('node="', 1, true))
    local down = metrics.fleet(fleet.summarise { fleet.unreachable_row({ node = "a", url = "http://a:1" }, "x") }, {}, {})
    assert.truthy(down:find("\ngpuledger_fleet_up 0\n", 1, true))
  end)
end)

describe("render.metrics of a GPU in MIG mode", function()
  local json = require "gpuledger.json"
  local S0, S1 = "MIG-00000000-0000-0000-0000-000000000000", "MIG-00000001-0000-0000-0000-000000000001"
  local function mig_ledger()
    local trainer = H.nomad_tenant { jobName = "train", taskName = "trainer", container = "trainer-1", usedMemoryMiB = 1024 }
    local ledger = H.ledger { H.gpu { state = "held", migDevices = {
      { uuid = S0, index = 0, profile = "3g.40gb", memoryUsedMiB = 1024, memoryTotalMiB = 40448, state = "held",
        reservations = json.array { H.reservation { deviceIds = { S0 } } }, tenants = json.array { trainer } },
      { uuid = S1, index = 1, profile = "2g.20gb", memoryUsedMiB = 17, memoryTotalMiB = 20096, state = "reserved-idle",
        reservations = json.array { H.reservation { deviceIds = { S1 } } }, tenants = json.array() },
    } } }
    ledger.entries[1].utilizationPct = nil
    return ledger
  end

  it("has per slice its state, memory, tenants and reservations, labelled with mig_uuid and mig_profile", function()
    local text = render(mig_ledger(), nil)
    local labels = string.format('node="gpud",gpu="0",uuid="%s",mig_uuid="%s",mig_profile="3g.40gb"', H.UUID0, S0)
    assert.truthy(has_line(text, string.format('gpuledger_mig_state{%s,state="held"} 1', labels)))
    assert.truthy(has_line(text, string.format('gpuledger_mig_memory_used_bytes{%s} %d', labels, 1024 * 1024 * 1024)))
    assert.truthy(has_line(text, string.format('gpuledger_mig_tenants{%s} 1', labels)))
    assert.truthy(has_line(text, string.format(
      'gpuledger_mig_state{node="gpud",gpu="0",uuid="%s",mig_uuid="%s",mig_profile="2g.20gb",state="reserved-idle"} 1', H.UUID0, S1)))
    assert.equal(0, #samples(text, "gpuledger_gpu_utilization_percent")) -- unknown under MIG: no sample, not 0
  end)

  it("labels a slice's tenant and the findings on a slice with its mig_uuid and mig_profile", function()
    local text = render(mig_ledger(), nil)
    local labels = string.format('node="gpud",gpu="0",uuid="%s",mig_uuid="%s",mig_profile="3g.40gb"', H.UUID0, S0)
    assert.matches('gpuledger_tenant_reserved{' .. labels:gsub("%p", "%%%0") .. ',kind="nomad",', text)
    assert.truthy(has_line(text, string.format(
      'gpuledger_gpu_finding{node="gpud",gpu="0",uuid="%s",mig_uuid="%s",mig_profile="2g.20gb",code="reserved-idle",level="WARN"} 1',
      H.UUID0, S1)))
  end)
end)
