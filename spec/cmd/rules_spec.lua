-- The rules command: the rows of `gpuledger rules`, `rules
-- --check` over several inputs, `rules --prometheus`; and the safety the
-- check reports on: each escape attempt (testdata/site-rules/escapes/) is stopped with a clear
-- rule-error naming the file (and line), the other rules still run, and
-- site scripts get their own sandbox.
local H = require "helper"
local json = require "gpuledger.json"
local rules_cmd = require "gpuledger.cmd.rules"
local sandbox = require "gpuledger.sandbox"
local snapshot = require "gpuledger.snapshot"
local render_json = require "gpuledger.render.json"
local table_render = require "gpuledger.render.table"

local gpu, ledger = H.gpu, H.ledger

-- The rule-error findings of found.
local function rule_errors(found)
  return H.with_code(found, "rule-error")
end

-- The rows of a set under flags (as on the command line).
local function rows_of(set, flags)
  return rules_cmd.rows(set, H.policy(flags, set))
end

local function row(rows, code)
  for _, r in ipairs(rows) do
    if r.code == code then
      return r
    end
  end
end

describe("gpuledger.cmd.rules", function()
  describe("rows", function()
    it("lists every code of the set in listing order with level, doc, origin and file", function()
      local rows, errors = rows_of(H.rule_set())
      assert.same({}, errors)
      local codes = {}
      for i, r in ipairs(rows) do
        codes[i] = r.code
        assert.equal("embedded", r.origin)
        assert.is_true(r.doc ~= "")
      end
      assert.equal(#H.DEFAULT_CODES, #codes)
      assert.is_true(H.in_order(H.TENANCY_ORDER, codes))
      assert.is_true(H.listing_order(rows))
      assert.equal("unmanaged_tenant", row(rows, "unmanaged-tenant").file)
      assert.is_true(json.is_array(rows))
    end)

    it("gives the level under the policy", function()
      assert.equal("BAD", row(rows_of(H.rule_set()), "unmanaged-tenant").level)
      assert.equal("WARN", row(rows_of(H.rule_set(), { allow_unmanaged = true }), "unmanaged-tenant").level)
    end)

    it("shows a default a site file switched off, and which file did", function()
      local set, dir = H.site_rules { ["idle.lua"] = "return false" }
      assert.is_nil(row(rows_of(set), "idle"))
      local off = rules_cmd.off_rows(set)
      assert.same({ { code = "idle", doc = H.rule(H.rule_set(), "idle").doc, origin = dir .. "/idle.lua", file = "idle" } }, off)
      local drawn = table_render.rules { rules = rows_of(set), off = off }
      assert.matches("│ idle +│ off +│ switched off by " .. dir:gsub("%p", "%%%0") .. "/idle.lua", drawn)
    end)

    it("carries a site rule's origin and its [\"for\"]", function()
      local set = H.site_rules { ["late.lua"] = 'return { code = "late", level = "WARN", ["for"] = "1h30m", evaluate = function() end }' }
      local late = row(rows_of(set), "late")
      assert.equal("1h30m", late["for"])
      assert.matches("late%.lua$", late.origin)
    end)

    it("reports a level function that fails, the rule's level ERROR", function()
      local set = H.site_rules { ["moody.lua"] = 'return { code = "moody", level = function() error("no mood") end, evaluate = function() end }' }
      local rows, errors = rows_of(set)
      assert.equal("ERROR", row(rows, "moody").level)
      assert.equal(1, #errors)
      assert.matches("rule moody %(.-moody%.lua%): its level function failed: .-moody%.lua:1: no mood", errors[1])
    end)

    it("reports a level function that answers no level, named as the shape checks name a value", function()
      for answer, said in pairs { ["5"] = "a number", ["{}"] = "a table", ["nil"] = "nil", ['"bad"'] = '"bad"' } do
        local set = H.site_rules { ["moody.lua"] = 'return { code = "moody", level = function() return ' .. answer
          .. ' end, evaluate = function() end }' }
        local rows, errors = rows_of(set)
        assert.equal("ERROR", row(rows, "moody").level)
        assert.matches("rule moody %(.-moody%.lua%): its level function returned " .. said:gsub("%p", "%%%0")
          .. ", want OK, WARN, BAD or ERROR", errors[1])
      end
    end)
  end)

  -- rules_cmd.run_check with `files` ({name = text}) as the site rules
  -- directory (none: the embedded set).
  local function run_check(files, inputs)
    local dir = ""
    if files then
      dir = H.tempdir()
      for name, text in pairs(files) do
        H.write(dir .. "/" .. name, text)
      end
    end
    local set, results, errors = rules_cmd.run_check(H.core, dir, {}, inputs)
    if files then
      H.remove(dir)
    end
    return set, results, errors
  end

  describe("run_check", function()
    it("grades the Xids with the catalogue, as check does, and a site's xid_catalogue.lua regrades them", function()
      local function codes_of_gpu3(results)
        local codes = {}
        for _, finding in ipairs(results[1].findings) do
          if finding.index == 3 and finding.code:find("^xid") then
            codes[#codes + 1] = finding.code
          end
        end
        return codes
      end
      local demo = { { name = "demo", snapshot = snapshot.demo(H.core) } }
      local _, embedded = run_check(nil, demo)
      assert.same({ "xid-fatal" }, codes_of_gpu3(embedded)) -- Xid 48, double-bit ECC
      local _, regraded, errors = run_check({
        ["xid_catalogue.lua"] = 'return { [48] = { class = "memory", meaning = "double-bit ECC", action = "watch it" } }',
      }, { { name = "demo", snapshot = snapshot.demo(H.core) } })
      assert.same({}, errors)
      assert.same({ "xid-memory" }, codes_of_gpu3(regraded))
    end)

    it("runs the set on every input; rule-errors come out once each, in order", function()
      local inputs = {
        { name = "demo", snapshot = snapshot.demo(H.core) },
        { name = "/tmp/x.json", snapshot = H.snapshot {} },
        { name = "/tmp/missing.json", error = "/tmp/missing.json: No such file or directory" },
      }
      local _, results, errors = run_check({
        ["broken.lua"] = "return { code = ",
        ["raiser.lua"] = 'return { code = "raiser", level = "WARN", evaluate = function() error("boom") end }',
      }, inputs)
      assert.equal(3, #results)
      assert.equal("gpu-demo-01", results[1].node)
      assert.equal(5, results[1].gpus)
      assert.equal("ERROR", results[1].worst)
      assert.equal("gpud", results[2].node)
      assert.equal("/tmp/missing.json: No such file or directory", results[3].error)
      assert.equal(2, #errors)
      assert.matches("broken%.lua:1:", errors[1])
      assert.matches("rule raiser .-raiser%.lua:1: boom", errors[2])
    end)

    it("a clean set on the demo node has no errors and every default finding", function()
      local _, results, errors = run_check(nil, { { name = "demo", snapshot = snapshot.demo(H.core) } })
      assert.same({}, errors)
      assert.equal(21, #results[1].findings)
    end)
  end)

  describe("the report of --check (render/table.lua)", function()
    it("names each input, lists its findings and every error, and ends FAIL", function()
      local set, results, errors = run_check({ ["raiser.lua"] = 'return { code = "raiser", level = "WARN", evaluate = function() error("boom") end }' }, {
        { name = "demo", snapshot = snapshot.demo(H.core) },
        { name = "/x.json", error = "/x.json: gone" },
      })
      local report = table_render.rules_check { dir = "/site", rules = rules_cmd.rows(set), off = rules_cmd.off_rows(set), inputs = results, errors = errors }
      assert.matches(string.format("gpuledger rules --check /site: %d rules, 1 from the site directory", #H.DEFAULT_CODES + 1), report, 1, true)
      assert.matches("== the embedded demo node (node gpu-demo-01, 5 GPU(s))", report, 1, true)
      assert.matches("== /x.json: cannot be read: /x.json: gone", report, 1, true)
      assert.matches("1 rule error(s):\n  rule raiser", report, 1, true)
      local last = "FAIL: 1 rule error(s), 1 input(s) not read\n"
      assert.equal(last, report:sub(-#last))
    end)

    it("ends ok when nothing failed", function()
      local set, results, errors = run_check(nil, { { name = "demo", snapshot = snapshot.demo(H.core) } })
      local report = table_render.rules_check { dir = "/none", rules = rules_cmd.rows(set), off = rules_cmd.off_rows(set), inputs = results, errors = errors }
      local last = "ok: no rule errors over 1 input(s)\n"
      assert.equal(last, report:sub(-#last))
    end)
  end)

  describe("the JSON of --check (render/json.lua)", function()
    it("writes each input's findings with the fields check --json gives them, and no counts", function()
      local set, results, errors = run_check(nil, { { name = "demo", snapshot = snapshot.demo(H.core) } })
      local text = render_json.rules_check { dir = "/none", rules = rules_cmd.rows(set), off = rules_cmd.off_rows(set),
        inputs = results, errors = errors, ok = true }
      local written = assert(json.decode(text)).inputs[1]
      local checked = assert(json.decode(render_json.findings { ledger = {}, findings = results[1].findings }))
      assert.is_nil(written.counts)
      assert.equal(21, #written.findings)
      assert.same(checked.findings, written.findings) -- no busId, no place
      assert.is_nil(text:find('"busId"', 1, true))
    end)
  end)

  describe("the for field", function()
    it("a rule with a bad for is a load error naming the file", function()
      local set = H.site_rules { ["late.lua"] = 'return { code = "late", level = "WARN", ["for"] = "ten minutes", evaluate = function() end }' }
      assert.equal(1, #set.errors)
      assert.matches('late%.lua: %["for"%] of late must be a duration', H.error_text(set.errors[1]))
    end)
  end)
end)

describe("the sandbox stops each escape attempt with a clear rule-error", function()
  -- Loads `body` as the evaluate of a site rule in file esc.lua (line 3 of
  -- the file is body's first line) and runs it on a one-GPU ledger.
  local function escape(body, thresholds)
    local set = H.site_rules { ["esc.lua"] = "return { code = 'esc', level = 'WARN',\n  evaluate = function(ledger, policy, emit)\n" .. body .. "\nend }" }
    assert.same({}, set.errors)
    local found = H.run_rules(ledger { gpu {}, gpu { index = 1 } }, thresholds, set)
    return rule_errors(found), found
  end

  for _, case in ipairs {
    { "io.open", 'local f = io.open("/etc/passwd")', "esc%.lua:3: attempt to index a nil value %(global 'io'%)" },
    { "os.execute", 'os.execute("touch /tmp/gpuledger-spec-escaped")', "esc%.lua:3: attempt to call a nil value %(field 'execute'%)" },
    { "os.getenv", 'local t = os.getenv("HOME")', "esc%.lua:3: attempt to call a nil value %(field 'getenv'%)" },
    { 'require "ffi"', 'local ffi = require "ffi"', "esc%.lua:3: attempt to call a nil value %(global 'require'%)" },
    { "debug.sethook", "debug.sethook()", "esc%.lua:3: attempt to index a nil value %(global 'debug'%)" },
    { "load of bytecode", 'assert(load(string.dump(function() end)))', "attempt to load a binary chunk" },
    { "setmetatable on the ledger", "setmetatable(ledger, {})", "esc%.lua:3: setmetatable: cannot change a protected metatable" },
    { "setmetatable on gl", "setmetatable(gl, {})", "esc%.lua:3: setmetatable: cannot change a protected metatable" },
    { "setmetatable on the policy", "setmetatable(policy, nil)", "esc%.lua:3: setmetatable: cannot change a protected metatable" },
    { "a write to the ledger", 'ledger.entries[1].state = "free"', 'esc%.lua:3: cannot change field "state"' },
    { "a finalizer", "setmetatable({}, { __gc = function() while true do end end })", "esc%.lua:3: setmetatable: __gc is not allowed" },
    { "a global write", "seen = true", 'esc%.lua:3: assignment to global "seen"' },
    { "a write through _G", "_G.seen = true", 'esc%.lua:3: assignment to global "seen"' },
  } do
    it(case[1], function()
      local errors, found = escape(case[2])
      assert.equal(1, #errors)
      assert.equal("ERROR", errors[1].level)
      assert.matches("^rule esc %(.-esc%.lua%): ", errors[1].message)
      assert.matches(case[3], errors[1].message)
      assert.is_true(#found > 1, "the default rules still ran")
    end)
  end

  it("string.rep of 1 GB: the memory budget, naming the rule's file", function()
    local errors = escape('local s = string.rep("x", 1024 * 1024 * 1024)')
    assert.equal(1, #errors)
    assert.matches("^rule esc %(.-esc%.lua%): stopped: it asked for more memory than its budget of 67108864 bytes", errors[1].message)
  end)

  it("while true do end: the instruction budget, naming the line", function()
    local t0 = os.clock()
    local errors = escape("while true do end", { rule_instructions = 1000000 })
    assert.is_true(os.clock() - t0 < 5)
    assert.equal(1, #errors)
    assert.matches("esc%.lua:3: stopped after running past its budget of 1000000 instructions", errors[1].message)
  end)

  it("a loop that catches the budget error with pcall is still stopped", function()
    local errors = escape("while true do pcall(function() while true do end end) end", { rule_instructions = 1000000 })
    assert.equal(1, #errors)
    assert.matches("stopped after running past its budget", errors[1].message)
  end)

  it("an error object with __tostring is not run outside the budget", function()
    local errors = escape("error(setmetatable({}, { __tostring = function() while true do end end }))")
    assert.equal(1, #errors)
    assert.matches("esc%.lua%): %(error object is a table value%)", errors[1].message)
  end)

  it("a global write neither succeeds nor persists to the next evaluation of the same set", function()
    local set = H.site_rules {
      ["g.lua"] = [[
return { code = "g", level = "OK", evaluate = function(ledger, policy, emit)
  emit { message = "before: " .. tostring(counter) }
  local ok = pcall(function() counter = 1 end)
  emit { message = "write: " .. tostring(ok) .. ", after: " .. tostring(counter) }
end }
]],
      ["h.lua"] = [[
return { code = "h", level = "OK", evaluate = function()
  counter = 1
end }
]],
    }
    local l = ledger { gpu {} }
    for _ = 1, 2 do -- the same loaded set, twice, as serve does at each refresh
      local found = H.run_rules(l, nil, set)
      local g = H.with_code(found, "g")
      assert.equal("before: nil", g[1].message)
      assert.equal("write: false, after: nil", g[2].message)
      local errors = rule_errors(found)
      assert.equal(1, #errors)
      assert.matches('h%.lua:2: assignment to global "counter"', errors[1].message)
    end
  end)

  it("a rule cannot change what the next rule sees", function()
    local set = H.site_rules {
      ["a_writer.lua"] = 'return { code = "a-writer", level = "OK", order = 1, evaluate = function(ledger) pcall(function() ledger.entries[1].model = "changed" end); pcall(table.insert, ledger.entries, {}) end }',
      ["b_reader.lua"] = 'return { code = "b-reader", level = "OK", order = 2, evaluate = function(ledger, policy, emit) emit { message = ledger.entries[1].model .. " " .. #ledger.entries } end }',
    }
    local found = H.run_rules(ledger { gpu {} }, nil, set)
    assert.equal("NVIDIA L4 1", H.with_code(found, "b-reader")[1].message)
  end)

  it("a rule table with a metatable is refused at load (its metamethods would run outside the budget)", function()
    local set = H.site_rules { ["meta.lua"] = 'return setmetatable({}, { __index = function() while true do end end })' }
    assert.equal(1, #set.errors)
    assert.matches("meta%.lua: returned a table with a metatable", H.error_text(set.errors[1]))
  end)

  it("a site thresholds.lua cannot lift the budgets", function()
    local set = H.site_rules { ["thresholds.lua"] = "return { rule_instructions = 0, rule_memory_bytes = -1, temp_max = 80 }" }
    assert.equal(2, #set.errors)
    assert.matches("thresholds%.lua: rule_instructions must be a positive integer", H.error_text(set.errors[1]))
    assert.is_true(set.thresholds.rule_instructions > 0)
    assert.is_true(set.thresholds.rule_memory_bytes > 0)
    assert.equal(80, set.thresholds.temp_max)
  end)

  it("a site thresholds.lua's __pairs does not run", function()
    local set = H.site_rules { ["thresholds.lua"] = "return setmetatable({ temp_max = 70 }, { __pairs = function() while true do end end })" }
    assert.same({}, set.errors)
    assert.equal(70, set.thresholds.temp_max)
  end)

  it("next sees through read-only views", function()
    local set = H.site_rules { ["n.lua"] = 'return { code = "n", level = "OK", evaluate = function(ledger, policy, emit) emit { message = tostring(next(ledger.entries[1].tenants) == nil) .. " " .. tostring(next(ledger.entries) ~= nil) } end }' }
    local found = H.run_rules(ledger { gpu {} }, nil, set)
    assert.equal("true true", H.with_code(found, "n")[1].message)
  end)
end)

describe("site scripts (the scripts directory)", function()
  -- The searcher of gpuledger.sandbox over a core whose lookup finds every
  -- module with text, at origin ("site" or "embedded").
  local function searcher(text, origin)
    local fake = {}
    function fake.search_script(name, dir, prefix)
      assert.equal("/site", dir)
      assert.equal("lua/", prefix)
      local chunkname = origin == "site" and ("@/site/" .. name:gsub("%.", "/") .. ".lua") or ("=[embedded] lua/" .. name)
      return text, chunkname, origin
    end
    return sandbox.searcher(fake, "/site")
  end

  it("a module from the site directory runs in the script sandbox", function()
    local loader, origin = searcher("return { os = os, io = io, require = require, debug = debug, G = _G }", "site")("gpuledger.x")
    assert.equal("/site/gpuledger/x.lua", origin)
    local env = loader()
    assert.is_nil(env.os.execute)
    assert.is_nil(env.os.getenv)
    assert.is_function(env.os.time)
    assert.is_nil(env.io.open)
    assert.is_nil(env.io.popen)
    assert.equal(io.stdout, env.io.stdout)
    assert.is_nil(env.debug)
    assert.are_not.equal(_G, env.G)
    assert.is_table(env.require("gpuledger.text"))
    assert.has_error(function() env.require("gpuledger.core") end, nil)
    assert.has_error(function() env.require("io") end)
    assert.has_error(function() env.require("ffi") end)
  end)

  it("an embedded module keeps the program's globals", function()
    assert.equal(_G, (searcher("return _ENV", "embedded")("gpuledger.x"))())
  end)

  it("a site script cannot assign globals", function()
    assert.has_error(searcher("x = 1", "site")("gpuledger.y"), nil)
  end)
end)
