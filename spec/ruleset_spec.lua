-- The effective rule set: embedded defaults, a site directory over them,
-- the thresholds (docs/rules.md).
local H = require "helper"
local ruleset = require "gpuledger.ruleset"

local DEFAULT_CODES = H.DEFAULT_CODES

local function codes(set)
  local out = {}
  for _, r in ipairs(set.rules) do
    out[#out + 1] = r.code
  end
  table.sort(out)
  return out
end

local SITE_RULE = [[
-- a site rule
return {
  code = "site-note",
  level = "WARN",
  doc = "a note from the site",
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      emit { gpu = gpu, message = "note " .. policy.site_limit }
    end
  end,
}
]]

describe("gpuledger.ruleset", function()
  describe("the embedded set", function()
    local set = H.rule_set()

    it("has the default codes (tenancy and health) and no errors", function()
      assert.same(DEFAULT_CODES, codes(set))
      assert.same({}, set.errors)
    end)

    it("says each came from the embedded copy and which file", function()
      for _, r in ipairs(set.rules) do
        assert.equal("embedded", r.origin)
        assert.is_string(r.file)
        assert.is_string(r.doc)
      end
      assert.equal("reserved_idle", H.rule(set, "reserved-idle").file)
    end)

    it("has the default thresholds", function()
      assert.equal(0, set.thresholds.encoder_max)
      assert.equal(85, set.thresholds.temp_max)
      assert.equal(5, set.thresholds.thermal_margin_min)
      assert.is_false(set.thresholds.allow_unmanaged)
      assert.is_true(set.thresholds.idle)
      assert.is_true(set.thresholds.rule_instructions > 0)
      assert.is_true(set.thresholds.rule_memory_bytes > 0)
    end)

    it("each default rule has the levels of the contract", function()
      local policy = set.thresholds
      local want = {
        ["source-unavailable"] = "ERROR", ["unreserved-tenant"] = "BAD", ["unmanaged-tenant"] = "BAD",
        contended = "WARN", ["reserved-idle"] = "WARN", ["encoder-saturated"] = "WARN", hot = "WARN",
        idle = "OK", held = "OK",
      }
      for code, level in pairs(want) do
        assert.equal(level, ruleset.level_of(H.rule(set, code), policy), code)
      end
    end)
  end)

  describe("codes", function()
    local set = H.rule_set()

    it("lists every code once with its level, the tenancy codes' worst first", function()
      local list = ruleset.codes(set, set.thresholds)
      assert.equal(#DEFAULT_CODES, #list)
      local level_of = {}
      for _, entry in ipairs(list) do
        level_of[entry.code] = entry.level
      end
      local rank = { OK = 0, WARN = 1, BAD = 2, ERROR = 3 }
      for i = 2, #H.TENANCY_ORDER do
        assert.is_true(rank[level_of[H.TENANCY_ORDER[i - 1]]] >= rank[level_of[H.TENANCY_ORDER[i]]])
      end
      assert.same({ code = "source-unavailable", level = "ERROR" }, list[1])
    end)

    it("unmanaged-tenant is WARN under allow_unmanaged", function()
      for _, entry in ipairs(ruleset.codes(set, H.merge(set.thresholds, { allow_unmanaged = true }))) do
        if entry.code == "unmanaged-tenant" then
          assert.equal("WARN", entry.level)
        end
      end
    end)

    it("idle is listed even with --no-idle", function()
      local found = false
      for _, entry in ipairs(ruleset.codes(set, H.merge(set.thresholds, { idle = false }))) do
        found = found or entry.code == "idle"
      end
      assert.is_true(found)
    end)

    it("come in listing order: by the rules' rank, then the unranked by name", function()
      local got, rows = {}, {}
      for i, entry in ipairs(ruleset.codes(set, set.thresholds)) do
        got[i], rows[i] = entry.code, { code = entry.code, rank = H.rule(set, entry.code).rank }
      end
      assert.is_true(H.in_order(H.TENANCY_ORDER, got))
      assert.is_true(H.listing_order(rows))
      assert.is_nil(H.rule(set, "xid-fatal").rank) -- the health codes have no rank: by name, after
      assert.is_true(H.in_order({ "held", "ecc-disabled", "xid-memory" }, got))
    end)

    it("a site rule's rank places its code among the defaults", function()
      local ranked = H.site_rules { ["early.lua"] = 'return { code = "zz-early", level = "WARN", rank = 15, evaluate = function() end }' }
      local got = {}
      for i, entry in ipairs(ruleset.codes(ranked, ranked.thresholds)) do
        got[i] = entry.code
      end
      assert.same({ "source-unavailable", "zz-early", "unreserved-tenant" }, { got[1], got[2], got[3] })
    end)
  end)

  describe("a site rules directory", function()
    it("a file of the same name replaces the default", function()
      local set, dir = H.site_rules { ["hot.lua"] = [[
return { code = "hot", level = "BAD", doc = "site hot", evaluate = function(ledger, policy, emit)
  emit { message = "site hot" }
end }
]] }
      assert.same(DEFAULT_CODES, codes(set))
      local hot = H.rule(set, "hot")
      assert.equal(dir .. "/hot.lua", hot.origin)
      assert.equal("site hot", hot.doc)
      local found = H.run_rules(H.ledger { H.gpu { temperatureC = 99 } }, nil, set)
      local f = H.with_code(found, "hot")
      assert.equal(1, #f)
      assert.equal("site hot", f[1].message)
      assert.equal("BAD", f[1].level)
    end)

    it("a new file adds a code, and a site thresholds.lua may add keys for it", function()
      local set = H.site_rules { ["site_note.lua"] = SITE_RULE, ["thresholds.lua"] = "return { site_limit = 3 }" }
      assert.equal(#DEFAULT_CODES + 1, #set.rules)
      assert.same({}, set.errors)
      local found = H.run_rules(H.ledger { H.gpu {} }, nil, set)
      local f = H.with_code(found, "site-note")
      assert.equal(1, #f)
      assert.equal("note 3", f[1].message)
      assert.equal("WARN", f[1].level)
    end)

    it("a file returning false switches a default off, and the set says which", function()
      local set, dir = H.site_rules { ["idle.lua"] = "return false" }
      assert.is_nil(H.rule(set, "idle"))
      assert.equal(#DEFAULT_CODES - 1, #set.rules)
      assert.same({}, set.errors)
      assert.same({}, H.with_code(H.run_rules(H.ledger { H.gpu {} }, nil, set), "idle"))
      assert.same({ { code = "idle", doc = H.rule(H.rule_set(), "idle").doc, file = "idle", origin = dir .. "/idle.lua", off = true } },
        set.off)
    end)

    it("a file named like a default that returns nothing is an error naming it, never a default switched off", function()
      for _, text in ipairs { "", "-- nothing here", "return nil", "return" } do
        local set, dir = H.site_rules { ["unmanaged_tenant.lua"] = text }
        assert.same({}, set.off, text)
        assert.equal(1, #set.errors, text)
        assert.equal(dir .. "/unmanaged_tenant.lua: returned nothing, want a table with code, level and evaluate "
          .. "(or false to switch a default off)", H.error_text(set.errors[1]))
        local found = H.run_rules(H.ledger { H.gpu { tenants = { H.docker_tenant {} } } }, nil, set)
        assert.equal(1, #H.with_code(found, "rule-error"), text)
      end
    end)

    it("a rule with a key no rule has is an error naming the file and the key, and is not loaded", function()
      local set, dir = H.site_rules {
        ["note.lua"] = 'return { code = "note", level = "WARN", helth = true, four = "10m", evaluate = function() end }',
      }
      assert.is_nil(H.rule(set, "note"))
      assert.equal(1, #set.errors)
      assert.equal(dir .. '/note.lua: note has the unknown keys "four", "helth" (a rule has code, level, '
        .. "evaluate_fleet, evaluate, order, rank, health, doc, for)", H.error_text(set.errors[1]))
    end)

    it("a site thresholds.lua changes only the keys it sets", function()
      local set = H.site_rules { ["thresholds.lua"] = "return { temp_max = 70 }" }
      assert.equal(70, set.thresholds.temp_max)
      assert.equal(0, set.thresholds.encoder_max)
      assert.equal(5, set.thresholds.thermal_margin_min)
      assert.is_true(set.thresholds.idle)
      assert.same({}, set.errors)
      assert.equal(1, #H.with_code(H.run_rules(H.ledger { H.gpu { temperatureC = 75 } }, nil, set), "hot"))
    end)

    it("a site thresholds.lua that is not a table is an error, the defaults stay", function()
      local set = H.site_rules { ["thresholds.lua"] = "return 42" }
      assert.equal(1, #set.errors)
      assert.matches("thresholds%.lua", H.error_text(set.errors[1]))
      assert.equal(85, set.thresholds.temp_max)
    end)

    it("a syntax error is a rule-error naming the file and line; the others still load", function()
      local set = H.site_rules { ["broken.lua"] = "return {\n  code = 'broken',\n  level = \n}\n" }
      assert.equal(1, #set.errors)
      assert.matches("broken%.lua:%d+:", H.error_text(set.errors[1]))
      assert.same(DEFAULT_CODES, codes(set))
      local found = H.run_rules(H.ledger { H.gpu {} }, nil, set)
      assert.equal("rule-error", found[1].code)
      assert.equal("ERROR", found[1].level)
      assert.matches("broken%.lua:%d+:", found[1].message)
    end)

    it("an error at load is a rule-error naming the file and line", function()
      local set = H.site_rules { ["raise.lua"] = "local x = 1\nerror('site rule cannot load')\n" }
      assert.equal(1, #set.errors)
      assert.matches("raise%.lua:2: site rule cannot load", H.error_text(set.errors[1]))
    end)

    it("a file that loops at load is stopped", function()
      local set = H.site_rules { ["loop.lua"] = "while true do end" }
      assert.equal(1, #set.errors)
      assert.matches("budget", H.error_text(set.errors[1]))
    end)

    it("a badly named file is an error", function()
      local set = H.site_rules { ["my rule.lua"] = SITE_RULE, ["x.y.lua"] = SITE_RULE }
      assert.equal(2, #set.errors)
      for _, err in ipairs(set.errors) do
        assert.matches("letters, digits, _ and %-", H.error_text(err))
      end
      assert.same(DEFAULT_CODES, codes(set))
    end)

    it("files not ending in .lua are ignored", function()
      local set = H.site_rules { ["README"] = "notes", ["hot.lua.orig"] = "garbage(" }
      assert.same({}, set.errors)
      assert.same(DEFAULT_CODES, codes(set))
    end)

    it("a rule of the wrong shape is an error", function()
      for _, case in ipairs {
        { "return 42", "returned a number" },
        { "return { code = 'Bad Code', level = 'OK', evaluate = function() end }", "code must be" },
        { "return { code = 'x', level = 'FATAL', evaluate = function() end }", "level of x" },
        { "return { code = 'x', level = 'OK' }", "evaluate of x" },
        { "return { code = 'x', level = 'OK', order = 'first', evaluate = function() end }", "order of x" },
      } do
        local set = H.site_rules { ["shape.lua"] = case[1] }
        assert.equal(1, #set.errors, case[1])
        assert.matches(case[2], H.error_text(set.errors[1]), 1, true)
        assert.matches("shape%.lua", H.error_text(set.errors[1]))
      end
    end)

    it("a new file that reuses a default code is an error", function()
      local set = H.site_rules { ["hotter.lua"] = "return { code = 'hot', level = 'WARN', evaluate = function() end }" }
      assert.equal(1, #set.errors)
      assert.matches("already defined", H.error_text(set.errors[1]))
    end)

    it("a site rule cannot keep globals between loads", function()
      local files = { ["count.lua"] = [[
local n = 0
return { code = "count", level = "OK", evaluate = function(ledger, policy, emit)
  n = n + 1
  emit { message = tostring(n) .. " " .. tostring(rawequal(_G, nil)) }
end }
]] }
      local first = H.with_code(H.run_rules(H.ledger {}, nil, H.site_rules(files)), "count")
      local second = H.with_code(H.run_rules(H.ledger {}, nil, H.site_rules(files)), "count")
      assert.equal(first[1].message, second[1].message)
    end)

    it("reads the site files from the directory it is given", function()
      local dir = H.tempdir()
      H.write(dir .. "/site_note.lua", SITE_RULE)
      H.write(dir .. "/idle.lua", "return false")
      local ok, set = pcall(H.rule_set, dir)
      H.remove(dir)
      assert.is_true(ok, set)
      assert.is_not_nil(H.rule(set, "site-note"))
      assert.is_nil(H.rule(set, "idle"))
    end)

    it("a missing directory is no site rules", function()
      local set = H.rule_set("/nonexistent/gpuledger/rules.d")
      assert.same(DEFAULT_CODES, codes(set))
      assert.same({}, set.errors)
    end)
  end)
end)
