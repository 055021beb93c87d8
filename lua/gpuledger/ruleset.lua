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

-- Runs a chunk in env under the load budget: a site file's text, or an
-- embedded file (origin "embedded"), which may be bytecode (a release build
-- embeds the defaults precompiled). Returns its value, or nil and the error
-- (errors.lua: its file, and line when it has one).
local function run_file(core, text, chunkname, env, origin)
  local file = chunkname:sub(2)
  local chunk, why = load(text, chunkname, origin == "embedded" and "bt" or "t", env)
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
  if rule.health ~= nil and type(rule.health) ~= "boolean" then
    return string.format("health of %s must be true or false", rule.code)
  end
  if rule.doc ~= nil and type(rule.doc) ~= "string" then
    return string.format("doc of %s must be a string", rule.code)
  end
  if rule["for"] ~= nil and not M.is_duration(rule["for"]) then
    return string.format("[\"for\"] of %s must be a duration like \"10m\" or \"1h30m\"", rule.code)
  end
end

-- The files of rules/ that hold data, not a rule.
local DATA_FILES = { thresholds = true, xid_catalogue = true }

-- Lists the rule file stems: embedded rules/*.lua and the site's *.lua, but
-- not the data files. Returns stems (sorted) and errors for badly named files.
local function rule_stems(core, rules_dir)
  local seen, stems, problems = {}, {}, {}
  local function add(stem)
    if not DATA_FILES[stem] and not seen[stem] then
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

-- The data files of the rules directory (not rules): M.read reads them.
M.DATA_FILES = { "thresholds", "xid_catalogue" }

-- Loads the data file rules/<stem>.lua: the embedded default, and the
-- site's copy (site_file: {path, text} or {path, error} from M.read, or
-- nil for none). Returns the default, then the site's table (nil when there
-- is none, or it is broken), its path, and why it is broken (errors.lua;
-- `what` names what the table should hold).
local function load_data_file(core, site_file, stem, what)
  local text, chunkname = core.embedded_text("rules/" .. stem .. ".lua")
  local default = assert(run_file(core, text, chunkname, sandbox.environment(), "embedded"))
  if not site_file then
    return default
  end
  local site_path, site_text = site_file.path, site_file.text
  if not site_text then
    return default, nil, site_path, errors.new(nil, nil, site_file.error)
  end
  local site, why = run_file(core, site_text, "@" .. site_path, sandbox.environment(), "site")
  if type(site) ~= "table" then
    return default, nil, site_path, why or errors.new(site_path, nil, string.format("returned a %s, want a table of %s", type(site), what))
  end
  return default, site, site_path
end

-- Loads the thresholds: the embedded defaults, then the site's file over
-- them. Returns thresholds and a list of errors.
local function load_thresholds(core, site_file)
  local thresholds, site, site_path, broken = load_data_file(core, site_file, "thresholds", "thresholds")
  local problems = { broken }
  if site then
    local default_budget = {}
    for _, key in ipairs(BUDGET_KEYS) do
      default_budget[key] = thresholds[key]
    end
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
  end
  return thresholds, problems
end

local XID_CLASSES = { reset = true, reboot = true, memory = true, app = true, ignore = true }

-- Why a catalogue entry is not one ({class, nonfatal?, meaning, action}), or nil.
local function xid_entry_problem(code, entry)
  if math.type(code) ~= "integer" or type(entry) ~= "table" then
    return "entries are [code] = {class=, meaning=, action=}"
  elseif not XID_CLASSES[entry.class] or (entry.nonfatal ~= nil and not XID_CLASSES[entry.nonfatal]) then
    return string.format("Xid %d: class must be reset, reboot, memory, app or ignore", code)
  elseif type(entry.meaning) ~= "string" or type(entry.action) ~= "string" then
    return string.format("Xid %d: meaning and action must be strings", code)
  end
end

-- Loads the Xid catalogue: the embedded one, then each code of the site's
-- xid_catalogue.lua over it (the fields the site sets replace those of the
-- code; a new code is added). Returns the catalogue and a list of errors
-- (a broken site file, or entry, leaves the defaults in place).
local function load_xid_catalogue(core, site_file)
  local catalogue, site, site_path, broken = load_data_file(core, site_file, "xid_catalogue", "Xid codes")
  if not site then
    return catalogue, { broken }
  end
  local problems = {}
  for code, fields in next, site do -- raw: no metamethod of the site's runs here
    local entry = {}
    for key, value in pairs(catalogue[code] or {}) do
      entry[key] = value
    end
    for key, value in next, type(fields) == "table" and fields or {} do
      entry[key] = value
    end
    local problem = xid_entry_problem(code, type(fields) == "table" and entry or fields)
    if problem then
      problems[#problems + 1] = errors.new(site_path, nil, problem .. "; the default stays")
    else
      catalogue[code] = entry
    end
  end
  return catalogue, problems
end

-- The embedded thresholds and Xid catalogue alone (the program's): the
-- data M.compile takes.
function M.embedded_data(core)
  return { thresholds = (load_thresholds(core, nil)), xid_catalogue = (load_xid_catalogue(core, nil)) }
end

-- The data files of sources (M.read): the thresholds and the Xid catalogue,
-- the site's over the embedded defaults. Returns {thresholds,
-- xid_catalogue} and the errors ({file, line, message}) of the site's files
-- that could not be taken (what they broke keeps its default).
function M.load_data(core, sources)
  local thresholds, data_errors = load_thresholds(core, sources.data.thresholds)
  local catalogue, catalogue_errors = load_xid_catalogue(core, sources.data.xid_catalogue)
  table.move(catalogue_errors, 1, #catalogue_errors, #data_errors + 1, data_errors)
  return { thresholds = thresholds, xid_catalogue = catalogue }, data_errors
end

-- Reads the texts of the effective rule set with core (embedded_text,
-- embedded_files, read_file, search_script …) from rules_dir ("" for none),
-- running none of them. Returns the sources M.compile takes: {dir, stems
-- (sorted), files = {[stem] = {text, chunkname, found_in} or {error}},
-- data = {[thresholds|xid_catalogue] = {path, text} or {path, error}},
-- problems (errors of badly named files)}.
function M.read(core, rules_dir)
  rules_dir = rules_dir or ""
  local sources = { dir = rules_dir, files = {}, data = {} }
  sources.stems, sources.problems = rule_stems(core, rules_dir)
  for _, stem in ipairs(M.DATA_FILES) do
    local site_path = rules_dir ~= "" and string.format("%s/%s.lua", rules_dir, stem)
    if site_path and core.stat(site_path) == "file" then
      local text, why = core.read_file(site_path, 1024 * 1024)
      sources.data[stem] = { path = site_path, text = text, error = why }
    end
  end
  for _, stem in ipairs(sources.stems) do
    -- the site's copy in rules_dir, else the embedded default; nil and why
    -- when the site's copy cannot be read
    local text, chunkname, found_in = core.search_script(stem, rules_dir, "rules/")
    sources.files[stem] = text and { text = text, chunkname = chunkname, found_in = found_in }
      or { error = chunkname } -- the read's cause, naming the file
  end
  return sources
end

-- Where a rule file of sources comes from, for people: the site path, or
-- "embedded rules/<stem>.lua".
function M.file_name(sources, stem)
  local file = sources.files[stem]
  if file and file.found_in == "site" then
    return file.chunkname:sub(2)
  end
  return string.format("embedded rules/%s.lua", stem)
end

-- A rule as the set keeps it: a copy of the fields the file's table had
-- when it was checked, so that nothing the rule does to its own table later
-- (a new level, a metatable) changes it.
local function frozen(rule, stem, where)
  return {
    code = rule.code, level = rule.level, evaluate = rule.evaluate, evaluate_fleet = rule.evaluate_fleet,
    health = rule.health, order = rule.order, doc = rule.doc, ["for"] = rule["for"], file = stem, origin = where,
  }
end

-- Compiles the rule set from sources (M.read), running each file in its
-- sandbox under the load budget. only: nil for every file, or the list of
-- stems to load; with a list, the set's errors are only those files' (not
-- the data files' nor the names'). data: nil to load the thresholds and
-- the Xid catalogue from sources, or {thresholds, xid_catalogue} to take as
-- they are. Returns {rules = {…}, thresholds = {…}, xid_catalogue = {…},
-- errors = {{file, line, message} (errors.lua), …}}; each rule is a frozen
-- copy of the file's table plus file (the stem) and origin (a site path or
-- "embedded").
function M.compile(core, sources, only, data)
  local set = { rules = {}, errors = {} }
  local data_errors = {}
  if not data then
    data, data_errors = M.load_data(core, sources)
  end
  set.thresholds, set.xid_catalogue = data.thresholds, data.xid_catalogue
  if not only then
    for _, err in ipairs(data_errors) do
      set.errors[#set.errors + 1] = err
    end
    for _, err in ipairs(sources.problems) do
      set.errors[#set.errors + 1] = err
    end
  end

  local by_code = {}
  for _, stem in ipairs(only or sources.stems) do
    local file = sources.files[stem]
    if file.error then
      set.errors[#set.errors + 1] = errors.new(nil, nil, file.error)
    else
      local env = sandbox.environment { gl = sandbox.readonly(gl) }
      local rule, why = run_file(core, file.text, file.chunkname, env, file.found_in)
      local where = file.found_in == "site" and file.chunkname:sub(2) or "embedded" -- the site path, for people
      if rule == nil then
        set.errors[#set.errors + 1] = why
      elseif rule ~= false then
        local problem = check_rule(rule)
        if problem then
          set.errors[#set.errors + 1] = errors.new(file.chunkname:sub(2), nil, problem)
        elseif by_code[rule.code] then
          set.errors[#set.errors + 1] = errors.new(where, nil,
            string.format("code %s is already defined by %s", rule.code, by_code[rule.code].origin))
        else
          rule = frozen(rule, stem, where)
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
