-- Where the program runs site code: never in its own process. Each rule
-- file is loaded, given its level and evaluated in a child of its own
-- (core.run_isolated) under a wall-clock deadline and a memory limit, and
-- only its findings come back, as JSON; a file past its deadline is a
-- rule-error naming it, and the other files' findings stand. One child per
-- file keeps that simple: a child that is killed takes only its own file's
-- work with it, so nothing has to be rerun or told apart afterwards. The
-- renderers, which a site may replace from the scripts directory, run in a
-- child too when there is a scripts directory (docs/rules.md, "What a site
-- gets").
local errors = require "gpuledger.errors"
local findings = require "gpuledger.findings"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"
local sandbox = require "gpuledger.sandbox"

local M = {}

-- Each rule file's deadline (loading it, its level, its evaluations), the
-- whole set's, and the renderers'.
M.FILE_DEADLINE_MS = 2000
M.SET_DEADLINE_MS = 10000
M.RENDER_DEADLINE_MS = 5000

-- value with every float that is a whole number made an integer again
-- (JSON gives floats; a GPU's index, the budgets must be integers).
local function integers(value)
  if type(value) == "table" then
    for k, v in pairs(value) do
      value[k] = integers(v)
    end
    return value
  end
  return math.type(value) == "float" and math.tointeger(value) or value
end

-- Runs fn() in a child under deadline_ms; returns what it returned (a
-- JSON-encodable value, whole numbers as integers), or nil and why it did
-- not.
local function in_child(core, deadline_ms, fn)
  local answer, why = core.run_isolated(function()
    return json.encode(fn())
  end, { deadline_ms = math.max(1, deadline_ms) })
  if not answer then
    return nil, why
  end
  local value, bad = json.decode(answer)
  if value == nil then
    return nil, bad
  end
  return integers(value)
end

-- The child's work for the rule files `stems` of sources: load them with
-- data (the thresholds and the Xid catalogue, plain data), give each rule
-- its level under the policy and evaluate it on each ledger. Returns
-- {errors = [text], rules = [row], found = [[finding]] per ledger}.
local function run_files(core, sources, stems, data, given, ledgers)
  local set = ruleset.compile(core, sources, stems, data)
  local policy = judge.policy(set, given)
  local out = { errors = json.array(), rules = json.array(), found = json.array() }
  for _, err in ipairs(set.errors) do
    out.errors[#out.errors + 1] = errors.text(err)
  end
  for _, rule in ipairs(set.rules) do
    local level, why = ruleset.level_of(rule, policy)
    out.rules[#out.rules + 1] = {
      code = rule.code, level = level, level_error = why, doc = rule.doc, order = rule.order,
      ["for"] = rule["for"], file = rule.file, origin = rule.origin,
      node = rule.evaluate ~= nil, fleet = rule.evaluate_fleet ~= nil, -- what it judges
    }
  end
  local without_errors = { rules = set.rules, errors = {} }
  for i, ledger in ipairs(ledgers) do
    out.found[i] = json.array(findings.run(core, without_errors, ledger, policy))
  end
  return out
end

-- The data files of sources (the embedded thresholds and Xid catalogue
-- with the site's files over them), loaded in a child and brought back as
-- plain data, so that no site code comes with them: {thresholds,
-- xid_catalogue}; and the errors of the data files and of the files'
-- names, as text. When the child fails, the embedded data and why.
function M.data_of(core, sources)
  local out, why = in_child(core, M.FILE_DEADLINE_MS, function()
    local set = ruleset.compile(core, sources, {})
    local texts = json.array()
    for _, err in ipairs(set.errors) do
      texts[#texts + 1] = errors.text(err)
    end
    return { thresholds = set.thresholds, xid_catalogue = set.xid_catalogue, errors = texts }
  end)
  if not out then
    local files = {}
    for _, stem in ipairs(ruleset.DATA_FILES) do
      files[#files + 1] = sources.data[stem] and sources.data[stem].path
    end
    local named = #files > 0 and table.concat(files, ", ") or "the rules' data files"
    return ruleset.embedded_data(core), { string.format("%s: %s; the embedded defaults stay", named, why) }
  end
  local catalogue = {} -- JSON keys are strings; the catalogue is by Xid code
  for code, entry in pairs(out.xid_catalogue or {}) do
    catalogue[math.tointeger(tonumber(code)) or code] = entry
  end
  return { thresholds = out.thresholds, xid_catalogue = catalogue }, out.errors
end

-- The groups of stems that run in a child each: the embedded rules (the
-- program's) together, then each site file alone.
local function groups_of(sources)
  local embedded, groups = {}, {}
  for _, stem in ipairs(sources.stems) do
    local file = sources.files[stem]
    if file.found_in == "embedded" then
      embedded[#embedded + 1] = stem
    else
      groups[#groups + 1] = { stem }
    end
  end
  table.insert(groups, 1, embedded)
  return groups
end

-- Judges each of ledgers (built ledgers, judge.lua) with the rule set of
-- sources (ruleset.read) under the operator's policy choices `given`, site
-- code only in children: the data files in one, the embedded rules in one,
-- each site file in its own, under FILE_DEADLINE_MS each and
-- SET_DEADLINE_MS for the site files together. A child that fails is a
-- rule-error naming its file(s). Returns the set as the program shows it
-- ({rules = rows {code, level, level_error?, doc, order, for, file,
-- origin, node, fleet}, errors = [text]}, levels already given) and the
-- findings of each ledger, in order. extra_errors: more errors (text) of the
-- set, nil for none; data: {data, errors} of M.data_of when already had, nil
-- to get them.
function M.judge_rules(core, sources, given, ledgers, extra_errors, data)
  local set = { rules = {}, errors = {} }
  local all = {}
  for i = 1, #ledgers do
    all[i] = {}
  end
  local data_errors
  if data then
    data, data_errors = data[1], data[2]
  else
    data, data_errors = M.data_of(core, sources)
  end
  for _, text in ipairs(data_errors) do
    set.errors[#set.errors + 1] = text
  end
  local started = core.now()
  local by_code = {}
  for _, stems in ipairs(groups_of(sources)) do
    local left_ms = M.SET_DEADLINE_MS - math.floor((core.now() - started) * 1000)
    local out, why
    if left_ms <= 0 then
      why = string.format("not run: the site's rules took longer than their deadline of %d ms together", M.SET_DEADLINE_MS)
    else
      out, why = in_child(core, math.min(M.FILE_DEADLINE_MS, left_ms), function()
        return run_files(core, sources, stems, data, given, ledgers)
      end)
    end
    if not out then
      out = { errors = {}, rules = {}, found = {} }
      for _, stem in ipairs(stems) do
        out.errors[#out.errors + 1] = string.format("%s: %s", ruleset.file_name(sources, stem), why)
      end
    end
    for _, text in ipairs(out.errors) do
      set.errors[#set.errors + 1] = text
    end
    local dropped = {} -- codes of this group already defined by an earlier one
    for _, rule in ipairs(out.rules) do
      if by_code[rule.code] then
        set.errors[#set.errors + 1] = string.format("%s: code %s is already defined by %s", rule.origin, rule.code, by_code[rule.code].origin)
        dropped[rule.code] = true
      else
        by_code[rule.code] = rule
        set.rules[#set.rules + 1] = rule
      end
    end
    for i = 1, #ledgers do
      for _, finding in ipairs(out.found[i] or {}) do
        if not dropped[finding.code] then
          all[i][#all[i] + 1] = finding
        end
      end
    end
  end
  for _, text in ipairs(extra_errors or {}) do
    set.errors[#set.errors + 1] = text
  end
  for i, ledger in ipairs(ledgers) do
    local errors_first = {}
    for _, text in ipairs(set.errors) do
      errors_first[#errors_first + 1] = findings.rule_error(ledger, text)
    end
    for _, finding in ipairs(all[i]) do
      errors_first[#errors_first + 1] = finding
    end
    all[i] = json.array(findings.ordered(errors_first, ledger))
  end
  return set, all
end

-- Judges input (a snapshot or a built ledger) as judge.judge does, with the
-- history h, the rules of sources (nil: no rules, ls) run by M.judge_rules
-- (with extra_errors). Returns the report.
function M.judge(core, input, sources, given, h, extra_errors)
  if not sources then
    return judge.judge(core, input, nil, nil, h)
  end
  local data, data_errors = M.data_of(core, sources)
  -- the ledger, graded by the site's Xid catalogue (data): no rule runs here
  local report = judge.judge(core, input, { rules = {}, errors = {}, xid_catalogue = data.xid_catalogue }, {}, h)
  do
    local set, found = M.judge_rules(core, sources, given, { report.ledger }, extra_errors, { data, data_errors })
    report.findings = found[1]
    report.codes = ruleset.codes(set)
    report.rules = { loaded = #set.rules, errors = #set.errors }
    report.worst = findings.worst(report.findings)
    report.counts = findings.counts(report.findings)
  end
  return report
end

-- Runs render() (which returns a string, or a table of strings) where the
-- site's scripts can run: in a child under the renderers' deadline, with
-- the site's modules of scripts_dir in place of the program's, when
-- scripts_dir is a directory; here otherwise. Returns its result, or nil
-- and why.
function M.render(core, scripts_dir, render)
  if scripts_dir == "" or core.stat(scripts_dir) ~= "dir" then
    return render()
  end
  return in_child(core, M.RENDER_DEADLINE_MS, function()
    for name in pairs(package.loaded) do
      if name:match("^gpuledger%.") and name ~= "gpuledger.core" then
        package.loaded[name] = nil
      end
    end
    sandbox.install_searcher(core, scripts_dir)
    return render()
  end)
end

return M
