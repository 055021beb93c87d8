-- The examples of rules/examples/ (docs/rules.md), each installed the way
-- its header says and judged on literal ledgers: reserved-idle-long (with
-- stateSince, which only a history gives), memory-nearly-full, the
-- allow-listed unmanaged-tenant, the fleet's reserved-idle share (a rule
-- that sees the fleet), the thresholds override, and the ls columns override. They are embedded with the binary but never loaded as
-- rules.
local H = require "helper"
local ruleset = require "gpuledger.ruleset"
local sandbox = require "gpuledger.sandbox"

local gpu, ledger = H.gpu, H.ledger
local ROOT = os.getenv("GPULEDGER_SOURCE_DIR") or "."

-- The text of rules/examples/<path>.
local function example(path)
  local f = assert(io.open(ROOT .. "/rules/examples/" .. path, "r"))
  local text = f:read("a")
  f:close()
  return text
end

-- The rule set with the example installed as `as` (default: its own name),
-- plus extra site files; asserts it loaded without errors.
local function installed(name, as, extra)
  local files = { [as or name] = example(name) }
  for file, text in pairs(extra or {}) do
    files[file] = text
  end
  local set = H.site_rules(files)
  assert.same({}, set.errors)
  return set
end

-- A GPU Nomad reserved and nothing holds, in that state since `since`.
local function reserved_idle(since)
  return gpu { reservations = { H.reservation() }, stateSince = since }
end

describe("rules/examples", function()
  it("are embedded but not loaded as rules", function()
    local embedded = H.core.embedded_files("rules/examples/")
    assert.same({
      "rules/examples/allow_listed_container.lua", "rules/examples/fleet_reserved_idle.lua",
      "rules/examples/memory_nearly_full.lua", "rules/examples/reserved_idle_long.lua", "rules/examples/scripts/gpuledger/render/columns.lua",
      "rules/examples/thresholds.lua",
    }, embedded)
    local set = H.rule_set()
    assert.same({}, set.errors)
    assert.equal(#H.DEFAULT_CODES, #set.rules)
    for _, rule in ipairs(set.rules) do
      assert.is_nil(rule.code:match("nearly") or rule.code:match("long"), rule.code)
    end
    assert.is_nil(set.thresholds.reserved_idle_long_hours)
  end)

  describe("fleet_reserved_idle.lua", function()
    local fleet = require "gpuledger.fleet"
    local judge_mod = require "gpuledger.judge"
    local set = installed("fleet_reserved_idle.lua")

    -- The fleet of two nodes: a with `idle` reserved-idle GPUs of job video/worker
    -- and one free, b with one GPU held by default/restreamer.
    local function fleet_of(idle)
      local gpus = { gpu { index = 9 } }
      for i = 1, idle do
        gpus[#gpus + 1] = gpu { index = i - 1, reservations = { H.reservation { deviceIds = { H.UUIDS[i - 1] } } } }
      end
      local a = ledger(gpus, { node = "a" })
      local b = ledger({ gpu { index = 0, reservations = { H.reservation { jobId = "restreamer", namespace = "",
        allocId = "b1", deviceIds = { H.UUID0 } } }, tenants = { H.nomad_tenant { allocId = "b1", jobName = "restreamer" } } } },
        { node = "b" })
      return fleet.summarise {
        fleet.node_row({ node = "a", url = "http://a:1" }, a),
        fleet.node_row({ node = "b", url = "http://b:1" }, b),
      }
    end

    local function judge(summary, given, rules)
      rules = rules or set
      local _, _, found = judge_mod.rules(H.core, rules.sources, given, {}, { view = fleet.view(summary) })
      return found
    end

    it("warns about the fleet when more than 10 % of its GPUs are reserved and idle, naming the jobs", function()
      local found = judge(fleet_of(1)) -- 1 of 3: 33 %
      assert.equal(1, #found)
      assert.same({ "WARN", "fleet-reserved-idle", "fleet" }, { found[1].level, found[1].code, found[1].node })
      assert.equal("1 of 3 GPUs (33%) are reserved by Nomad and held by nothing, over 10%: most idle reservations video/worker (1)",
        found[1].message)
      assert.is_nil(found[1].gpu)
    end)

    it("is quiet at or under the share, which the site's thresholds set", function()
      local loose = installed("fleet_reserved_idle.lua", nil, { ["thresholds.lua"] = "return { fleet_reserved_idle_share = 0.5 }" })
      assert.same({}, judge(fleet_of(1), nil, loose))
      local none = fleet.summarise { fleet.node_row({ node = "c", url = "http://c:1" }, ledger { gpu { index = 0 } }) }
      assert.same({}, judge(none))
    end)

    it("does not run on a single node, and its code has a zero series like the others", function()
      assert.same({}, H.with_code(H.run_rules(ledger { reserved_idle() }, nil, set), "fleet-reserved-idle"))
      local codes = {}
      for _, entry in ipairs(ruleset.codes(set, H.policy(nil, set))) do
        codes[entry.code] = entry.level
      end
      assert.equal("WARN", codes["fleet-reserved-idle"])
    end)

    it("a fleet rule that fails is a rule-error about the fleet, and its findings are dropped", function()
      local broken = H.site_rules { ["fleet_broken.lua"] = [[return { code = "fleet-broken", level = "WARN",
        evaluate_fleet = function(fleet, policy, emit) emit { message = "half" } error("no " .. fleet.nope.x) end }]] }
      assert.same({}, broken.errors)
      local found = judge(fleet_of(1), nil, broken)
      assert.equal(1, #found)
      assert.same({ "ERROR", "rule-error", "fleet" }, { found[1].level, found[1].code, found[1].node })
      assert.truthy(found[1].message:find("fleet_broken.lua", 1, true))
    end)
  end)

  describe("reserved_idle_long.lua", function()
    local set = installed("reserved_idle_long.lua")

    it("is BAD once a reserved GPU has been idle for 6 hours, saying for how long", function()
      local found = H.with_code(H.run_rules(ledger { reserved_idle(H.ago(6 * 3600 + 12 * 60)) }, nil, set), "reserved-idle-long")
      assert.equal(1, #found)
      assert.equal("BAD", found[1].level)
      assert.equal("gpu0 GPU-fef8089b", found[1].gpu)
      assert.equal("reserved by worker/w (alloc 4d1e6a9b) and held by nothing for 6h12m (6 h or more)", found[1].message)
    end)

    it("keeps the default reserved-idle WARN next to it", function()
      local found = H.run_rules(ledger { reserved_idle(H.ago(7 * 3600)) }, nil, set)
      assert.equal(1, #H.with_code(found, "reserved-idle"))
      assert.equal("WARN", H.with_code(found, "reserved-idle")[1].level)
    end)

    it("says nothing before 6 hours", function()
      local found = H.run_rules(ledger { reserved_idle(H.ago(6 * 3600 - 60)) }, nil, set)
      assert.same({}, H.with_code(found, "reserved-idle-long"))
    end)

    it("says nothing when the history does not know since when", function()
      local found = H.run_rules(ledger { reserved_idle(nil) }, nil, set)
      assert.same({}, H.with_code(found, "reserved-idle-long"))
    end)

    it("says nothing when the process list could not be read", function()
      local l = ledger({ reserved_idle(H.ago(9 * 3600)) }, { processesRead = false })
      assert.same({}, H.with_code(H.run_rules(l, nil, set), "reserved-idle-long"))
    end)

    it("judges reserved-idle GPUs only", function()
      local held = gpu { reservations = { H.reservation() }, tenants = { H.nomad_tenant() }, stateSince = H.ago(9 * 3600) }
      local free = gpu { index = 1, stateSince = H.ago(9 * 3600) }
      assert.same({}, H.with_code(H.run_rules(ledger { held, free }, nil, set), "reserved-idle-long"))
    end)

    it("takes its hours from reserved_idle_long_hours", function()
      local found = H.run_rules(ledger { reserved_idle(H.ago(3 * 3600)) }, { reserved_idle_long_hours = 2.5 }, set)
      local long = H.with_code(found, "reserved-idle-long")
      assert.equal(1, #long)
      assert.matches("for 3h0m %(2%.5 h or more%)$", long[1].message)
    end)

    it("carries the for of its alert", function()
      assert.equal("10m", H.rule(set, "reserved-idle-long")["for"])
    end)
  end)

  describe("memory_nearly_full.lua", function()
    local set = installed("memory_nearly_full.lua")

    local function at(used, total, thresholds)
      local found = H.run_rules(ledger { gpu { memoryUsedMiB = used, memoryTotalMiB = total } }, thresholds, set)
      return H.with_code(found, "memory-nearly-full")
    end

    it("is WARN at 95% of the memory by default", function()
      local found = at(9500, 10000)
      assert.equal(1, #found)
      assert.equal("WARN", found[1].level)
      assert.equal("9500 of 10000 MiB in use (95%, at or over 95%)", found[1].message)
    end)

    it("says nothing below it", function()
      assert.same({}, at(9499, 10000))
    end)

    it("takes its share from memory_full_ratio", function()
      assert.equal(1, #at(8500, 10000, { memory_full_ratio = 0.8 }))
      assert.same({}, at(7900, 10000, { memory_full_ratio = 0.8 }))
    end)

    it("says nothing of a card that reports no total", function()
      assert.same({}, at(0, 0))
    end)
  end)

  describe("allow_listed_container.lua, installed as unmanaged_tenant.lua", function()
    local set = installed("allow_listed_container.lua", "unmanaged_tenant.lua")
    local allow = { allowed_containers = { "dcgm-exporter" } }
    local function node()
      return ledger { gpu { tenants = {
        H.docker_tenant { container = "dcgm-exporter", usedMemoryMiB = 200 },
        H.docker_tenant { container = "ffmpeg-manual", usedMemoryMiB = 100 },
        H.host_tenant { usedMemoryMiB = 48 },
      } } }
    end

    it("replaces the default (its origin is the site file)", function()
      assert.matches("unmanaged_tenant%.lua$", H.rule(set, "unmanaged-tenant").origin)
    end)

    it("does not report a container on the list; others and host processes still are", function()
      local found = H.with_code(H.run_rules(node(), allow, set), "unmanaged-tenant")
      assert.equal(2, #found)
      assert.matches("^container ffmpeg%-manual", found[1].message)
      assert.matches("^host process %[python3%]", found[2].message)
      for _, f in ipairs(found) do
        assert.equal("BAD", f.level)
      end
    end)

    it("without a list, says exactly what the default rule says", function()
      local mine = H.with_code(H.run_rules(node(), nil, set), "unmanaged-tenant")
      local default = H.with_code(H.run_rules(node()), "unmanaged-tenant")
      assert.same(default, mine)
    end)

    it("does not report a tenant that could not be identified", function()
      local unidentified = ledger { gpu { tenants = {
        H.docker_tenant { container = false, image = false, containerId = "eeeeeeeeeeee", unidentified = true },
        H.host_tenant { unidentified = true },
      } } }
      assert.same({}, H.with_code(H.run_rules(unidentified, allow, set), "unmanaged-tenant"))
    end)

    it("is WARN under --allow-unmanaged", function()
      local found = H.with_code(H.run_rules(node(), H.merge(allow, { allow_unmanaged = true }), set), "unmanaged-tenant")
      assert.equal("WARN", found[1].level)
    end)

    it("under its own name it would define unmanaged-tenant twice: an error", function()
      local twice = H.site_rules { ["allow_listed_container.lua"] = example("allow_listed_container.lua") }
      assert.equal(1, #twice.errors)
      assert.matches("already defined", H.error_text(twice.errors[1]))
    end)
  end)

  describe("thresholds.lua", function()
    local set = installed("thresholds.lua")

    it("overrides the keys it sets and keeps the others", function()
      assert.equal(80, set.thresholds.temp_max)
      assert.equal(8, set.thresholds.encoder_max)
      assert.equal(5, set.thresholds.thermal_margin_min)
      assert.is_true(set.thresholds.idle)
      assert.same({ "dcgm-exporter" }, set.thresholds.allowed_containers)
    end)

    it("changes what the default rules find; a flag still wins", function()
      local hot = ledger { gpu { temperatureC = 82 } }
      assert.equal(1, #H.with_code(H.run_rules(hot, nil, set), "hot"))
      assert.same({}, H.with_code(H.run_rules(hot, { temp_max = 85 }, set), "hot"))
      local busy = ledger { gpu { encoderSessions = 8 } }
      local found = H.with_code(H.run_rules(busy, nil, set), "encoder-saturated")
      assert.matches("at the limit of 8", found[1].message)
    end)
  end)

  describe("scripts/gpuledger/render/columns.lua", function()
    -- Renders ls with the example as gpuledger.render.columns, loaded in the
    -- site scripts' sandbox as the program would load it.
    local function ls_with_example(l)
      local chunk = assert(load(example("scripts/gpuledger/render/columns.lua"), "@columns.lua", "t", sandbox.script_environment()))
      local saved = package.loaded["gpuledger.render.columns"]
      package.loaded["gpuledger.render.columns"] = chunk()
      local ok, out = pcall(require("gpuledger.render.table").ls, l)
      package.loaded["gpuledger.render.columns"] = saved
      assert(ok, out)
      return out
    end

    it("adds a power column after temp and keeps every default column", function()
      local out = ls_with_example(ledger { gpu { powerW = 71.6, temperatureC = 66 } })
      local header = out:match("\n(│ gpu[^\n]*)")
      assert.equal("│ gpu │ model     │ util │ memory      │ temp  │ power │ enc │ state │ health │ reserved by (nomad) │ tenants │", header)
      assert.matches("│ 66 °C │ 72 W  │", out, 1, true)
    end)

    it("leaves the default ls as it was", function()
      local out = require("gpuledger.render.table").ls(ledger { gpu {} })
      assert.is_nil(out:find("power", 1, true))
      assert.matches("│ gpu │ model     │ util │ memory      │ temp  │ enc │ state │ health │ reserved by (nomad) │ tenants │", out, 1, true)
    end)

    it("the default columns module lists the nine ledger columns and health", function()
      local headers = {}
      for i, column in ipairs(require("gpuledger.render.columns").columns) do
        headers[i] = column.header
      end
      assert.same({ "gpu", "model", "util", "memory", "temp", "enc", "state", "health", "reserved by (nomad)", "tenants" }, headers)
    end)

    it("a columns module of the wrong shape is an error naming it", function()
      local saved = package.loaded["gpuledger.render.columns"]
      package.loaded["gpuledger.render.columns"] = { columns = { { header = "x" } } }
      local ok, err = pcall(require("gpuledger.render.table").ls, ledger { gpu {} })
      package.loaded["gpuledger.render.columns"] = saved
      assert.is_false(ok)
      assert.matches("gpuledger.render.columns: column 1 wants a header", err, 1, true)
    end)
  end)

  it("docs/rules.md names every example file", function()
    local f = assert(io.open(ROOT .. "/docs/rules.md", "r"))
    local doc = f:read("a")
    f:close()
    for _, path in ipairs(H.core.embedded_files("rules/examples/")) do
      assert.is_truthy(doc:find(path, 1, true), path)
    end
  end)
end)
