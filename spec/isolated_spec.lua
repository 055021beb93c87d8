-- isolated.lua: every rule file runs in a child of its own under a
-- wall-clock deadline; a file past it is a rule-error naming it, the other
-- files' findings stand, and nothing a rule does to its own table counts.
local H = require "helper"
local isolated = require "gpuledger.isolated"
local ruleset = require "gpuledger.ruleset"
local snapshot = require "gpuledger.snapshot"

local HANDLER_LOOP = "xpcall(function() while true do end end, function() while true do end end)"
local GOOD = 'return { code = "good-one", level = "WARN", evaluate = function(l, p, emit) emit { message = "good" } end }'

-- isolated.judge_rules over the demo ledger with `files` as the site rules
-- directory. Returns the set and the findings.
local function judged(files)
  local dir = H.tempdir()
  for name, text in pairs(files) do
    H.write(dir .. "/" .. name, text)
  end
  local ledger = require("gpuledger.judge").judge(H.core, snapshot.demo(H.core)).ledger
  local set, found = isolated.judge_rules(H.core, ruleset.read(H.core, dir), {}, { ledger })
  H.remove(dir)
  return set, found[1], dir
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

describe("isolated.judge_rules", function()
  local saved = isolated.FILE_DEADLINE_MS
  before_each(function()
    isolated.FILE_DEADLINE_MS = 300
  end)
  after_each(function()
    isolated.FILE_DEADLINE_MS = saved
  end)

  it("gives the findings of the embedded set as the set judged here does", function()
    local _, found = judged {}
    local here = H.run_rules(require("gpuledger.judge").judge(H.core, snapshot.demo(H.core)).ledger)
    assert.same(here, found)
    for _, finding in ipairs(found) do -- through JSON and back: a GPU's index stays an integer (gpu="2", not "2.0")
      assert.is_true(finding.index == nil or math.type(finding.index) == "integer")
    end
  end)

  it("makes a rule that loops in its message handler a rule-error naming its file; the others stand", function()
    local set, found, dir = judged {
      ["good.lua"] = GOOD,
      ["loop.lua"] = 'return { code = "loop", level = "BAD", evaluate = function() xpcall(function() while true do end end, function() while true do end end) end }',
    }
    assert.same({ "good" }, messages(found, "good-one"))
    assert.same({ dir .. "/loop.lua: deadline of 300 ms passed" }, messages(found, "rule-error"))
    assert.equal(#H.DEFAULT_CODES + 1, #set.rules) -- the defaults and good.lua: a file that failed is an error, not a rule
  end)

  it("makes a file that loops at load time a rule-error naming it", function()
    local set, found, dir = judged { ["good.lua"] = GOOD, ["load.lua"] = HANDLER_LOOP .. " return {}" }
    assert.same({ dir .. "/load.lua: deadline of 300 ms passed" }, messages(found, "rule-error"))
    assert.same({ dir .. "/load.lua: deadline of 300 ms passed" }, set.errors)
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
    assert.matches(dir .. "/thresholds.lua: deadline of 300 ms passed; the embedded defaults stay", set.errors[1], 1, true)
    assert.equal(#H.DEFAULT_CODES, #set.rules)
    assert.is_true(#messages(found, "unmanaged-tenant") > 0)
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
