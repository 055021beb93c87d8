-- The one judge (docs/architecture.md): a snapshot, or a ledger already
-- built (fleet reads them from other nodes), becomes a report
-- {ledger, findings, worst, counts, codes, rules}; a fleet's summary and
-- ledgers become the fleet's (M.fleet). Every command and the
-- specs go through it; renderers take its report and decide nothing. It
-- takes the rule set as its sources (ruleset.read), never compiled: the
-- program's own rules (embedded) run here, each site rule file in a child
-- of its own under a deadline (isolated.lua), so no command can run site
-- code in the program's process.
local errors = require "gpuledger.errors"
local findings = require "gpuledger.findings"
local fleet = require "gpuledger.fleet"
local history = require "gpuledger.history"
local isolated = require "gpuledger.isolated"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local rule_schema = require "gpuledger.rule_schema"
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
-- that becomes a source error "history: …" of the ledger.
local function apply_history(ledger, h)
  if h.error then
    ledger.errors = ledger.errors or json.array()
    ledger.errors[#ledger.errors + 1] = "history: " .. h.error
    ledger.sourceErrors = ledger.sourceErrors or json.array()
    ledger.sourceErrors[#ledger.sourceErrors + 1] = { source = "history", message = "history: " .. h.error }
    return
  end
  if h.observe then
    history.observe(h.record, ledger, h.max_gap)
  end
  history.annotate(h.record, ledger, h.max_gap)
end

-- The policy the rules of set (a compiled set, or its data) judge by: its thresholds with the
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

-- The embedded rules of each rule set read (ruleset.read's sources), as
-- ruleset.compile gave them the first time they judged: a serve refresh
-- and a fleet poll judge with the same sources until a reload reads new
-- ones, and loading the files again was most of judging a small node.
-- Loading them needs no data (the thresholds and the Xid catalogue are
-- given to the rules as the policy at each judging), so the same rules
-- serve every judging of their sources; a file's locals live as long as
-- the set (docs/rules.md).
local EMBEDDED = setmetatable({}, { __mode = "k" }) -- sources → compiled set

-- The rule files `stems` of sources compiled (ruleset.compile), the
-- embedded ones (embedded: true) once per sources.
local function compiled(core, sources, stems, data, embedded)
  if not embedded then
    return ruleset.compile(core, sources, stems, data)
  end
  EMBEDDED[sources] = EMBEDDED[sources] or ruleset.compile(core, sources, stems, data)
  return EMBEDDED[sources]
end

-- The rule files `stems` of sources loaded (compiled; the embedded ones,
-- embedded true, once per sources) under the policy (data's thresholds,
-- the plain data of the set, with the choices given over them): {set,
-- prepared (its rules made ready under the policy, findings.prepare),
-- out = {errors = [text], rules = [row] (each rule with its level), off =
-- the defaults switched off (ruleset.compile), found = [[finding]] per
-- ledger, fleet = [finding]}}, out's findings yet to be judged.
local function load_files(core, sources, stems, data, given, embedded)
  local set = compiled(core, sources, stems, data, embedded)
  local prepared = findings.prepare(set.rules, M.policy(data, given))
  local out = { errors = json.array(), rules = json.array(), off = set.off, found = json.array(), fleet = json.array() }
  for _, err in ipairs(set.errors) do
    out.errors[#out.errors + 1] = errors.text(err)
  end
  for i, rule in ipairs(set.rules) do
    local level, why = prepared.levels[i], prepared.level_errors[i]
    out.rules[#out.rules + 1] = {
      code = rule.code, level = level, level_error = why, doc = rule.doc, order = rule.order, rank = rule.rank,
      ["for"] = rule["for"], file = rule.file, origin = rule.origin,
      node = rule.evaluate ~= nil, fleet = rule.evaluate_fleet ~= nil, -- what it judges
    }
  end
  return { set = set, prepared = prepared, out = out }
end

-- The findings of the rules of files (load_files) on ledger, in the order
-- they came (findings.run; with levels_only, each only its level).
local function judge_ledger(core, files, ledger, levels_only)
  return json.array(findings.run(core, files.prepared, ledger, levels_only))
end

-- The findings of the rules of files (load_files) that see the fleet on
-- view (fleet.view).
local function judge_fleet(core, files, view)
  return json.array(findings.evaluate_fleet(core, files.prepared, view))
end

-- The work of the rule files `stems` of sources (in a child for a site
-- file): load them (load_files), evaluate them on each ledger and, with a
-- fleet view, the rules that see the fleet on it. Returns load_files' out,
-- its findings judged.
local function run_files(core, sources, stems, data, given, ledgers, view)
  local files = load_files(core, sources, stems, data, given)
  for i, ledger in ipairs(ledgers) do
    files.out.found[i] = judge_ledger(core, files, ledger)
  end
  if view then
    files.out.fleet = judge_fleet(core, files, view)
  end
  return files.out
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

-- Adds to `into` the findings of list whose code is not dropped.
local function add_undropped(list, dropped, into)
  for _, finding in ipairs(list or {}) do
    if not dropped[finding.code] then
      into[#into + 1] = finding
    end
  end
end

-- Adds out, the work of one group of files (run_files), to judged {set,
-- by_code, found, fleet}: its errors and rules to the set, its findings to
-- each ledger's and the fleet's. A code that an earlier group defined is an
-- error, and this group's findings of it are dropped.
local function take(judged, out)
  local set = judged.set
  table.move(out.errors, 1, #out.errors, #set.errors + 1, set.errors)
  table.move(out.off or {}, 1, #(out.off or {}), #set.off + 1, set.off)
  local dropped = {}
  for _, rule in ipairs(out.rules) do
    local first = judged.by_code[rule.code]
    if first then
      set.errors[#set.errors + 1] = string.format("%s: code %s is already defined by %s", rule.origin, rule.code, first.origin)
      dropped[rule.code] = true
    else
      judged.by_code[rule.code] = rule
      set.rules[#set.rules + 1] = rule
    end
  end
  for i, found in ipairs(judged.found) do
    add_undropped(out.found[i], dropped, found)
  end
  add_undropped(out.fleet, dropped, judged.fleet)
end

-- A judging begun with the rule set of sources (ruleset.read) under the
-- choices given: {core, sources, given, set (its errors so far: the data
-- files', the badly named files'), data, site (the site's stems), embedded
-- (the embedded rules loaded: load_files)}. data_pair: what M.data gave,
-- when already had.
local function begin(core, sources, given, data_pair)
  local set = { rules = {}, off = {}, errors = {} }
  local data, data_errors = table.unpack(data_pair or M.data(core, sources))
  table.move(data_errors, 1, #data_errors, 1, set.errors)
  for _, problem in ipairs(sources.problems) do -- files named so that they are no rule
    set.errors[#set.errors + 1] = errors.text(problem)
  end
  local embedded, site = embedded_and_site(sources)
  return {
    core = core, sources = sources, given = given, set = set, data = data, site = site,
    embedded = load_files(core, sources, embedded, data, given, true),
  }
end

-- Ends judging (begin) of ledgers, which the embedded rules have judged
-- (embedded_found: their findings by ledger, judge_ledger), as M.rules
-- says: the embedded rules that see the fleet (with opts.view), each site
-- file in a child, the set's errors, each ledger's findings in order.
local function finish(judging, ledgers, embedded_found, opts)
  local core, sources, given, data, set = judging.core, judging.sources, judging.given, judging.data, judging.set
  local judged = { set = set, by_code = {}, found = {}, fleet = {} }
  for i = 1, #ledgers do
    judged.found[i] = {}
  end
  local embedded_out = judging.embedded.out
  embedded_out.found = embedded_found
  if opts.view then
    embedded_out.fleet = judge_fleet(core, judging.embedded, opts.view)
  end
  take(judged, embedded_out)
  local file_ms, set_ms = isolated.deadlines(#ledgers)
  local used_ms = 0 -- the CPU time of the site files' children, which the set's deadline counts
  for _, stem in ipairs(judging.site) do
    local left_ms = set_ms - used_ms
    local out, why, file_used_ms
    if left_ms <= 0 then
      why = string.format("not run: the site's rules used their %d ms of CPU time together", set_ms)
    else
      out, why, file_used_ms = isolated.call(core, math.min(file_ms, left_ms), function()
        return run_files(core, sources, { stem }, data, given, ledgers, opts.view)
      end)
      used_ms = used_ms + file_used_ms
    end
    take(judged, out or { errors = { string.format("%s: %s", ruleset.file_name(sources, stem), why) }, rules = {}, found = {} })
  end
  for _, text in ipairs(opts.extra_errors or {}) do
    set.errors[#set.errors + 1] = text
  end

  -- the set's errors as rule-errors, first: the fleet's once with a view, else each ledger's
  local fleet_found = json.array()
  for _, text in ipairs(opts.view and set.errors or {}) do
    fleet_found[#fleet_found + 1] = findings.fleet_rule_error(text)
  end
  table.move(judged.fleet, 1, #judged.fleet, #fleet_found + 1, fleet_found)
  local found = {}
  for i, ledger in ipairs(ledgers) do
    local all = {}
    for _, text in ipairs(opts.view and {} or set.errors) do
      all[#all + 1] = findings.rule_error(ledger, text)
    end
    table.move(judged.found[i], 1, #judged.found[i], #all + 1, all)
    found[i] = json.array(findings.ordered(all, ledger))
  end
  return set, found, fleet_found
end

-- Judges each of ledgers (built ledgers, M.ledger_of) and, when opts.view
-- (the fleet's summary as rules read it, fleet.view) is given, the fleet,
-- with the rule set of sources (ruleset.read) under the operator's policy
-- choices `given`: the embedded rules here, each site file in a child of its
-- own (isolated.call), the site files under the deadlines (CPU time) of
-- isolated.deadlines(#ledgers); the site's data files in a child too
-- (isolated.data_of). A file that fails is a rule-error naming it and the
-- other files' findings stand. opts (nil for none): view; extra_errors, more
-- errors (text) of the set; data, what M.data gave when already had.
-- Returns the set as the program shows it ({rules =
-- rows {code, level, level_error?, doc, order, rank, for, file, origin, node,
-- fleet}, off = the defaults a site file switched off ({code, doc, file,
-- origin, off = true}), errors = [text]}, levels already given), the findings of each
-- ledger in order, and the fleet's findings (about the node "fleet"; none
-- without a view). The set's errors are rule-errors once, first: in the
-- fleet's findings with a view, else in each ledger's.
function M.rules(core, sources, given, ledgers, opts)
  opts = opts or {}
  local judging = begin(core, sources, given, opts.data)
  local found = {}
  for i, ledger in ipairs(ledgers) do
    found[i] = judge_ledger(core, judging.embedded, ledger)
  end
  return finish(judging, ledgers, found, opts)
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
-- report {ledger, findings, worst, counts, codes, rules = {loaded, errors},
-- policy (the thresholds with the choices given over them, as the rules
-- saw them)}.
function M.judge(core, input, sources, given, h, extra_errors)
  local data = sources and M.data(core, sources) -- the site's Xid catalogue grades the ledger
  local ledger = M.ledger_of(input, data and data[1].xid_catalogue)
  if h then
    apply_history(ledger, h)
  end
  local report = { ledger = ledger, findings = json.array(), codes = {} }
  if sources then
    local set, found = M.rules(core, sources, given, { ledger }, { extra_errors = extra_errors, data = data })
    report.findings = found[1]
    report.codes = ruleset.codes(set)
    report.rules = { loaded = #set.rules, errors = #set.errors }
    report.policy = M.policy(data[1], given)
  end
  report.worst = findings.worst(report.findings)
  report.counts = findings.counts(report.findings)
  return report
end

-- Gives row (a summary's row or its total) its verdict from counts
-- (findings.counts): worst, badFindings, errorFindings.
local function give_verdict(row, counts)
  row.worst, row.badFindings, row.errorFindings = findings.worst_of(counts), counts.BAD, counts.ERROR
end

-- Gives each row of the summary its verdict from its findings
-- (node_findings: row → its findings, worst first; fleet.findings_of) and
-- the total its verdict from all of them, counted once a row, sorts the
-- rows worst first (fleet.sort_worst_first) and returns every finding, the
-- fleet rules' (fleet_found, may be nil) too, in one list
-- (fleet.merge_findings), and their counts per level.
function M.fleet_verdicts(summary, node_findings, fleet_found)
  local lists = {}
  local total = findings.counts(fleet_found or {})
  for _, row in ipairs(summary.nodes) do
    local list = fleet.findings_of(row, node_findings)
    local counts = findings.counts(list)
    lists[row] = { findings = list, counts = counts }
    give_verdict(row, counts)
    for level, n in pairs(counts) do
      total[level] = total[level] + n
    end
  end
  fleet.sort_worst_first(summary.nodes)
  give_verdict(summary.total, total)
  return fleet.merge_findings(summary, lists, fleet_found), total
end

-- The total's verdict from its rows' (each given its own) and the fleet
-- rules' findings (fleet_found): the worst of them, their BAD and ERROR
-- counts summed; what M.fleet_verdicts gives it from every finding.
local function total_verdict(summary, fleet_found)
  local total = summary.total
  give_verdict(total, findings.counts(fleet_found))
  for _, row in ipairs(summary.nodes) do
    if rule_schema.LEVELS[row.worst] > rule_schema.LEVELS[total.worst] then
      total.worst = row.worst
    end
    total.badFindings = total.badFindings + row.badFindings
    total.errorFindings = total.errorFindings + row.errorFindings
  end
end

-- Begins judging a fleet with the rule set of sources under the policy
-- choices given, as M.rules does: returns the judging, whose node(row,
-- ledger) judges one node's ledger (built, M.ledger_of) by the embedded
-- rules as soon as it is read, and which M.fleet ends. Without site files
-- the ledger is then in no table, so a fleet's ledgers are never all held
-- at once, and what keep says is kept of its findings: "findings" (the
-- default), the findings in order; "verdicts" (`fleet ls`), only its row's
-- verdict (worst, badFindings, errorFindings), its findings not even put
-- in order; a function of the findings in order and the row (nil for the
-- fleet rules'), what it returns of them (`fleet
-- check --json` and `fleet serve` keep their text: holding 38,000 findings
-- as tables for the answer made the collector walk them again at every
-- cycle), the row given its verdict. With site files the ledger is kept
-- for them, judged in one child per file over every ledger when M.fleet
-- ends.
function M.fleet_judging(core, sources, given, keep)
  local judging = begin(core, sources, given)
  keep = keep or "findings"
  judging.keep = keep
  judging.node_findings = {} -- row → its findings in order, or what keep kept of them
  judging.kept = { rows = {}, ledgers = {}, found = {} } -- for the site files
  function judging.node(row, ledger)
    local found = judge_ledger(core, judging.embedded, ledger, keep == "verdicts" and #judging.site == 0)
    if #judging.site > 0 then
      local kept = judging.kept
      local n = #kept.rows + 1
      kept.rows[n], kept.ledgers[n], kept.found[n] = row, ledger, found
    elseif keep == "verdicts" then
      give_verdict(row, findings.counts(found)) -- the levels alone: no order, no GPU's health verdict
    elseif keep == "findings" then
      judging.node_findings[row] = json.array(findings.ordered(found, ledger))
    else
      local list = fleet.addressed(findings.ordered(found, ledger), row)
      give_verdict(row, findings.counts(list))
      judging.node_findings[row] = keep(list, row)
    end
  end
  return judging
end

-- Ends judging a fleet (M.fleet_judging, every node read given to its
-- node) with the summary (fleet.summarise), extra_errors (text, nil for
-- none) among the set's errors: the site files on the kept ledgers, the
-- rules that see the fleet on the summary. Each row of the summary, and
-- its total, gets its verdict (an unreachable node's is its ERROR), the
-- rows then sorted worst first (fleet.sort_worst_first). Returns the
-- fleet's report {summary, findings (the fleet's and every node's, worst
-- first, fleet.merge_findings), worst, counts, codes, rules = {loaded,
-- errors}}; with keep "verdicts", {summary} alone; with a keep function,
-- {summary, kept (row → what keep kept of its findings, an unreachable
-- node's ERROR too), fleet_kept (what keep kept of the fleet rules'
-- findings, in the order they came), worst, codes, rules}.
function M.fleet(judging, summary, extra_errors)
  local node_findings, kept, keep = judging.node_findings, judging.kept, judging.keep
  local set, found, fleet_found = finish(judging, kept.ledgers, kept.found,
    { view = fleet.view(summary), extra_errors = extra_errors })
  for i, row in ipairs(kept.rows) do
    node_findings[row] = found[i]
  end
  fleet_found = fleet_found or json.array()
  for _, finding in ipairs(fleet.shared_name_findings(summary)) do
    fleet_found[#fleet_found + 1] = finding
  end
  local rules = { loaded = #set.rules, errors = #set.errors }
  if keep ~= "findings" then
    for _, row in ipairs(summary.nodes) do
      if not row.worst then -- unreachable, or judged by the site files too
        local list = fleet.findings_of(row, node_findings)
        give_verdict(row, findings.counts(list))
        node_findings[row] = keep ~= "verdicts" and keep(list, row) or nil
      end
    end
    fleet.sort_worst_first(summary.nodes)
    total_verdict(summary, fleet_found)
    if keep == "verdicts" then
      return { summary = summary }
    end
    return {
      summary = summary, kept = node_findings, fleet_kept = keep(fleet_found), worst = summary.total.worst,
      codes = ruleset.codes(set), rules = rules,
    }
  end
  local all, counts = M.fleet_verdicts(summary, node_findings, fleet_found)
  return {
    summary = summary, findings = all, worst = findings.worst_of(counts), counts = counts,
    codes = ruleset.codes(set), rules = rules,
  }
end

return M
