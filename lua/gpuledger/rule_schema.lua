-- What a rule file returns: a plain table of the keys below (or false, to
-- switch the default of its name off). The set keeps a copy of those keys
-- only (M.copy), so that nothing the rule does to its own table later
-- changes it.
local M = {}

M.LEVELS = { OK = 0, WARN = 1, BAD = 2, ERROR = 3 }
-- The levels, worst first.
M.WORST_FIRST = { "ERROR", "BAD", "WARN", "OK" }

-- Prometheus' order of duration units, largest first.
local DURATION_UNITS = { y = 1, w = 2, d = 3, h = 4, m = 5, s = 6, ms = 7 }

-- True when s is a duration Prometheus reads in `for:` ("10m", "1h30m").
function M.is_duration(s)
  if type(s) ~= "string" or s == "" then
    return false
  end
  local last, pos = 0, 1
  while pos <= #s do
    local unit, next_pos = s:match("^%d+(ms)()", pos)
    if not unit then
      unit, next_pos = s:match("^%d+([ywdhms])()", pos)
    end
    if not unit or DURATION_UNITS[unit] <= last then
      return false
    end
    last, pos = DURATION_UNITS[unit], next_pos
  end
  return true
end

-- The keys of a rule, in the order they are checked: each with a test of
-- its value (given the whole rule) and what it must be when the test fails.
local KEYS = {
  { key = "code", want = "code must be a lower-case name like \"reserved-idle\"",
    ok = function(v) return type(v) == "string" and v:match("^[a-z0-9][a-z0-9-]*$") ~= nil end },
  { key = "level", want = "level of %s must be OK, WARN, BAD, ERROR or a function(policy)",
    ok = function(v) return M.LEVELS[v] ~= nil or type(v) == "function" end },
  { key = "evaluate_fleet", want = "evaluate_fleet of %s must be a function(fleet, policy, emit)",
    ok = function(v) return v == nil or type(v) == "function" end },
  { key = "evaluate", want = "evaluate of %s must be a function(ledger, policy, emit)",
    ok = function(v, rule) return type(v) == "function" or (v == nil and rule.evaluate_fleet ~= nil) end },
  { key = "order", want = "order of %s must be a number",
    ok = function(v) return v == nil or type(v) == "number" end },
  { key = "rank", want = "rank of %s must be a number",
    ok = function(v) return v == nil or type(v) == "number" end },
  { key = "health", want = "health of %s must be true or false",
    ok = function(v) return v == nil or type(v) == "boolean" end },
  { key = "doc", want = "doc of %s must be a string",
    ok = function(v) return v == nil or type(v) == "string" end },
  { key = "for", want = "[\"for\"] of %s must be a duration like \"10m\" or \"1h30m\"",
    ok = function(v) return v == nil or M.is_duration(v) end },
}

local KNOWN, NAMES = {}, {}
for i, field in ipairs(KEYS) do
  KNOWN[field.key], NAMES[i] = true, field.key
end

-- Why rule has a key no rule has (a misspelt one would be ignored), or nil.
local function unknown_key(rule)
  local unknown = {}
  for key in next, rule do -- raw: the table has no metatable
    if not KNOWN[key] then
      unknown[#unknown + 1] = type(key) == "string" and string.format("%q", key) or string.format("[%s]", tostring(key))
    end
  end
  if #unknown > 0 then
    table.sort(unknown)
    return string.format("%s has the unknown key%s %s (a rule has %s)", type(rule.code) == "string" and rule.code or "the rule",
      #unknown > 1 and "s" or "", table.concat(unknown, ", "), table.concat(NAMES, ", "))
  end
end

-- Why rule (what a rule file returned, not false) is not a rule, or nil.
function M.problem(rule)
  if rule == nil then
    return "returned nothing, want a table with code, level and evaluate (or false to switch a default off)"
  elseif type(rule) ~= "table" then
    return string.format("returned a %s, want a table with code, level and evaluate (or false to switch a default off)", type(rule))
  end
  if getmetatable(rule) ~= nil then
    return "returned a table with a metatable, want a plain table" -- its metamethods would run outside the budget
  end
  for _, field in ipairs(KEYS) do
    if not field.ok(rule[field.key], rule) then
      return string.format(field.want, rule.code)
    end
  end
  return unknown_key(rule)
end

-- A copy of rule's keys (a rule M.problem passed), plus fields.
function M.copy(rule, fields)
  local out = {}
  for _, field in ipairs(KEYS) do
    out[field.key] = rule[field.key]
  end
  for key, value in pairs(fields) do
    out[key] = value
  end
  return out
end

return M
