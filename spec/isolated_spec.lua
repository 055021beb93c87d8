-- isolated.lua: the judge (judge.rules) runs every site rule file in a
-- child of its own under a deadline in CPU time; a file past it is a
-- rule-error naming it, the other files' findings stand, and nothing a
-- rule does to its own table counts. The program's own rules run here.
local H = require "helper"
local isolated = require "gpuledger.isolated"
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"
local snapshot = require "gpuledger.snapshot"

local HANDLER_LOOP = "xpcall(function() while true do end end, function() while true do end end)"
local GOOD = 'return { code = "good-one", level = "WARN", evaluate = function(l, p, emit) emit { message = "good" } end }'

-- judge.rules over the demo ledger (and view, a fleet's, when given) with
-- `files` as the site rules directory. Returns the set, the ledger's
-- findings, the directory and the fleet's findings.
local function judged(files, view)
  local dir = H.tempdir()
  for name, text in pairs(files) do
    H.write(dir .. "/" .. name, text)
  end
  local ledger = judge.ledger_of(snapshot.demo(H.core))
  local set, found, fleet_found = judge.rules(H.core, ruleset.read(H.core, dir), {}, { ledger }, { view = view })
  H.remove(dir)
  return set, found[1], dir, fleet_found
end

local function messages(found, code)
  local out = {}
  for _, finding in ipairs(found) do
    if finding.code == code then
      out[#out + 1] = finding.message
    end
  end
  return out
end

describe("judge.rules with site files (isolated.lua)", function()
  -- A looping file is stopped after 300 ms of CPU time, whatever the
  -- machine's load; the wall clock, which a loaded machine (or the
  -- sanitizers) stretches, is given far more, so that it never decides.
  local saved_file, saved_wall = isolated.FILE_DEADLINE_MS, isolated.WALL_TIMES
  before_each(function()
    isolated.FILE_DEADLINE_MS, isolated.WALL_TIMES = 300, 200
  end)
  after_each(function()
    isolated.FILE_DEADLINE_MS, isolated.WALL_TIMES = saved_file, saved_wall
  end)

  it("runs the embedded rules here, without a child, when the site has no file", function()
    local run_isolated = H.core.run_isolated
    H.core.run_isolated = function()
      error("a child was started")
    end
    local ok, set, found = pcall(judged, {})
    H.core.run_isolated = run_isolated
    assert.is_true(ok, set)
    assert.same({}, set.errors)
    assert.same(H.run_rules(judge.ledger_of(snapshot.demo(H.core))), found)
  end)

  it("brings a site file's findings back through JSON: a GPU's index stays an integer", function()
    local _, found = judged { ["each.lua"] = [[return { code = "each", level = "WARN", evaluate = function(l, p, emit)
      for _, gpu in ipairs(l.entries) do emit { gpu = gpu, message = "m" } end end }]] }
    local each = H.with_code(found, "each")
    assert.is_true(#each > 0)
    for _, finding in ipairs(each) do -- gpu="2", not "2.0"
      assert.equal("integer", math.type(finding.index))
    end
  end)

  it("makes a rule of the fleet that loops a rule-error naming its file; the fleet's other findings stand", function()
    local view = { nodes = {}, total = {} }
    local set, found, dir, fleet_found = judged({
      ["fleet_good.lua"] = 'return { code = "fleet-good", level = "WARN", evaluate_fleet = function(f, p, emit) emit { message = "fine" } end }',
      ["fleet_loop.lua"] = 'return { code = "fleet-loop", level = "WARN", evaluate_fleet = function() string.rep("", math.maxinteger) end }',
    }, view)
    assert.same({ dir .. "/fleet_loop.lua: deadline of 300 ms of CPU time passed" }, set.errors)
    assert.same({}, messages(found, "rule-error")) -- the fleet's error, not the node's
    assert.same({
      { level = "ERROR", code = "rule-error", node = "fleet", message = dir .. "/fleet_loop.lua: deadline of 300 ms of CPU time passed" },
      { level = "WARN", code = "fleet-good", node = "fleet", message = "fine" },
    }, fleet_found)
  end)

  it("gives a site file, and the site's files together, more time for each further ledger (fleet)", function()
    local given = {}
    local run_isolated = H.core.run_isolated
    H.core.run_isolated = function(fn, opts) -- the work here, its deadline noted
      given[#given + 1] = opts.cpu_ms
      return fn()
    end
    local dir = H.tempdir()
    H.write(dir .. "/good.lua", GOOD)
    local ledger = judge.ledger_of(snapshot.demo(H.core))
    local ok, err = pcall(function()
      judge.rules(H.core, ruleset.read(H.core, dir), {}, { ledger })
      judge.rules(H.core, ruleset.read(H.core, dir), {}, { ledger, ledger, ledger })
    end)
    H.core.run_isolated = run_isolated
    H.remove(dir)
    assert.is_true(ok, err)
    assert.same({ 300, 300 + 2 * isolated.FILE_LEDGER_MS }, given)
    local file_ms, set_ms = isolated.deadlines(1001)
    assert.same({ 300 + 1000 * isolated.FILE_LEDGER_MS, isolated.SET_DEADLINE_MS + 1000 * isolated.SET_LEDGER_MS }, { file_ms, set_ms })
  end)

  it("makes a rule that loops in its message handler a rule-error naming its file; the others stand", function()
    local set, found, dir = judged {
      ["good.lua"] = GOOD,
      ["loop.lua"] = 'return { code = "loop", level = "BAD", evaluate = function() xpcall(function() while true do end end, function() while true do end end) end }',
    }
    assert.same({ "good" }, messages(found, "good-one"))
    assert.same({ dir .. "/loop.lua: deadline of 300 ms of CPU time passed" }, messages(found, "rule-error"))
    assert.equal(#H.DEFAULT_CODES + 1, #set.rules) -- the defaults and good.lua: a file that failed is an error, not a rule
  end)

  it("does not run a site file once the site's files together used the set's CPU time", function()
    local saved_set = isolated.SET_DEADLINE_MS
    isolated.SET_DEADLINE_MS = 300
    local ok, set, _, dir = pcall(judged, { ["a_loop.lua"] = HANDLER_LOOP .. " return {}", ["b_loop.lua"] = HANDLER_LOOP .. " return {}" })
    isolated.SET_DEADLINE_MS = saved_set
    assert.is_true(ok, set)
    table.sort(set.errors)
    assert.same({
      dir .. "/a_loop.lua: deadline of 300 ms of CPU time passed",
      dir .. "/b_loop.lua: not run: the site's rules used their 300 ms of CPU time together",
    }, set.errors)
  end)

  it("makes a file that loops at load time a rule-error naming it", function()
    local set, found, dir = judged { ["good.lua"] = GOOD, ["load.lua"] = HANDLER_LOOP .. " return {}" }
    assert.same({ dir .. "/load.lua: deadline of 300 ms of CPU time passed" }, messages(found, "rule-error"))
    assert.same({ dir .. "/load.lua: deadline of 300 ms of CPU time passed" }, set.errors)
  end)

  it("keeps a rule as it was checked, whatever it does to its table afterwards", function()
    local set, found = judged {
      ["pwned.lua"] = 'local R; R = { code = "pwned", level = "WARN", evaluate = function(l, p, emit) R.level = "PWNED"; R.code = "x"; emit { message = "m" } end }; return R',
    }
    assert.same({}, messages(found, "rule-error"))
    assert.same({ "m" }, messages(found, "pwned"))
    for _, rule in ipairs(set.rules) do
      assert.is_not.equal("PWNED", rule.level)
    end
  end)

  it("makes a thresholds.lua that loops an error; the embedded thresholds stay", function()
    local set, found, dir = judged { ["thresholds.lua"] = HANDLER_LOOP .. " return {}" }
    assert.matches(dir .. "/thresholds.lua: deadline of 300 ms of CPU time passed; the embedded defaults stay", set.errors[1], 1, true)
    assert.equal(#H.DEFAULT_CODES, #set.rules)
    assert.is_true(#messages(found, "unmanaged-tenant") > 0)
  end)

  it("makes a data file that fails and a file named so that it is no rule rule-errors naming them", function()
    local set, found, dir = judged {
      ["thresholds.lua"] = "return 42",
      ["xid_catalogue.lua"] = "return { [79] = 'x' }",
      ["my rule.lua"] = GOOD,
    }
    table.sort(set.errors)
    assert.same({
      dir .. "/my rule.lua: a rule file is named with letters, digits, _ and - only",
      dir .. "/thresholds.lua: returned a number, want a table of thresholds",
    }, { set.errors[1], set.errors[2] })
    assert.matches(dir .. "/xid_catalogue.lua: ", set.errors[3], 1, true)
    assert.equal(3, #messages(found, "rule-error"))
  end)

  it("brings thresholds back as data: integers stay integers", function()
    local set, found = judged { ["thresholds.lua"] = "return { temp_max = 80, ratio = 0.5 }", ["t.lua"] = [[
      return { code = "t", level = "WARN", evaluate = function(l, p, emit)
        emit { message = math.type(p.temp_max) .. " " .. math.type(p.rule_instructions) .. " " .. p.ratio }
      end }]] }
    assert.same({}, set.errors)
    assert.same({ "integer integer 0.5" }, messages(found, "t"))
  end)

  it("says which code a second file defines again", function()
    local set = judged { ["a.lua"] = GOOD, ["b.lua"] = GOOD }
    assert.matches("b%.lua: code good%-one is already defined by .*a%.lua", set.errors[1])
  end)
end)

describe("isolated.render with a scripts directory", function()
  it("runs the site's copy of gpuledger.json, which writes with the program's C writer", function()
    local dir = H.tempdir()
    local source = assert(H.core.read_file(os.getenv("GPULEDGER_SOURCE_DIR") .. "/lua/gpuledger/json.lua", 1 << 20))
    local copy = source:gsub("\nreturn M\n$", '\nM.copy = "site"\nreturn M\n')
    assert(H.core.write_atomic(dir .. "/gpuledger/json.lua", copy)) -- makes gpuledger/
    local out, why = isolated.render(H.core, dir, function()
      local json = require "gpuledger.json"
      return json.copy .. " " .. json.encode { list = json.array(), text = "<\u{2028}\xff", n = 0.1 }
    end)
    H.remove(dir)
    assert.is_nil(why)
    assert.equal('site {"list":[],"n":0.1,"text":"\\u003c\\u2028\u{FFFD}"}', out)
  end)
end)

describe("isolated.render decides at each call whether a site script would load", function()
  local serve = require "gpuledger.cmd.serve"
  local history = require "gpuledger.history"

  -- H.core, counting its children (core.run_isolated).
  local function counting_core()
    local counted = { children = 0 }
    counted.core = setmetatable({
      run_isolated = function(...)
        counted.children = counted.children + 1
        return H.core.run_isolated(...)
      end,
    }, { __index = H.core })
    return counted
  end

  local function site_json(dir)
    local source = assert(H.core.read_file(os.getenv("GPULEDGER_SOURCE_DIR") .. "/lua/gpuledger/json.lua", 1 << 20))
    assert(H.core.write_atomic(dir .. "/gpuledger/json.lua", (source:gsub("\nreturn M\n$", '\nM.copy = "site"\nreturn M\n'))))
  end

  local function which_json()
    return require("gpuledger.json").copy or "program"
  end

  it("renders serve's responses here with an empty directory, or one without a script: the same bytes", function()
    local _, _, report = H.run_rules(H.ledger { H.gpu { index = 0 } })
    local function responses()
      return serve.responses(H.core, report, history.new(), { interval = 15, version = "dev" })
    end
    local without = responses()
    local dir = H.tempdir()
    local counted = counting_core()
    local empty = assert(isolated.render(counted.core, dir, responses))
    H.write(dir .. "/README", "site scripts go here\n")
    assert(H.core.write_atomic(dir .. "/gpuledger/render/notes.txt", "not a module\n"))
    local others = assert(isolated.render(counted.core, dir, responses))
    H.remove(dir)
    assert.equal(0, counted.children)
    for path, response in pairs(without) do
      assert.equal(response.body, empty[path].body, path)
      assert.equal(response.body, others[path].body, path)
    end
  end)

  it("uses a script put in the directory at the next call, in a child, and stops once it is gone", function()
    local dir = H.tempdir()
    local counted = counting_core()
    assert.equal("program", isolated.render(counted.core, dir, which_json))
    assert.equal(0, counted.children)
    site_json(dir)
    assert.equal("site", isolated.render(counted.core, dir, which_json))
    assert.equal(1, counted.children)
    assert.is_nil(package.loaded["gpuledger.json"].copy) -- the site's copy stayed in the child
    os.remove(dir .. "/gpuledger/json.lua")
    assert.equal("program", isolated.render(counted.core, dir, which_json))
    H.remove(dir)
    assert.equal(1, counted.children)
  end)

  it("fails as the child does when a module's site copy cannot be read", function()
    local dir = H.tempdir()
    assert(H.core.write_atomic(dir .. "/gpuledger/json.lua/x", "")) -- a directory where the module would be
    local counted = counting_core()
    local out, why = isolated.render(counted.core, dir, which_json)
    H.remove(dir)
    assert.is_nil(out)
    assert.matches("cannot read .*gpuledger/json%.lua", why)
    assert.equal(1, counted.children)
  end)
end)
