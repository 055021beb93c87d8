-- What a rule file may return: the keys of a rule and what each must be.
local rule_schema = require "gpuledger.rule_schema"

local function evaluate() end

describe("gpuledger.rule_schema", function()
  it("takes a rule with code, level and evaluate", function()
    assert.is_nil(rule_schema.problem { code = "note", level = "WARN", evaluate = evaluate })
    assert.is_nil(rule_schema.problem { code = "fleet-note", level = "WARN", evaluate_fleet = evaluate })
  end)

  it("says what is wrong with a rule, naming its code", function()
    assert.equal("level of note must be OK, WARN, BAD, ERROR or a function(policy)",
      rule_schema.problem { code = "note", level = "LOUD", evaluate = evaluate })
    assert.equal('code must be a lower-case name like "reserved-idle"',
      rule_schema.problem { code = "Note", level = "WARN", evaluate = evaluate })
    assert.equal("returned a string, want a table with code, level and evaluate (or false to switch a default off)",
      rule_schema.problem "note")
  end)

  it("refuses a key no rule has, as a misspelt key would do nothing", function()
    assert.equal('note has the unknown key "helth" (a rule has code, level, evaluate_fleet, evaluate, order, rank, health, doc, for)',
      rule_schema.problem { code = "note", level = "WARN", evaluate = evaluate, helth = true })
    assert.matches('note has the unknown key %[1%]', rule_schema.problem { code = "note", level = "WARN", evaluate = evaluate, 1 })
  end)

  it("copies only a rule's keys, with the fields given", function()
    local rule = { code = "note", level = "WARN", evaluate = evaluate, doc = "d" }
    local copy = rule_schema.copy(rule, { file = "note" })
    assert.same({ code = "note", level = "WARN", evaluate = evaluate, doc = "d", file = "note" }, copy)
    rule.level = "BAD"
    assert.equal("WARN", copy.level)
  end)

  describe("the for field", function()
    it("takes Prometheus durations, largest unit first", function()
      for _, good in ipairs { "10m", "1h30m", "90s", "500ms", "1d", "2w", "1y", "1h0m5s", "0s" } do
        assert.is_true(rule_schema.is_duration(good), good)
      end
      for _, bad in ipairs { "", "10", "m", "ten minutes", "1m1h", "1.5h", "10 m", "1h1h", "-5m", 10 } do
        assert.is_false(rule_schema.is_duration(bad), tostring(bad))
      end
    end)
  end)
end)
