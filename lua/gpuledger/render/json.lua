-- The JSON documents of SPEC §4 (schema 1): the ledger (`ls --json`,
-- /ledger) and the findings (`check --json`, /findings). Arrays are [] when
-- empty (decision D1); keys come out sorted.
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"

local M = {}

-- `ls --json`: the ledger as it is (its fields are the contract's; the
-- tenants' verdicts, derived, are not among them).
function M.ledger(ledger)
  return json.encode(ledger, nil, ledger_mod.DERIVED) .. "\n"
end

-- The fields of a finding in JSON: level, code, node, message; gpu, index
-- and uuid for a GPU's; namespace, job, task, alloc, container and pids
-- where the finding is about a tenant or a reservation and they are known.
local FINDING_FIELDS = { "level", "code", "node", "message", "gpu", "index", "uuid",
  "namespace", "job", "task", "alloc", "container", "pids" }

-- The findings document of a report (judge.lua): {at, findings, node, schema, worst}.
function M.findings(report)
  local ledger, worst = report.ledger, report.worst
  local list = json.array()
  for i, finding in ipairs(report.findings) do
    list[i] = {}
    for _, field in ipairs(FINDING_FIELDS) do
      list[i][field] = finding[field]
    end
  end
  return json.encode { at = ledger.at, findings = list, node = ledger.node, schema = 1, worst = worst } .. "\n"
end

return M
