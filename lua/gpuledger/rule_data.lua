-- The data files of the rules directory, which hold numbers and tables
-- the rules read rather than a rule: each is the embedded default with the
-- site's file of the same name over it, merged its own way. M.FILES is the
-- one list of them; a site's copy is found by the same lookup as a rule's
-- (core.search_script).
local errors = require "gpuledger.errors"
local rule_file = require "gpuledger.rule_file"
local sandbox = require "gpuledger.sandbox"

local M = {}

-- Budget keys of the thresholds: positive integers, or a site could lift them.
local BUDGET_KEYS = { "rule_instructions", "rule_memory_bytes" }

-- The thresholds: the site's keys over the defaults. Returns the errors of
-- the budget keys the site set wrong (their defaults stay).
local function merge_thresholds(thresholds, site, site_path)
  local problems = {}
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
  return problems
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

-- The Xid catalogue: each code of the site's over it (the fields the site
-- sets replace those of the code; a new code is added). Returns the errors
-- of the entries that could not be taken (their defaults stay).
local function merge_xid_catalogue(catalogue, site, site_path)
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
  return problems
end

-- The data files, each with what its table holds (for errors) and how the
-- site's table goes over the default (merge(default, site, site_path) →
-- errors).
M.FILES = {
  { stem = "thresholds", holds = "thresholds", merge = merge_thresholds },
  { stem = "xid_catalogue", holds = "Xid codes", merge = merge_xid_catalogue },
}

-- True when rules/<stem>.lua is a data file, not a rule.
function M.is_data(stem)
  for _, file in ipairs(M.FILES) do
    if file.stem == stem then
      return true
    end
  end
  return false
end

-- The site's copies of the data files in rules_dir ("" for none), read,
-- not run: {[stem] = {path, text} or {path, error}}, none for a file the
-- site does not have.
function M.read(core, rules_dir)
  local found = {}
  for _, file in ipairs(M.FILES) do
    local text, chunkname, found_in = core.search_script(file.stem, rules_dir, "rules/")
    local path = string.format("%s/%s.lua", rules_dir, file.stem)
    if not text then
      found[file.stem] = { path = path, error = chunkname } -- the read's cause, naming the file
    elseif found_in == "site" then
      found[file.stem] = { path = path, text = text }
    end
  end
  return found
end

-- Loads one data file: the embedded default, with the site's copy
-- (site_file from M.read, or nil) merged over it. Returns the table and a
-- list of errors (a broken site file leaves the default as it is).
local function load_file(core, file, site_file)
  local text, chunkname = core.embedded_text("rules/" .. file.stem .. ".lua")
  local _, default = assert(rule_file.run(core, text, chunkname, sandbox.environment(), "embedded"))
  if not site_file then
    return default, {}
  end
  if not site_file.text then
    return default, { errors.new(nil, nil, site_file.error) }
  end
  local ok, site = rule_file.run(core, site_file.text, "@" .. site_file.path, sandbox.environment(), "site")
  if not ok then
    return default, { site }
  elseif type(site) ~= "table" then
    return default, { errors.new(site_file.path, nil, string.format("returned a %s, want a table of %s", type(site), file.holds)) }
  end
  return default, file.merge(default, site, site_file.path)
end

-- The data: {[stem] = table} for every data file, the site's (site_files
-- from M.read; nil for none) over the embedded defaults, and the errors
-- ({file, line, message}) of the site's files that could not be taken
-- (what they broke keeps its default).
function M.load(core, site_files)
  local data, problems = {}, {}
  for _, file in ipairs(M.FILES) do
    local value, file_problems = load_file(core, file, site_files and site_files[file.stem])
    data[file.stem] = value
    table.move(file_problems, 1, #file_problems, #problems + 1, problems)
  end
  return data, problems
end

return M
