-- The one judge (docs/architecture.md): a snapshot, or a ledger already
-- built (fleet reads them from other nodes), becomes a report
-- {ledger, findings, worst, counts, codes, rules}. Every command and the
-- specs go through it; renderers take its report and decide nothing.
local findings = require "gpuledger.findings"
local history = require "gpuledger.history"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local ruleset = require "gpuledger.ruleset"

local M = {}

-- The ledger of input: a snapshot is built into one; a ledger (it has
-- entries) is taken as it is, its tenants' verdicts given where missing.
local function ledger_of(input)
  if input.entries then
    ledger_mod.give_verdicts(input)
    return input
  end
  return ledger_mod.build(input)
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

-- Judges input (a snapshot or a built ledger) with core (core.call_limited
-- runs the rules). set: the rule set (ruleset.load), or nil for the ledger
-- alone (ls: no rule runs, no finding); policy: what the rules judge by
-- (M.policy); h: nil, or {record = history, max_gap = seconds, observe =
-- bool} or {error = why}. Returns the report {ledger, findings, worst,
-- counts, codes, rules = {loaded, errors}}.
function M.judge(core, input, set, policy, h)
  local ledger = ledger_of(input)
  if h then
    apply_history(ledger, h)
  end
  local report = { ledger = ledger, findings = json.array(), codes = {} }
  if set then
    report.findings = findings.evaluate(core, set, ledger, policy)
    report.codes = ruleset.codes(set, policy)
    report.rules = { loaded = #set.rules, errors = #set.errors }
  end
  report.worst = findings.worst(report.findings)
  report.counts = findings.counts(report.findings)
  return report
end

-- Judges a fleet: view is its summary as rules read it (fleet.view); the
-- rules of set that see the whole fleet (evaluate_fleet) run on it under
-- policy. Returns their findings, about the node "fleet".
function M.fleet(core, view, set, policy)
  return findings.evaluate_fleet(core, set, view, policy)
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

return M
