-- The JSON documents of docs/json.md (schema 1): the ledger (`ls --json`,
-- /ledger), the findings (`check --json`, /findings) and the fleet's
-- (`fleet ls|check --json`, /fleet). Arrays are [] when
-- empty; keys come out sorted.
local fleet = require "gpuledger.fleet"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local rule_schema = require "gpuledger.rule_schema"

local M = {}

-- `ls --json`: the ledger as it is (its fields are the contract's; the
-- tenants' verdicts, derived, are not among them).
function M.ledger(ledger)
  return json.encode(ledger, nil, ledger_mod.DERIVED) .. "\n"
end

-- A finding in JSON is the finding itself (findings.lua) but for what only
-- the program reads: its GPU's busId (the page's row key), and its place
-- and health GPU until findings.ordered takes them off. The documents are
-- written with json.encode leaving these out, so that a fleet's findings
-- are written as they are, not copied first: level, code, node, message;
-- gpu, index and uuid for a GPU's (migUuid and migProfile for a MIG
-- slice's); namespace, job, task, alloc, container and pids where the
-- finding is about a tenant or a reservation and they are known; url for
-- a finding about a node of a fleet (fleet.addressed).
local NOT_IN_JSON = {
  busId = true, health_gpu = true, place_rank = true, place_gpu = true, place_order = true, place_tenant = true,
}

-- findings as a JSON array ([] when empty): itself when marked one, else a copy marked so.
local function finding_array(findings)
  return json.is_array(findings) and findings or json.array(table.move(findings, 1, #findings, 1, {}))
end

-- The findings document of a report (judge.lua): {at, findings, node, schema, worst}.
function M.findings(report)
  local ledger = report.ledger
  return json.encode({
    at = ledger.at, findings = finding_array(report.findings), node = ledger.node, schema = 1, worst = report.worst,
  }, nil, NOT_IN_JSON) .. "\n"
end

-- `fleet ls --json`: {at, schema, summary}.
function M.fleet_ls(at, summary)
  return json.encode { at = at, schema = 1, summary = fleet.view(summary) } .. "\n"
end

-- What `fleet check --json` keeps of a node's findings (judge.fleet_judging's
-- keep) or of any list of them: level → the JSON text of the findings of
-- that level, in their order, joined by commas (an array's text less its
-- brackets); a level with none has no text.
function M.finding_levels(list)
  local by_level = {}
  for _, finding in ipairs(list) do
    local of_level = by_level[finding.level] or json.array()
    of_level[#of_level + 1] = finding
    by_level[finding.level] = of_level
  end
  for level, of_level in pairs(by_level) do
    by_level[level] = json.encode(of_level, nil, NOT_IN_JSON):sub(2, -2)
  end
  return by_level
end

-- The findings of a fleet's report judged keeping each node's findings as
-- text (judge.fleet with a keep function; report.kept: row → {levels =
-- M.finding_levels of them, ...}, report.fleet_kept the same of the fleet
-- rules' findings), as a JSON array: worst first across the fleet and,
-- within a level, the fleet's, then each node's in the summary's order
-- (fleet.merge_findings' order): the bytes json.encode writes of the
-- merged findings, put together from each node's text.
local function kept_findings(report)
  local pieces, fleet_levels = {}, report.fleet_kept.levels
  for _, level in ipairs(rule_schema.WORST_FIRST) do
    pieces[#pieces + 1] = fleet_levels[level]
    for _, row in ipairs(report.summary.nodes) do
      pieces[#pieces + 1] = report.kept[row].levels[level]
    end
  end
  return "[" .. table.concat(pieces, ",") .. "]"
end

-- `fleet check --json` of the fleet's report judged keeping each node's
-- findings as text: {at, findings, schema, worst}.
function M.fleet_check(at, report)
  return '{"at":' .. json.encode(at) .. ',"findings":' .. kept_findings(report) .. ',"schema":1,"worst":'
    .. json.encode(report.worst) .. "}\n"
end

-- `fleet check --summary --json`: {at, groups, schema, worst}, each group
-- (fleet.group_findings') {level, code, count, gpus, nodes, findings}.
function M.fleet_summary(at, groups, worst)
  local list = json.array()
  for i, group in ipairs(groups) do
    list[i] = { level = group.level, code = group.code, count = group.count, gpus = group.gpus, nodes = group.nodes,
      findings = finding_array(group.findings) }
  end
  return json.encode({ at = at, groups = list, schema = 1, worst = worst }, nil, NOT_IN_JSON) .. "\n"
end

-- fleet serve's /fleet of the fleet's report judged keeping each node's
-- findings as text, as M.fleet_check: {at, findings, schema, summary, worst}.
function M.fleet(at, report)
  return '{"at":' .. json.encode(at) .. ',"findings":' .. kept_findings(report) .. ',"schema":1,"summary":'
    .. json.encode(fleet.view(report.summary)) .. ',"worst":' .. json.encode(report.worst) .. "}\n"
end

-- How many entries of a list M.write_report encodes at a time.
local BATCH = 1000

-- `report --json` written as it is made: report.lua's report as json.encode
-- writes it, and a newline, given to write(part) in parts, each list BATCH entries at a time, so that the
-- whole text (longer than Prometheus' answers) is never held at once.
function M.write_report(report, write)
  local keys = {}
  for key in pairs(report) do
    keys[#keys + 1] = key
  end
  table.sort(keys)
  for i, key in ipairs(keys) do
    local value = report[key]
    write((i == 1 and "{" or ",") .. json.encode(key) .. ":")
    if json.is_array(value) and #value > BATCH then
      for first = 1, #value, BATCH do
        local batch = json.array(table.move(value, first, math.min(first + BATCH - 1, #value), 1, {}))
        local text = json.encode(batch)
        write((first == 1 and "[" or ",") .. text:sub(2, -2))
      end
      write("]")
    else
      write(json.encode(value))
    end
  end
  write("}\n")
end

-- `rules --json`: the listing {rules, off, errors} as it is.
function M.rules(listing)
  return json.encode(listing) .. "\n"
end

-- What `rules --check --json` leaves out: each input's counts (the text
-- report's), and of its findings what check --json's leave out.
local NOT_IN_RULES_CHECK = { counts = true }
for key in pairs(NOT_IN_JSON) do
  NOT_IN_RULES_CHECK[key] = true
end

-- `rules --check --json` (check: {dir, rules, off, inputs, errors, ok}), pretty,
-- each input's findings as check --json writes them.
function M.rules_check(check)
  return json.encode(check, "  ", NOT_IN_RULES_CHECK) .. "\n"
end

return M
