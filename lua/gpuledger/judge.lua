-- The one judge (docs/architecture.md): a snapshot, or a ledger already
-- built (fleet reads them from other nodes), becomes a report
-- {ledger, findings, worst, counts, codes, rules}. Every command and the
-- specs go through it; renderers take its report and decide nothing. It
-- takes the rule set as its sources (ruleset.read), never compiled: the
-- program's own rules (embedded) run here, each site rule file in a child
-- of its own under a deadline (isolated.lua), so no command can run site
-- code in the program's process.
local errors = require "gpuledger.errors"
local findings = require "gpuledger.findings"
local history = require "gpuledger.history"
local isolated = require "gpuledger.isolated"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local ruleset = require "gpuledger.ruleset"

local M = {}

-- The ledger of input: a snapshot is built into one (catalogue, the Xid
-- catalogue of M.data, grading its Xid events; nil for none, which leaves
-- every Xid ungraded); a ledger (it has entries) is taken as it is, its
-- tenants' verdicts given where missing.
function M.ledger_of(input, catalogue)
  if input.entries then
    ledger_mod.give_verdicts(input)
    return input
  end
  return ledger_mod.build(input, catalogue)
end

-- Applies the history to ledger: with `record` (a history), the ledger is
-- first observed into it when `observe` is true (serve) and then annotated
-- with each GPU's stateSince; with `error` (the history could not be read),
-- that becomes a source error "history: …" of the ledger (SPEC §7).
local function apply_history(ledger, h)
  if h.error then
    ledger.errors = ledger.errors or json.array()
    ledger.errors[#ledger.errors + 1] = "history: " .. h.error
    return
  end
  if h.observe then
    history.observe(h.record, ledger, h.max_gap)
  end
  history.annotate(h.record, ledger, h.max_gap)
end

-- The policy the rules of set judge by: the set's thresholds with the
-- operator's choices (config.policy: only what was given) over them.
function M.policy(set, given)
  local policy = {}
  for key, value in pairs(set.thresholds) do
    policy[key] = value
  end
  for key, value in pairs(given or {}) do
    policy[key] = value
  end
  return policy
end

-- The work of the rule files `stems` of sources (here for the embedded
-- rules, in a child for a site file): load them with data (the thresholds
-- and the Xid catalogue, plain data), give each rule its level under the
-- policy, evaluate it on each ledger and, with a fleet view, the rules that
-- see the fleet on it. Returns {errors = [text], rules = [row], found =
-- [[finding]] per ledger, fleet = [finding]}.
local function run_files(core, sources, stems, data, given, ledgers, view)
  local set = ruleset.compile(core, sources, stems, data)
  local policy = M.policy(set, given)
  local out = { errors = json.array(), rules = json.array(), found = json.array(), fleet = json.array() }
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
  for i, ledger in ipairs(ledgers) do
    out.found[i] = json.array(findings.run(core, set.rules, ledger, policy))
  end
  if view then
    out.fleet = json.array(findings.evaluate_fleet(core, set.rules, view, policy))
  end
  return out
end

-- The stems of sources by where they run: the embedded rules (the
-- program's, here) and the site's files (each in a child).
local function embedded_and_site(sources)
  local embedded, site = {}, {}
  for _, stem in ipairs(sources.stems) do
    local list = sources.files[stem].found_in == "embedded" and embedded or site
    list[#list + 1] = stem
  end
  return embedded, site
end

-- Judges each of ledgers (built ledgers, M.ledger_of) and, when view (the
-- fleet's summary as rules read it, fleet.view) is given, the fleet, with
-- the rule set of sources (ruleset.read) under the operator's policy
-- choices `given`: the embedded rules here, each site file in a child of
-- its own (isolated.call) under isolated.FILE_DEADLINE_MS, the site files
-- under isolated.SET_DEADLINE_MS together; the site's data files in a child
-- too (isolated.data_of). A file that fails is a rule-error naming it and
-- the other files' findings stand. extra_errors: more errors (text) of the
-- set, nil for none; data: {data, errors} of isolated.data_of when already
-- had, nil to get them. Returns the set as the program shows it ({rules =
-- rows {code, level, level_error?, doc, order, for, file, origin, node,
-- fleet}, errors = [text]}, levels already given), the findings of each
-- ledger in order (the set's errors first, as rule-errors), and the
-- fleet's findings (about the node "fleet"; none without view).
function M.rules(core, sources, given, ledgers, view, extra_errors, data)
  local set, by_code = { rules = {}, errors = {} }, {}
  local found, fleet_found = {}, json.array()
  for i = 1, #ledgers do
    found[i] = {}
  end
  local data_errors
  if data then
    data, data_errors = data[1], data[2]
  else
    data, data_errors = isolated.data_of(core, sources)
  end
  table.move(data_errors, 1, #data_errors, 1, set.errors)
  for _, problem in ipairs(sources.problems) do -- files named so that they are no rule
    set.errors[#set.errors + 1] = errors.text(problem)
  end

  -- adds the work of one group of files (run_files) to the set; a code
  -- already defined by an earlier group is an error, its findings dropped
  local function take(out)
    table.move(out.errors, 1, #out.errors, #set.errors + 1, set.errors)
    local dropped = {}
    for _, rule in ipairs(out.rules) do
      if by_code[rule.code] then
        set.errors[#set.errors + 1] = string.format("%s: code %s is already defined by %s", rule.origin, rule.code, by_code[rule.code].origin)
        dropped[rule.code] = true
      else
        by_code[rule.code] = rule
        set.rules[#set.rules + 1] = rule
      end
    end
    local function keep(list, into)
      for _, finding in ipairs(list or {}) do
        if not dropped[finding.code] then
          into[#into + 1] = finding
        end
      end
    end
    for i = 1, #ledgers do
      keep(out.found[i], found[i])
    end
    keep(out.fleet, fleet_found)
  end

  local embedded, site = embedded_and_site(sources)
  take(run_files(core, sources, embedded, data, given, ledgers, view))
  local started = core.now()
  for _, stem in ipairs(site) do
    local left_ms = isolated.SET_DEADLINE_MS - math.floor((core.now() - started) * 1000)
    local out, why
    if left_ms <= 0 then
      why = string.format("not run: the site's rules took longer than their deadline of %d ms together", isolated.SET_DEADLINE_MS)
    else
      out, why = isolated.call(core, math.min(isolated.FILE_DEADLINE_MS, left_ms), function()
        return run_files(core, sources, { stem }, data, given, ledgers, view)
      end)
    end
    take(out or { errors = { string.format("%s: %s", ruleset.file_name(sources, stem), why) }, rules = {}, found = {} })
  end
  for _, text in ipairs(extra_errors or {}) do
    set.errors[#set.errors + 1] = text
  end

  for i, ledger in ipairs(ledgers) do
    local errors_first = {}
    for _, text in ipairs(set.errors) do
      errors_first[#errors_first + 1] = findings.rule_error(ledger, text)
    end
    table.move(found[i], 1, #found[i], #errors_first + 1, errors_first)
    found[i] = json.array(findings.ordered(errors_first, ledger))
  end
  return set, found, fleet_found
end

-- The data files of the rule set of sources (ruleset.read), read as
-- M.rules reads them (the site's in a child): {data, errors}, which
-- M.rules takes, and whose data.xid_catalogue grades the ledgers it builds.
function M.data(core, sources)
  return { isolated.data_of(core, sources) }
end

-- Judges input (a snapshot or a built ledger) with the rule set of sources
-- (ruleset.read; nil: no rule runs, no finding) under the operator's
-- policy choices given (config.policy), as M.rules does, with extra_errors
-- (text, nil for none) among the set's errors. h: nil, or {record =
-- history, max_gap = seconds, observe = bool} or {error = why}. Returns the
-- report {ledger, findings, worst, counts, codes, rules = {loaded, errors}}.
function M.judge(core, input, sources, given, h, extra_errors)
  local data, data_errors
  if sources then
    data, data_errors = isolated.data_of(core, sources) -- the site's Xid catalogue grades the ledger
  end
  local ledger = M.ledger_of(input, data and data.xid_catalogue)
  if h then
    apply_history(ledger, h)
  end
  local report = { ledger = ledger, findings = json.array(), codes = {} }
  if sources then
    local set, found = M.rules(core, sources, given, { ledger }, nil, extra_errors, { data, data_errors })
    report.findings = found[1]
    report.codes = ruleset.codes(set)
    report.rules = { loaded = #set.rules, errors = #set.errors }
  end
  report.worst = findings.worst(report.findings)
  report.counts = findings.counts(report.findings)
  return report
end

return M
