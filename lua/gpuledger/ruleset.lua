-- The effective rule set: every default rule embedded in the binary, each
-- replaced by a site file of the same name in the rules directory, plus the
-- site's new files; and the thresholds, the embedded defaults with the
-- site's thresholds.lua over them. Each file runs in its own sandbox under a
-- time and memory budget; a file that fails becomes an error of the set
-- (reported as a rule-error finding), never a failure of the program.
local errors = require "gpuledger.errors"
local gl = require "gpuledger.gl"
local sandbox = require "gpuledger.sandbox"

local M = {}

local LEVELS = { OK = 0, WARN = 1, BAD = 2, ERROR = 3 }
M.LEVELS = LEVELS

-- Budget for loading a file (its top level only defines things).
local LOAD_INSTRUCTIONS = 5000000
local LOAD_BYTES = 16 * 1024 * 1024

local SITE_NAME = "^([%w_%-]+)%.lua$"

-- Runs a chunk's text in env under the load budget. Returns its value, or
-- nil and the error (errors.lua: its file, and line when it has one).
local function run_file(core, text, chunkname, env)
  local file = chunkname:sub(2)
  local chunk, why = load(text, chunkname, "t", env)
  if not chunk then
    return nil, errors.of_load(why, chunkname, file)
  end
  local ok, value = core.call_limited(chunk, LOAD_INSTRUCTIONS, LOAD_BYTES)
  if not ok then
    return nil, errors.of_call(value, file)
  end
  return value == nil and false or value
end

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

local function check_rule(rule)
  if type(rule) ~= "table" then
    return string.format("returned a %s, want a table with code, level and evaluate (or false to switch a default off)", type(rule))
  end
  if getmetatable(rule) ~= nil then
    return "returned a table with a metatable, want a plain table" -- its metamethods would run outside the budget
  end
  if type(rule.code) ~= "string" or not rule.code:match("^[a-z0-9][a-z0-9-]*$") then
    return "code must be a lower-case name like \"reserved-idle\""
  end
  if not (LEVELS[rule.level] or type(rule.level) == "function") then
    return string.format("level of %s must be OK, WARN, BAD, ERROR or a function(policy)", rule.code)
  end
  if rule.evaluate_fleet ~= nil and type(rule.evaluate_fleet) ~= "function" then
    return string.format("evaluate_fleet of %s must be a function(fleet, policy, emit)", rule.code)
  end
  if type(rule.evaluate) ~= "function" and not (rule.evaluate == nil and rule.evaluate_fleet) then
    return string.format("evaluate of %s must be a function(ledger, policy, emit)", rule.code)
  end
  if rule.order ~= nil and type(rule.order) ~= "number" then
    return string.format("order of %s must be a number", rule.code)
  end
  if rule.doc ~= nil and type(rule.doc) ~= "string" then
    return string.format("doc of %s must be a string", rule.code)
  end
  if rule["for"] ~= nil and not M.is_duration(rule["for"]) then
    return string.format("[\"for\"] of %s must be a duration like \"10m\" or \"1h30m\"", rule.code)
  end
end

-- Lists the rule file stems: embedded rules/*.lua and the site's *.lua, but
-- not thresholds. Returns stems (sorted) and errors for badly named files.
local function rule_stems(core, rules_dir)
  local seen, stems, problems = {}, {}, {}
  local function add(stem)
    if stem ~= "thresholds" and not seen[stem] then
      seen[stem] = true
      stems[#stems + 1] = stem
    end
  end
  for _, path in ipairs(core.embedded_files("rules/")) do
    local stem = path:match("^rules/([%w_%-]+)%.lua$")
    if stem then
      add(stem)
    end
  end
  if rules_dir ~= "" and core.stat(rules_dir) == "dir" then
    for _, name in ipairs(core.listdir(rules_dir) or {}) do
      if name:sub(-4) == ".lua" then
        local stem = name:match(SITE_NAME)
        if stem then
          add(stem)
        else
          problems[#problems + 1] = errors.new(rules_dir .. "/" .. name, nil, "a rule file is named with letters, digits, _ and - only")
        end
      end
    end
  end
  table.sort(stems)
  return stems, problems
end

-- Wraps a rule's level function so that it, too, runs under the load
-- budget; a level function that fails or answers nonsense gives ERROR and,
-- second, why.
local function limited_level(core, level)
  return function(policy)
    local ok, value = core.call_limited(level, LOAD_INSTRUCTIONS, LOAD_BYTES, policy)
    if not ok then
      return "ERROR", "its level function failed: " .. errors.text(errors.of_call(value))
    elseif not LEVELS[value] then
      return "ERROR", string.format("its level function returned %s, want OK, WARN, BAD or ERROR",
        type(value) == "string" and string.format("%q", value) or ("a " .. type(value)))
    end
    return value
  end
end

-- Budget keys of the thresholds: positive integers, or a site could lift them.
local BUDGET_KEYS = { "rule_instructions", "rule_memory_bytes" }

-- Loads the thresholds: the embedded defaults, then the site's file over
-- them. Returns thresholds and a list of errors.
local function load_thresholds(core, rules_dir)
  local problems = {}
  local text, chunkname = core.embedded_text("rules/thresholds.lua")
  local thresholds = assert(run_file(core, text, chunkname, sandbox.environment()))
  local default_budget = {}
  for _, key in ipairs(BUDGET_KEYS) do
    default_budget[key] = thresholds[key]
  end
  local site_path = rules_dir ~= "" and (rules_dir .. "/thresholds.lua")
  if site_path and core.stat(site_path) == "file" then
    local site_text, read_error = core.read_file(site_path, 1024 * 1024)
    local site, why
    if site_text then
      site, why = run_file(core, site_text, "@" .. site_path, sandbox.environment())
    else
      why = errors.new(nil, nil, read_error)
    end
    if type(site) == "table" then
      for key, value in next, site do -- raw: no metamethod of the site's runs here
        thresholds[key] = value
      end
      for _, key in ipairs(BUDGET_KEYS) do
        local value = thresholds[key]
        if math.type(value) ~= "integer" or value <= 0 then
          problems[#problems + 1] = errors.new(site_path, nil, key .. " must be a positive integer; the default stays")
          thresholds[key] = default_budget[key]
        end
      end
    else
      problems[#problems + 1] = why or errors.new(site_path, nil, string.format("returned a %s, want a table of thresholds", type(site)))
    end
  end
  return thresholds, problems
end

-- Loads the effective rule set with core (embedded_text, embedded_files, read_file, …)
-- from rules_dir ("" for none). Returns {rules = {…}, thresholds = {…},
-- errors = {{file, line, message} (errors.lua), …}}; each rule is the file's table plus
-- file (the stem) and origin (a site path or "embedded").
function M.load(core, rules_dir)
  rules_dir = rules_dir or ""
  local set = { rules = {}, errors = {} }
  local thresholds, threshold_errors = load_thresholds(core, rules_dir)
  set.thresholds = thresholds
  for _, err in ipairs(threshold_errors) do
    set.errors[#set.errors + 1] = err
  end
  local stems, name_errors = rule_stems(core, rules_dir)
  for _, err in ipairs(name_errors) do
    set.errors[#set.errors + 1] = err
  end

  local by_code = {}
  for _, stem in ipairs(stems) do
    -- the site's copy in rules_dir, else the embedded default; nil and why
    -- when the site's copy cannot be read
    local text, chunkname, found_in = core.search_script(stem, rules_dir, "rules/")
    if not text then
      set.errors[#set.errors + 1] = errors.new(nil, nil, chunkname) -- the read's cause, naming the file
    else
      local env = sandbox.environment { gl = sandbox.readonly(gl) }
      local rule, why = run_file(core, text, chunkname, env)
      local where = found_in == "site" and chunkname:sub(2) or "embedded" -- the site path, for people
      if rule == nil then
        set.errors[#set.errors + 1] = why
      elseif rule ~= false then
        local problem = check_rule(rule)
        if problem then
          set.errors[#set.errors + 1] = errors.new(chunkname:sub(2), nil, problem)
        elseif by_code[rule.code] then
          set.errors[#set.errors + 1] = errors.new(where, nil,
            string.format("code %s is already defined by %s", rule.code, by_code[rule.code].origin))
        else
          rule.file = stem
          rule.origin = where
          if type(rule.level) == "function" then
            rule.level = limited_level(core, rule.level)
          end
          by_code[rule.code] = rule
          set.rules[#set.rules + 1] = rule
        end
      end
    end
  end
  return set
end

-- The level a rule gives its findings under policy; when its level
-- function fails, "ERROR" and why.
function M.level_of(rule, policy)
  if type(rule.level) == "function" then
    local ok, level, why = pcall(rule.level, sandbox.readonly(policy))
    if ok and LEVELS[level] then
      return level, why
    end
    return "ERROR", why or (not ok and sandbox.error_text(level)) or "its level function gave no level"
  end
  return rule.level
end

-- The default codes in the order of SPEC §3.5, which metrics and listings
-- follow; site codes come after them, by name.
local CODE_ORDER = {
  "source-unavailable", "unreserved-tenant", "unmanaged-tenant", "contended", "reserved-idle",
  "encoder-saturated", "hot", "idle", "held",
}
local CODE_RANK = {}
for i, code in ipairs(CODE_ORDER) do
  CODE_RANK[code] = i
end

-- Every code of the set with its level under policy: [{code=, level=}],
-- in SPEC §3.5 order, then the site's codes by name (for the zero series of
-- gpuledger_findings and for `gpuledger rules`).
function M.codes(set, policy)
  local codes = {}
  for _, rule in ipairs(set.rules) do
    codes[#codes + 1] = { code = rule.code, level = M.level_of(rule, policy) }
  end
  table.sort(codes, function(a, b)
    local rank_a, rank_b = CODE_RANK[a.code] or math.huge, CODE_RANK[b.code] or math.huge
    if rank_a ~= rank_b then
      return rank_a < rank_b
    end
    return a.code < b.code
  end)
  return codes
end

return M
