-- The findings engine (docs/contract.md#findings): order, worst, exit status,
-- counts, policy, and what happens when a rule misbehaves.
local H = require "helper"
local findings = require "gpuledger.findings"
local json = require "gpuledger.json"

local gpu, ledger = H.gpu, H.ledger

-- A ledger that gives every default finding code at once.
local function everything()
  return ledger({
    -- listed out of index order: the engine orders GPUs by their position
    gpu { index = 0, model = "NVIDIA GeForce RTX 4090", encoderSessions = 12, temperatureC = 70, thermalSlowdown = true,
      tenants = {
        H.nomad_tenant { container = "hidden", reserved = false, allocVisible = false, usedMemoryMiB = 4096 },
        H.nomad_tenant { container = "escaped", reserved = false, allocVisible = true, usedMemoryMiB = 2048 },
        H.docker_tenant { container = "manual", usedMemoryMiB = 1024 },
        H.host_tenant { usedMemoryMiB = 48 },
      } },
    gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } } },
    gpu { index = 2 },
    gpu { index = 3, reservations = { H.reservation { deviceIds = { H.UUID3 } } },
      tenants = { H.nomad_tenant() } },
  }, { errors = { "docker: connection refused" } })
end

describe("gpuledger.findings", function()
  describe("order", function()
    it("one ledger with every code: worst first, node before GPU, GPUs by index, tenants in order, OK held last", function()
      local found, worst = H.run_rules(everything())
      assert.same({
        "ERROR source-unavailable node",
        "ERROR source-unavailable gpu0 GPU-fef8089b",
        "BAD unreserved-tenant gpu0 GPU-fef8089b",
        "BAD unmanaged-tenant gpu0 GPU-fef8089b",
        "BAD unmanaged-tenant gpu0 GPU-fef8089b",
        "WARN contended gpu0 GPU-fef8089b",
        "WARN encoder-saturated gpu0 GPU-fef8089b",
        "WARN hot gpu0 GPU-fef8089b",
        "WARN reserved-idle gpu1 GPU-ac81e44d",
        "OK idle gpu2 GPU-c41b9e27",
        "OK held gpu3 GPU-61d0e8b3",
      }, H.summary(found))
      assert.equal("ERROR", worst)
      assert.matches("^container manual", found[4].message)
      assert.matches("^host process", found[5].message)
    end)

    it("tenant findings follow tenant order across rules", function()
      local found = H.run_rules(ledger { gpu { tenants = {
        H.host_tenant { usedMemoryMiB = 900 },
        H.nomad_tenant { container = "escaped", reserved = false, allocVisible = true, usedMemoryMiB = 500 },
        H.docker_tenant { usedMemoryMiB = 100 },
      } } })
      local bad = {}
      for _, f in ipairs(found) do
        if f.level == "BAD" then
          bad[#bad + 1] = f.message:match("^(%S+ %S+)")
        end
      end
      assert.same({ "host process", "Nomad task", "container ffmpeg-manual" }, bad)
    end)

    it("is the same whatever the order of the rules in the set", function()
      local set = H.rule_set()
      local reversed = { rules = {}, errors = set.errors, thresholds = set.thresholds }
      for i = #set.rules, 1, -1 do
        reversed.rules[#reversed.rules + 1] = set.rules[i]
      end
      assert.same(H.summary(H.run_rules(everything())), H.summary(H.run_rules(everything(), nil, reversed)))
    end)

    it("every finding carries level, code, node and message; GPU findings their label", function()
      for _, f in ipairs((H.run_rules(everything()))) do
        assert.is_string(f.level)
        assert.is_string(f.code)
        assert.equal("gpud", f.node)
        assert.is_string(f.message)
        assert.is_nil(f.place_rank or f.place_gpu or f.place_order or f.place_tenant or f.health_gpu)
      end
    end)

    it("an empty ledger has no findings and is OK", function()
      local found, worst = H.run_rules(ledger {})
      assert.same({}, found)
      assert.equal("OK", worst)
    end)
  end)

  describe("worst", function()
    it("of no findings is OK", function()
      assert.equal("OK", findings.worst({}))
    end)

    it("is the highest level present", function()
      assert.equal("WARN", findings.worst({ { level = "OK" }, { level = "WARN" } }))
      assert.equal("BAD", findings.worst({ { level = "BAD" }, { level = "WARN" } }))
      assert.equal("ERROR", findings.worst({ { level = "OK" }, { level = "ERROR" }, { level = "BAD" } }))
    end)
  end)

  describe("exit_status", function()
    local TABLE = {
      [""] = { OK = 0, WARN = 0, BAD = 0, ERROR = 0 },
      warn = { OK = 0, WARN = 1, BAD = 2, ERROR = 3 },
      bad = { OK = 0, WARN = 0, BAD = 2, ERROR = 3 },
      error = { OK = 0, WARN = 0, BAD = 0, ERROR = 3 },
    }
    for _, exit_on in ipairs { "", "warn", "bad", "error" } do
      for _, worst in ipairs { "OK", "WARN", "BAD", "ERROR" } do
        it(string.format("--exit-on %q with worst %s exits %d", exit_on, worst, TABLE[exit_on][worst]), function()
          assert.equal(TABLE[exit_on][worst], findings.exit_status(worst, exit_on))
        end)
      end
    end

    it("no --exit-on (nil) is \"\"", function()
      assert.equal(0, findings.exit_status("ERROR", nil))
    end)
  end)

  describe("counts", function()
    it("counts per level", function()
      assert.same({ OK = 2, WARN = 4, BAD = 3, ERROR = 2 }, findings.counts((H.run_rules(everything()))))
      assert.same({ OK = 0, WARN = 0, BAD = 0, ERROR = 0 }, findings.counts({}))
    end)
  end)

  describe("policy (judge.policy)", function()
    local judge = require "gpuledger.judge"
    local thresholds = { encoder_max = 0, temp_max = 85, thermal_margin_min = 5, allow_unmanaged = false, idle = true, custom = 1 }

    it("is the thresholds when nothing is given", function()
      assert.same(thresholds, judge.policy({ thresholds = thresholds }, {}))
    end)

    it("what is given wins; what is not leaves a site's thresholds alone", function()
      local site = H.merge(thresholds, { temp_max = 70 })
      local p = judge.policy({ thresholds = site }, { encoder_max = 8 })
      assert.equal(8, p.encoder_max)
      assert.equal(70, p.temp_max)
    end)

    it("does not change the thresholds it starts from", function()
      local t = H.merge(thresholds)
      judge.policy({ thresholds = t }, { encoder_max = 8, idle = false })
      assert.same(thresholds, t)
    end)
  end)

  describe("a rule that misbehaves", function()
    -- Judges one gpu0 ledger with the default rules plus site files.
    local function with_site(files, entries)
      local set = H.site_rules(files)
      return H.run_rules(ledger(entries or { gpu { tenants = { H.docker_tenant() } } }), nil, set), set
    end

    local function rule_errors(found)
      return H.with_code(found, "rule-error")
    end

    it("that raises: exactly one rule-error ERROR naming the file and line; the other rules still run", function()
      local found = with_site { ["boom.lua"] = [[
return {
  code = "boom", level = "WARN",
  evaluate = function(ledger, policy, emit)
    local x = nil
    return x.field
  end,
}
]] }
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.equal("ERROR", errs[1].level)
      assert.is_nil(errs[1].gpu)
      assert.matches("boom%.lua:5:", errs[1].message)
      assert.equal("rule-error", found[1].code)
      assert.equal(1, #H.with_code(found, "unmanaged-tenant"))
      assert.same({}, H.with_code(found, "boom"))
    end)

    it("that never returns is stopped: rule-error mentioning the budget", function()
      local found = with_site { ["spin.lua"] = [[
return { code = "spin", level = "OK", evaluate = function() while true do end end }
]] }
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.matches("spin%.lua:1:", errs[1].message)
      assert.matches("budget", errs[1].message)
      assert.equal(1, #H.with_code(found, "unmanaged-tenant"))
    end)

    it("is a site's: the budgets bound the site's rules, not the embedded ones (the program's own)", function()
      local set = H.site_rules { ["count.lua"] = [[
return { code = "count", level = "OK", evaluate = function(ledger, policy, emit)
  local n = 0
  for i = 1, 100000 do n = n + i end
  emit { message = tostring(n) }
end }
]] }
      local everything_found = H.run_rules(everything())
      local found = H.run_rules(everything(), { rule_instructions = 1 }, set)
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.matches("count%.lua:3: stopped after running past its budget of 1 instructions", errs[1].message)
      table.remove(found, 1)
      assert.same(H.summary(everything_found), H.summary(found))
      -- the heap's budget is what the call grows it by, net of what the
      -- collector frees meanwhile, so whether 1 byte stops this rule depends
      -- on where the collector is; the embedded rules' findings do not
      local embedded = {}
      for _, finding in ipairs((H.run_rules(everything(), { rule_memory_bytes = 1 }, set))) do
        if finding.code ~= "count" and not (finding.code == "rule-error" and finding.message:find("rule count", 1, true)) then
          embedded[#embedded + 1] = finding
        end
      end
      assert.same(H.summary(everything_found), H.summary(embedded))
    end)

    it("that grows the heap past its budget is stopped, naming the line", function()
      local set = H.site_rules { ["hoard.lua"] = [[
return { code = "hoard", level = "OK", evaluate = function()
  local keep = {}
  for i = 1, 1e9 do keep[i] = string.rep("x", 64) .. i end
end }
]] }
      -- a budget of 4 MiB: reached well within the site file's deadline on a loaded machine
      local found = H.run_rules(ledger { gpu { tenants = { H.docker_tenant() } } }, { rule_memory_bytes = 4 * 1024 * 1024 }, set)
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.matches("hoard%.lua:3:", errs[1].message)
      assert.matches("heap past its budget", errs[1].message)
    end)

    it("that asks for a huge block at once is stopped with the budget named", function()
      local found = with_site { ["huge.lua"] = [[
return { code = "huge", level = "OK", evaluate = function() return string.rep("x", 1 << 30) end }
]] }
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.matches("more memory than its budget", errs[1].message)
    end)

    it("that catches the budget error with pcall still stops", function()
      local found = with_site { ["sly.lua"] = [[
return { code = "sly", level = "OK", evaluate = function(ledger, policy, emit)
  pcall(function() while true do end end)
  emit { message = "escaped the budget" }
end }
]] }
      assert.equal(1, #rule_errors(found))
      assert.same({}, H.with_code(found, "sly"))
    end)

    it("that emits a wrong shape: rule-error", function()
      for _, call in ipairs {
        'emit("just text")',
        'emit { text = "no message" }',
        'emit { message = 42 }',
        'emit { message = "x", gpu = {} }',
        'emit { message = "x", gpu = 0 }',
      } do
        local found = with_site { ["shape.lua"] = 'return { code = "shape", level = "OK", evaluate = function(ledger, policy, emit) '
          .. call .. ' end }' }
        local errs = rule_errors(found)
        assert.equal(1, #errs, call)
        assert.matches("emit", errs[1].message, 1, true)
        assert.same({}, H.with_code(found, "shape"), call)
      end
    end)

    it("that writes to the ledger: read-only rule-error, and the next rule sees the original", function()
      local found = with_site({
        ["a_writer.lua"] = [[
return { code = "writer", level = "OK", evaluate = function(ledger)
  ledger.entries[1].state = "free"
end }
]],
        ["b_inserter.lua"] = [[
return { code = "inserter", level = "OK", evaluate = function(ledger)
  table.insert(ledger.entries[1].tenants, { kind = "host" })
end }
]],
        ["c_reader.lua"] = [[
return { code = "reader", level = "OK", evaluate = function(ledger, policy, emit)
  emit { message = ledger.entries[1].state .. " " .. #ledger.entries[1].tenants }
end }
]],
      })
      local errs = rule_errors(found)
      assert.equal(2, #errs)
      assert.matches("read%-only", errs[1].message)
      assert.matches("read%-only", errs[2].message)
      local reader = H.with_code(found, "reader")
      assert.equal(1, #reader)
      assert.equal("unaccounted 1", reader[1].message)
    end)

    it("that writes to the policy: read-only rule-error", function()
      local found = with_site { ["p.lua"] = [[
return { code = "p", level = "OK", evaluate = function(ledger, policy) policy.temp_max = 0 end }
]] }
      assert.matches("read%-only", rule_errors(found)[1].message)
    end)

    it("that changes the ledger's metatable: rule-error", function()
      local found = with_site { ["mt.lua"] = [[
return { code = "mt", level = "OK", evaluate = function(ledger) setmetatable(ledger, nil) end }
]] }
      assert.equal(1, #rule_errors(found))
    end)

    it("that assigns a global: rule-error", function()
      local found = with_site { ["glob.lua"] = [[
return { code = "glob", level = "OK", evaluate = function(ledger) counter = 1 end }
]] }
      local errs = rule_errors(found)
      assert.equal(1, #errs)
      assert.matches("glob%.lua:1:", errs[1].message)
      assert.matches("counter", errs[1].message)
    end)

    local escapes = {
      { "io", 'io.open("/etc/passwd")' },
      { "io.write", 'io.write("x")' },
      { "os.execute", 'os.execute("touch /tmp/gpuledger-spec-pwned")' },
      { "os.remove", 'os.remove("/tmp/x")' },
      { "os.getenv", 'local _ = os.getenv("HOME") .. ""' },
      { "require", 'require("os")' },
      { "debug", 'debug.sethook()' },
      { "package", 'package.loaded.os.execute("true")' },
      { "dofile", 'dofile("/etc/passwd")' },
      { "loadfile", 'loadfile("/etc/passwd")' },
      { "collectgarbage", 'collectgarbage("stop")' },
      { "rawset", 'rawset(ledger, "x", 1)' },
      { "load with a function", 'assert(load(function() return nil end))' },
      { "load of bytecode", 'assert(load(string.dump(function() end)))()' },
      { "string.rep of 1 GB", 'local s = string.rep("x", 1 << 30) emit { message = #s .. "" }' },
      { "a string method of 1 GB", 'local s = ("x"):rep(1 << 30) emit { message = #s .. "" }' },
    }
    for _, case in ipairs(escapes) do
      it(case[1] .. " is stopped with a clear error", function()
        local found = with_site { ["escape.lua"] = 'return { code = "escape", level = "OK", evaluate = function(ledger, policy, emit) '
          .. case[2] .. ' end }' }
        local errs = rule_errors(found)
        assert.equal(1, #errs, case[1])
        assert.matches("escape%.lua", errs[1].message)
        assert.same({}, H.with_code(found, "escape"))
        assert.equal(1, #H.with_code(found, "unmanaged-tenant"))
      end)
    end

    it("a 1 GB allocation names memory", function()
      local found = with_site { ["mem.lua"] = 'return { code = "mem", level = "OK", evaluate = function() local s = string.rep("x", 1 << 30) end }' }
      assert.matches("memory", rule_errors(found)[1].message)
    end)

    it("os.execute did not run", function()
      os.remove("/tmp/gpuledger-spec-pwned")
      with_site { ["escape.lua"] = 'return { code = "escape", level = "OK", evaluate = function() os.execute("touch /tmp/gpuledger-spec-pwned") end }' }
      assert.is_nil(io.open("/tmp/gpuledger-spec-pwned"))
    end)

    it("getmetatable(\"\") yields no string library", function()
      local found = with_site { ["meta.lua"] = [[
return { code = "meta", level = "OK", evaluate = function(ledger, policy, emit)
  local mt = getmetatable("")
  emit { message = type(mt) .. " " .. ("still works"):upper() }
end }
]] }
      local meta = H.with_code(found, "meta")
      assert.equal(1, #meta)
      assert.is_nil(meta[1].message:match("^table"))
      assert.matches("STILL WORKS$", meta[1].message)
    end)

    it("a rule that breaks its own string table does not break the next rule", function()
      local found = with_site({
        ["a_breaker.lua"] = 'return { code = "breaker", level = "OK", evaluate = function() string.format = nil table.concat = nil end }',
        ["b_user.lua"] = 'return { code = "user", level = "OK", evaluate = function(l, p, emit) emit { message = string.format("%d", 7) .. table.concat({ "a" }) } end }',
      })
      assert.same({}, rule_errors(found))
      assert.equal("7a", H.with_code(found, "user")[1].message)
    end)

    it("gl, the helper library, is read-only", function()
      local found = with_site { ["g.lua"] = 'return { code = "g", level = "OK", evaluate = function() gl.label = nil end }' }
      assert.matches("read%-only", rule_errors(found)[1].message)
    end)

    it("a level function that never returns is stopped too", function()
      local set = H.site_rules { ["lvl.lua"] = [[
return { code = "lvl", level = function(policy) for i = 1, 3e7 do end return "WARN" end,
  evaluate = function(ledger, policy, emit) emit { message = "x" } end }
]] }
      local found = H.run_rules(ledger { gpu {} }, { rule_instructions = 100000 }, set)
      for _, f in ipairs(H.with_code(found, "lvl")) do
        assert.are_not.equal("WARN", f.level)
      end
    end)

    it("cannot leave a finalizer (__gc) running after it returns, outside its budget", function()
      local set = H.site_rules { ["fin.lua"] = [[
return { code = "fin", level = "OK", evaluate = function(ledger, policy, emit)
  setmetatable({}, { __gc = function() local t = os.clock() while os.clock() - t < 0.5 do end end })
  emit { message = "done" }
end }
]] }
      H.run_rules(ledger { gpu {} }, { rule_instructions = 1000000 }, set)
      local t0 = os.clock()
      collectgarbage()
      collectgarbage()
      assert.is_true(os.clock() - t0 < 0.25, "a rule's finalizer ran unbounded after the rule returned")
    end)

    it("cannot make the engine spin on its error object (__tostring) outside its budget", function()
      local set = H.site_rules { ["ts.lua"] = [[
return { code = "ts", level = "OK", evaluate = function()
  error(setmetatable({}, { __tostring = function() local t = os.clock() while os.clock() - t < 0.5 do end return "slow" end }))
end }
]] }
      local t0 = os.clock()
      local found = H.run_rules(ledger { gpu {} }, { rule_instructions = 1000000 }, set)
      assert.is_true(os.clock() - t0 < 0.25, "the engine ran the rule's __tostring unbounded")
      assert.equal(1, #rule_errors(found))
    end)

    it("a level function that fails makes its findings ERROR", function()
      local set = H.site_rules { ["lvl.lua"] = [[
return { code = "lvl", level = function(policy) error("no") end,
  evaluate = function(ledger, policy, emit) emit { message = "x" } end }
]] }
      local found = H.run_rules(ledger { gpu {} }, nil, set)
      assert.equal("ERROR", H.with_code(found, "lvl")[1].level)
    end)
  end)

  describe("emit", function()
    it("a finding without gpu is node-level; with a tenant it sorts in tenant order", function()
      local set = H.site_rules { ["t.lua"] = [[
return { code = "t", level = "WARN", order = 20, evaluate = function(ledger, policy, emit)
  local g = ledger.entries[1]
  emit { gpu = g, tenant = g.tenants[2], message = "second" }
  emit { gpu = g, tenant = g.tenants[1], message = "first" }
  emit { message = "node" }
end }
]] }
      local found = H.run_rules(ledger { gpu { tenants = { H.nomad_tenant { container = "a" }, H.nomad_tenant { container = "b" } },
        reservations = { H.reservation() } } }, nil, set)
      local t = H.with_code(found, "t")
      assert.same({ "node", "first", "second" }, { t[1].message, t[2].message, t[3].message })
      assert.is_nil(t[1].gpu)
      assert.equal("gpu0 GPU-fef8089b", t[2].gpu)
    end)

    it("reads each field of what a rule emits once: the message kept is the one checked", function()
      local set = H.site_rules { ["twice.lua"] = [[
return { code = "twice", level = "WARN", evaluate = function(ledger, policy, emit)
  local reads = 0
  emit(setmetatable({}, { __index = function(_, key)
    if key == "message" then
      reads = reads + 1
      return reads == 1 and "first" or 42
    end
  end }))
end }
]] }
      local found = H.run_rules(ledger { gpu {} }, nil, set)
      assert.equal("first", H.with_code(found, "twice")[1].message)
    end)

    it("within a GPU, findings follow their rules' order, any number (a NaN after every number)", function()
      local function rule(code, order)
        return string.format([[
return { code = %q, level = "WARN", order = %s, evaluate = function(ledger, policy, emit)
  emit { gpu = ledger.entries[1], message = %q }
end }
]], code, order, code)
      end
      local set = H.site_rules {
        ["a.lua"] = rule("a-nan", "0/0"), ["b.lua"] = rule("b-big", "1e300"),
        ["c.lua"] = rule("c-low", "-2.5"), ["d.lua"] = rule("d-mid", "45.5"),
      }
      local found = H.run_rules(ledger { gpu {} }, nil, set)
      local codes = {}
      for _, finding in ipairs(found) do
        if finding.code:match("^%l%-") then
          codes[#codes + 1] = finding.code
        end
      end
      assert.same({ "c-low", "d-mid", "b-big", "a-nan" }, codes)
    end)

    it("rules of the same order, on one GPU and tenant: by code, each rule's in the order it emitted them", function()
      local function rule(code)
        return string.format([[
return { code = %q, level = "WARN", order = 30, evaluate = function(ledger, policy, emit)
  for _, gpu in ipairs({ false, ledger.entries[1] }) do
    gpu = gpu or nil
    emit { gpu = gpu, message = %q .. " one" }
    emit { gpu = gpu, message = %q .. " two" }
  end
end }
]], code, code, code)
      end
      local set = H.site_rules { ["b.lua"] = rule("b-same"), ["a.lua"] = rule("a-same") }
      local found = H.run_rules(ledger { gpu {} }, nil, set)
      local messages = {}
      for _, finding in ipairs(found) do
        if finding.code:match("%-same$") then
          messages[#messages + 1] = (finding.gpu and "gpu: " or "node: ") .. finding.message
        end
      end
      assert.same({
        "node: a-same one", "node: a-same two", "node: b-same one", "node: b-same two",
        "gpu: a-same one", "gpu: a-same two", "gpu: b-same one", "gpu: b-same two",
      }, messages)
    end)
  end)

  describe("the findings document (render.json.findings)", function()
    local render_json = require "gpuledger.render.json"

    it("has at, findings, node, schema and worst", function()
      local l = everything()
      local found, _, report = H.run_rules(l)
      local doc = assert(json.decode(render_json.findings(report)))
      local keys = {}
      for k in pairs(doc) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      assert.same({ "at", "findings", "node", "schema", "worst" }, keys)
      assert.equal(1, doc.schema)
      assert.equal("ERROR", doc.worst)
      assert.equal(H.AT, doc.at)
      assert.equal(#found, #doc.findings)
    end)

    it("writes its keys in alphabetical order", function()
      local text = render_json.findings { ledger = ledger {}, findings = {}, worst = "OK" }
      assert.matches('^{"at":.*"findings":.*"node":.*"schema":1,"worst":"OK"}\n$', text)
    end)

    it("writes no findings as []", function()
      local text = render_json.findings { ledger = ledger {}, findings = {}, worst = "OK" }
      assert.truthy(text:find('"findings":[]', 1, true))
    end)

    it("leaves gpu out of node-level findings", function()
      local l = ledger({}, { errors = { "docker: x" } })
      local _, _, report = H.run_rules(l)
      local doc = assert(json.decode(render_json.findings(report)))
      assert.same({ level = "ERROR", code = "source-unavailable", node = "gpud", message = "docker: x" }, doc.findings[1])
    end)
  end)
end)
