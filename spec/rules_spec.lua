-- Every finding code of the default rule set (rules/*.lua, as embedded in
-- the core), each condition and its boundary (SPEC §3.3–3.4).
local H = require "helper"

local gpu, ledger = H.gpu, H.ledger

-- The findings of `code` when judging a ledger of these GPUs, the choices
-- given (as the command line's flags give them) over the thresholds.
local function judged(code, entries, flags, thresholds, ledger_fields)
  local found = H.run_rules(ledger(entries, ledger_fields), H.merge(thresholds, flags))
  return H.with_code(found, code), found
end

local function one(code, entries, flags, thresholds, ledger_fields)
  local found = judged(code, entries, flags, thresholds, ledger_fields)
  assert.equal(1, #found, code)
  return found[1]
end

local function none(code, entries, flags, thresholds, ledger_fields)
  local found = judged(code, entries, flags, thresholds, ledger_fields)
  assert.same({}, found)
end

local function contains(needle, haystack)
  assert.truthy(haystack:find(needle, 1, true), string.format("%q not in %q", needle, haystack))
end

describe("rules", function()
  describe("hot", function()
    it("thermal slowdown at 70 °C is hot, in slowdown words", function()
      local f = one("hot", { gpu { temperatureC = 70, powerW = 201.4, thermalSlowdown = true } })
      assert.equal("WARN", f.level)
      assert.equal("thermal slowdown active at 70 °C, 201 W — the card is clocking itself down", f.message)
      assert.equal("gpu0 GPU-fef8089b", f.gpu)
    end)

    it("slowdown wins over a wide margin", function()
      contains("thermal slowdown", one("hot", { gpu { temperatureC = 60, thermalSlowdown = true, thermalMarginC = 30 } }).message)
    end)

    it("a margin of 4 at 80 °C is hot, citing 4 °C", function()
      local f = one("hot", { gpu { temperatureC = 80, thermalMarginC = 4, powerW = 70 } })
      assert.equal("80 °C, 4 °C from the card's own slowdown temperature, 70 W", f.message)
    end)

    it("a margin of 5 is hot (at thermal_margin_min)", function()
      one("hot", { gpu { temperatureC = 80, thermalMarginC = 5 } })
    end)

    it("a margin of 6 is not hot", function()
      none("hot", { gpu { temperatureC = 80, thermalMarginC = 6 } })
    end)

    it("thermal_margin_min moves the boundary", function()
      one("hot", { gpu { temperatureC = 70, thermalMarginC = 8 } }, nil, { thermal_margin_min = 8 })
      none("hot", { gpu { temperatureC = 70, thermalMarginC = 9 } }, nil, { thermal_margin_min = 8 })
      none("hot", { gpu { temperatureC = 70, thermalMarginC = 3 } }, nil, { thermal_margin_min = 2 })
    end)

    it("a margin of 20 with slowdown false at 90 °C is not hot (--temp-max ignored)", function()
      none("hot", { gpu { temperatureC = 90, thermalMarginC = 20, thermalSlowdown = false } })
    end)

    it("a margin of 20 alone at 90 °C is not hot", function()
      none("hot", { gpu { temperatureC = 90, thermalMarginC = 20 } })
    end)

    it("slowdown false without a margin at 95 °C is not hot", function()
      none("hot", { gpu { temperatureC = 95, thermalSlowdown = false } })
    end)

    it("neither reported at 90 °C is hot, citing --temp-max", function()
      local f = one("hot", { gpu { temperatureC = 90, powerW = 250 } })
      assert.equal("90 °C (--temp-max 85; the driver reports no thermal margin), 250 W", f.message)
    end)

    it("at --temp-max 85: 85 °C is hot, 84 °C is not", function()
      one("hot", { gpu { temperatureC = 85 } })
      none("hot", { gpu { temperatureC = 84 } })
    end)

    it("--temp-max 70 is cited", function()
      contains("--temp-max 70", one("hot", { gpu { temperatureC = 75 } }, { temp_max = 70 }).message)
    end)

    it("--temp-max 0 never finds the fallback", function()
      none("hot", { gpu { temperatureC = 120 } }, { temp_max = 0 })
    end)

    it("--temp-max 0 leaves the driver's verdicts alone", function()
      one("hot", { gpu { temperatureC = 70, thermalSlowdown = true } }, { temp_max = 0 })
    end)
  end)

  describe("encoder-saturated", function()
    it("a GeForce 4090 at 12 sessions is saturated, citing 12 and GeForce", function()
      local f = one("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 12, encoderAverageFps = 58.7 } })
      assert.equal("WARN", f.level)
      assert.equal("12 encoder sessions, at the limit of 12 (the GeForce driver's cap, NVIDIA's support matrix), 59 fps average", f.message)
    end)

    it("a GeForce at 11 sessions is not", function()
      none("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 11 } })
    end)

    it("--encoder-max 8 on a Quadro RTX 4000 at 8 sessions cites --encoder-max 8", function()
      local f = one("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 8 } }, { encoder_max = 8 })
      contains("--encoder-max 8", f.message)
      contains("at the limit of 8", f.message)
    end)

    it("--encoder-max 8 at 7 sessions is not", function()
      none("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 7 } }, { encoder_max = 8 })
    end)

    it("--encoder-max -1 never finds", function()
      none("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 40 } }, { encoder_max = -1 })
    end)

    it("an unknown card at 50 sessions is not judged", function()
      none("encoder-saturated", { gpu { model = "NVIDIA A100-SXM4-80GB", encoderSessions = 50 } })
      none("encoder-saturated", { gpu { model = "Quadro RTX 4000 Ada", encoderSessions = 50 } })
      none("encoder-saturated", { gpu { model = "", encoderSessions = 50 } })
    end)

    it("an unrestricted card (Quadro RTX 4000 at 40) is not", function()
      none("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 40 } })
      none("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 40 } })
      none("encoder-saturated", { gpu { model = "Tesla T4", encoderSessions = 40 } })
    end)

    it("a site encoder_max threshold applies; the flag wins over it", function()
      one("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 4 } }, nil, { encoder_max = 4 })
      none("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 4 } }, { encoder_max = 0 }, { encoder_max = 4 })
    end)
  end)

  describe("unmanaged-tenant", function()
    it("a docker container is BAD, naming container, image, MiB and pids", function()
      local f = one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant { pids = { 5151, 5152 } } } } })
      assert.equal("BAD", f.level)
      assert.equal("container ffmpeg-manual (jrottenberg/ffmpeg:6.1) holds this GPU outside Nomad — 2048 MiB, pids [5151 5152]", f.message)
    end)

    it("a host process is BAD, naming the processes", function()
      local f = one("unmanaged-tenant", { gpu { tenants = { H.host_tenant { pids = { 7171, 8181 }, processes = { "python3", "gpu_burn" }, usedMemoryMiB = 360 } } } })
      assert.equal("BAD", f.level)
      assert.equal("host process [python3 gpu_burn] holds this GPU outside any container — 360 MiB, pids [7171 8181]", f.message)
    end)

    it("an uninspectable container is named by its id", function()
      local f = one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant { container = false, image = false } } } })
      contains("container bbbbbbbbbbbb (", f.message)
    end)

    it("is WARN with --allow-unmanaged", function()
      assert.equal("WARN", one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant() } } }, { allow_unmanaged = true }).level)
    end)

    it("is WARN with allow_unmanaged in the thresholds", function()
      assert.equal("WARN", one("unmanaged-tenant", { gpu { tenants = { H.host_tenant() } } }, nil, { allow_unmanaged = true }).level)
    end)

    it("its level function answers BAD, or WARN under allow_unmanaged", function()
      local ruleset = require "gpuledger.ruleset"
      local rule = H.rule(H.rule_set(), "unmanaged-tenant")
      assert.equal("BAD", ruleset.level_of(rule, { allow_unmanaged = false }))
      assert.equal("WARN", ruleset.level_of(rule, { allow_unmanaged = true }))
    end)

    it("Nomad tasks are never unmanaged", function()
      none("unmanaged-tenant", { gpu { tenants = { H.nomad_tenant { reserved = false } } } })
    end)
  end)

  describe("idle", function()
    it("a GPU nobody holds or reserved is OK idle, with the free MiB", function()
      local f = one("idle", { gpu { model = "Tesla T4", memoryUsedMiB = 0, memoryTotalMiB = 15360 } })
      assert.equal("OK", f.level)
      assert.equal("Tesla T4 idle: no tenant, no reservation, 15360 MiB free", f.message)
    end)

    it("is not claimed when nvidia-smi's process list could not be read", function()
      none("idle", { gpu {} }, nil, nil, { processesRead = false })
    end)

    it("is not claimed when Nomad failed (a reservation may exist)", function()
      none("idle", { gpu {} }, nil, nil, { sources = { nomad = "failed" } })
    end)

    it("says for how long when the state's start is known", function()
      local f = one("idle", { gpu { memoryTotalMiB = 100, memoryUsedMiB = 1, stateSince = H.ago(45 * 60) } })
      assert.equal("NVIDIA L4 idle: no tenant, no reservation, 99 MiB free, for 45m", f.message)
    end)

    it("--no-idle suppresses it", function()
      none("idle", { gpu {} }, { idle = false })
    end)

    it("a reserved or held GPU is not idle", function()
      none("idle", { gpu { reservations = { H.reservation() } } })
      none("idle", { gpu { tenants = { H.host_tenant() } } })
    end)
  end)

  describe("reserved-idle", function()
    it("is not claimed when nvidia-smi's process list could not be read", function()
      none("reserved-idle", { gpu { reservations = { H.reservation {} } } }, nil, nil, { processesRead = false })
    end)

    it("names the FIRST reservation, alloc cut to 8 characters", function()
      local f = one("reserved-idle", { gpu { reservations = {
        H.reservation { jobId = "worker", task = "w", allocId = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e" },
        H.reservation { jobId = "other", task = "o", allocId = "ffffffff-0000-0000-0000-000000000000" },
      } } })
      assert.equal("WARN", f.level)
      assert.equal("reserved by worker/w (alloc 4d1e6a9b) but no process or container holds it", f.message)
    end)

    it("says for 6h12m", function()
      local f = one("reserved-idle", { gpu { reservations = { H.reservation() }, stateSince = H.ago(6 * 3600 + 12 * 60 + 30) } })
      contains("holds it, for 6h12m", f.message)
    end)

    it("says for 2d2h", function()
      local f = one("reserved-idle", { gpu { reservations = { H.reservation() }, stateSince = H.ago(50 * 3600 + 30 * 60) } })
      contains(", for 2d2h", f.message)
    end)

    it("says nothing of time without stateSince", function()
      local f = one("reserved-idle", { gpu { reservations = { H.reservation() } } })
      assert.is_nil(f.message:find("for ", 1, true))
    end)

    it("a GPU with a tenant is not reserved-idle", function()
      none("reserved-idle", { gpu { reservations = { H.reservation() }, tenants = { H.nomad_tenant() } } })
    end)
  end)

  describe("contended", function()
    it("more than one tenant: names are the container else the kind", function()
      local f = one("contended", { gpu { tenants = {
        H.nomad_tenant { container = "restreamer" },
        H.docker_tenant { container = false },
        H.host_tenant(),
      } } })
      assert.equal("WARN", f.level)
      assert.equal("3 tenants share this GPU: [restreamer docker host]", f.message)
    end)

    it("one tenant is not contended", function()
      none("contended", { gpu { tenants = { H.nomad_tenant() } } })
    end)
  end)

  describe("held", function()
    it("every tenant a reserved Nomad task: OK held with the count and util", function()
      local f = one("held", { gpu { utilizationPct = 87, reservations = { H.reservation() },
        tenants = { H.nomad_tenant(), H.nomad_tenant { container = "b" } } } })
      assert.equal("OK", f.level)
      assert.equal("2 tenant(s), all reserved by Nomad, 87% util", f.message)
    end)

    it("a GPU with any other tenant is not held", function()
      none("held", { gpu { reservations = { H.reservation() }, tenants = { H.nomad_tenant(), H.host_tenant() } } })
    end)
  end)

  describe("unreserved-tenant and source-unavailable (Nomad verdicts)", function()
    local function worker(fields)
      return H.nomad_tenant(H.merge({
        container = "worker-4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e", reserved = false,
        jobName = "worker", taskName = "w", namespace = "video",
      }, fields))
    end

    it("a visible allocation that did not reserve the GPU is BAD unreserved-tenant", function()
      local f = one("unreserved-tenant", { gpu { tenants = { worker { allocVisible = true } } } })
      assert.equal("BAD", f.level)
      assert.equal("Nomad task worker/w (alloc 4d1e6a9b, container worker-4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e) uses this GPU but was "
        .. "not allocated it — check NVIDIA_VISIBLE_DEVICES and the job's device stanza", f.message)
      none("source-unavailable", { gpu { tenants = { worker { allocVisible = true } } } })
    end)

    it("a hidden allocation is exactly one ERROR source-unavailable naming read-job, \"video\" and the alloc prefix", function()
      local found = H.run_rules(ledger { gpu { tenants = { worker { allocVisible = false } } } })
      local f = H.with_code(found, "source-unavailable")
      assert.equal(1, #f)
      f = f[1]
      assert.equal("ERROR", f.level)
      assert.equal("gpu0 GPU-fef8089b", f.gpu)
      contains("read-job", f.message)
      contains('namespace "video"', f.message)
      contains("allocation 4d1e6a9b of task", f.message)
      contains("worker/w", f.message)
      contains("cannot be told", f.message)
      assert.same({}, H.with_code(found, "unreserved-tenant"))
    end)

    it("an empty namespace reads as 'its namespace'", function()
      local f = one("source-unavailable", { gpu { tenants = { worker { allocVisible = false, namespace = false } } } })
      contains("read-job on namespace its namespace", f.message)
    end)

    it("without Nomad's answer (nomadRead false) there is no reservation verdict at all", function()
      local found = H.run_rules(ledger({ gpu { tenants = { worker { allocVisible = false } } } }, { nomadRead = false }))
      assert.same({}, found)
      found = H.run_rules(ledger({ gpu { tenants = { worker { allocVisible = true } } } }, { nomadRead = false }))
      assert.same({}, found)
    end)

    it("a reserved task gets neither", function()
      none("unreserved-tenant", { gpu { reservations = { H.reservation() }, tenants = { worker { reserved = true } } } })
      none("source-unavailable", { gpu { reservations = { H.reservation() }, tenants = { worker { reserved = true, allocVisible = false } } } })
    end)
  end)

  describe("source-unavailable (ledger errors)", function()
    it("one node-level ERROR per ledger error, the error's text, in order, no gpu", function()
      local found = H.run_rules(ledger({ gpu {} }, { errors = { "docker: connection refused", "nomad: HTTP 403" } }))
      local f = H.with_code(found, "source-unavailable")
      assert.equal(2, #f)
      assert.equal("docker: connection refused", f[1].message)
      assert.equal("nomad: HTTP 403", f[2].message)
      for _, x in ipairs(f) do
        assert.equal("ERROR", x.level)
        assert.is_nil(x.gpu)
        assert.equal("gpud", x.node)
      end
    end)

    it("a node whose nvidia-smi failed still reports its error", function()
      local found, worst = H.run_rules(ledger({}, { errors = { "nvidia-smi query-gpu: nvidia-smi: not found" } }))
      assert.equal(1, #found)
      assert.equal("ERROR", worst)
    end)
  end)

  describe("a relaxed policy", function()
    it("(encoder -1, temp 0, allow-unmanaged) gives no BAD, no hot, no encoder", function()
      local found, worst = H.run_rules(ledger { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 20, temperatureC = 99,
        tenants = { H.docker_tenant() } } }, { encoder_max = -1, temp_max = 0, allow_unmanaged = true })
      assert.same({ "WARN unmanaged-tenant gpu0 GPU-fef8089b" }, H.summary(found))
      assert.equal("WARN", worst)
    end)
  end)
end)
