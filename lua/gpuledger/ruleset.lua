-- The effective rule set: every default rule embedded in the binary, each
-- replaced by a site file of the same name in the rules directory, plus the
-- site's new files; and the thresholds, the embedded defaults with the
-- site's thresholds.lua over them. Each file runs in its own sandbox under a
-- time and memory budget; a file that fails becomes an error of the set
-- (reported as a rule-error finding), never a failure of the program.
local errors = require "gpuledger.errors"
local gl = require "gpuledger.gl"
local rule_data = require "gpuledger.rule_data"
local rule_file = require "gpuledger.rule_file"
local rule_schema = require "gpuledger.rule_schema"
local sandbox = require "gpuledger.sandbox"
local shape = require "gpuledger.sources.shape"

local M = {}

local LEVELS = rule_schema.LEVELS

local SITE_NAME = "^([%w_%-]+)%.lua$"

local GL = sandbox.readonly(gl) -- what every rule file sees as gl

-- Lists the rule file stems: embedded rules/*.lua and the site's *.lua, but
-- not the data files. Returns stems (sorted) and errors for badly named files.
local function rule_stems(core, rules_dir)
  local seen, stems, problems = {}, {}, {}
  local function add(stem)
    if not rule_data.is_data(stem) and not seen[stem] then
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
  local limited = rule_file.limited(core, level)
  return function(policy)
    local ok, value = limited(policy)
    if not ok then
      return "ERROR", "its level function failed: " .. errors.text(value)
    elseif not LEVELS[value] then
      return "ERROR", string.format("its level function returned %s, want OK, WARN, BAD or ERROR",
        type(value) == "string" and string.format("%q", value) or shape.what_is(value, "nil"))
    end
    return value
  end
end

-- Reads the texts of the effective rule set with core (embedded_text,
-- embedded_files, search_script …) from rules_dir ("" for none), running
-- none of them. Returns the sources M.compile takes: {dir, stems (sorted),
-- files = {[stem] = {text, chunkname, found_in} or {error}}, data = the
-- site's data files (rule_data.read), problems (errors of badly named
-- files)}.
function M.read(core, rules_dir)
  rules_dir = rules_dir or ""
  local sources = { dir = rules_dir, files = {}, data = rule_data.read(core, rules_dir) }
  sources.stems, sources.problems = rule_stems(core, rules_dir)
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

-- Runs a rule file (text, chunkname, found_in of M.read) in a sandbox of
-- its own; rule_file.run's answer.
local function run_rule(core, text, chunkname, found_in)
  return rule_file.run(core, text, chunkname, sandbox.environment { gl = GL }, found_in)
end

-- What a file returning false (the site's, at origin) switched off: the
-- embedded rule of its name {code, doc, file, origin, off = true}, or, when
-- there is none, only {file, origin, off}.
local function switched_off(core, stem, origin)
  local off = { file = stem, origin = origin, off = true }
  local text, chunkname = core.embedded_text("rules/" .. stem .. ".lua")
  local ok, default = false, nil
  if text then
    ok, default = run_rule(core, text, chunkname, "embedded")
  end
  if ok and type(default) == "table" then
    off.code, off.doc = default.code, default.doc
  end
  return off
end

-- Compiles the rule set from sources (M.read), running each file in its
-- sandbox under the load budget. only: nil for every file, or the list of
-- stems to load; with a list, the set's errors are only those files' (not
-- the data files' nor the names'). data: nil to load the data files from
-- sources, or {thresholds, xid_catalogue} (rule_data.load) to take as they
-- are. Returns {rules = {…}, off = {…}, thresholds = {…}, xid_catalogue =
-- {…}, errors = {{file, line, message} (errors.lua), …}}; each rule is a
-- copy of the file's table (rule_schema.copy) plus file (the stem) and
-- origin (a site path or "embedded"); off lists the defaults a site file
-- switched off by returning false ({code, doc, file, origin, off = true}).
-- Only false switches a default off: a file that returns nothing (an
-- empty file) is an error naming it, as is any other value not a rule.
function M.compile(core, sources, only, data)
  local set = { rules = {}, off = {}, errors = {} }
  local data_errors = {}
  if not data then
    data, data_errors = rule_data.load(core, sources.data)
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
      local ok, rule = run_rule(core, file.text, file.chunkname, file.found_in)
      local where = file.found_in == "site" and file.chunkname:sub(2) or "embedded" -- the site path, for people
      if not ok then
        set.errors[#set.errors + 1] = rule
      elseif rule == false then
        set.off[#set.off + 1] = switched_off(core, stem, where)
      else
        local problem = rule_schema.problem(rule)
        if problem then
          set.errors[#set.errors + 1] = errors.new(file.chunkname:sub(2), nil, problem)
        elseif by_code[rule.code] then
          set.errors[#set.errors + 1] = errors.new(where, nil,
            string.format("code %s is already defined by %s", rule.code, by_code[rule.code].origin))
        else
          rule = rule_schema.copy(rule, { file = stem, origin = where })
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

-- Every code of the set (its rules, or judge.rules' rows) with its level
-- under policy: [{code=, level=}], in listing order (for the zero series of
-- gpuledger_findings and for `gpuledger rules`): the codes whose rule has a
-- rank first, lowest rank first, then the others; by name within a rank.
function M.codes(set, policy)
  local codes = {}
  for _, rule in ipairs(set.rules) do
    codes[#codes + 1] = { code = rule.code, level = M.level_of(rule, policy), rank = rule.rank or math.huge }
  end
  table.sort(codes, function(a, b)
    if a.rank ~= b.rank then
      return a.rank < b.rank
    end
    return a.code < b.code
  end)
  for _, entry in ipairs(codes) do
    entry.rank = nil
  end
  return codes
end

return M
