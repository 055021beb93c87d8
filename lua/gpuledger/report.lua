-- The arithmetic of `gpuledger report` (docs/contract.md#report): GPU-hours
-- per job (reserved, held, idle, idle share; most idle first) and per node
-- and GPU state, from the samples of Prometheus' two queries. Pure: the
-- values come in, the report goes out; render/table.lua and render/json.lua
-- print it.
local json = require "gpuledger.json"

local M = {}

M.STATES = { "held", "reserved-idle", "unaccounted", "free" }

local function hours(seconds)
  return seconds / 3600
end

-- The jobs of the per-job samples ({metric = {namespace, nomad_job, use},
-- value = seconds}), most idle first, then by namespace/job.
local function jobs_of(samples)
  local by_key, list = {}, json.array()
  for _, sample in ipairs(samples) do
    local namespace, job = sample.metric.namespace or "", sample.metric.nomad_job or ""
    local key = namespace .. "/" .. job
    local entry = by_key[key]
    if not entry then
      entry = { namespace = namespace, job = job, heldHours = 0, idleHours = 0 }
      by_key[key] = entry
      list[#list + 1] = entry
    end
    if sample.metric.use == "held" then
      entry.heldHours = entry.heldHours + hours(sample.value)
    elseif sample.metric.use == "idle" then
      entry.idleHours = entry.idleHours + hours(sample.value)
    end
  end
  for _, entry in ipairs(list) do
    entry.reservedHours = entry.heldHours + entry.idleHours
    entry.idleShare = entry.reservedHours > 0 and entry.idleHours / entry.reservedHours or 0
  end
  table.sort(list, function(a, b)
    if a.idleHours ~= b.idleHours then
      return a.idleHours > b.idleHours
    end
    return a.namespace .. "/" .. a.job < b.namespace .. "/" .. b.job
  end)
  return list
end

-- The nodes of the per-node samples ({metric = {node, state}, value =
-- seconds}): hours per state, every GPU state present, by node.
local function nodes_of(samples)
  local by_node, list = {}, json.array()
  for _, sample in ipairs(samples) do
    local name = sample.metric.node or ""
    local entry = by_node[name]
    if not entry then
      entry = { node = name, hours = {} }
      for _, state in ipairs(M.STATES) do
        entry.hours[state] = 0
      end
      by_node[name] = entry
      list[#list + 1] = entry
    end
    local state = sample.metric.state
    if state then
      entry.hours[state] = (entry.hours[state] or 0) + hours(sample.value)
    end
  end
  table.sort(list, function(a, b) return a.node < b.node end)
  return list
end

-- The report (its JSON in docs/json.md) of the two answers ({jobs = samples, nodes =
-- samples}) over the window `since`, made at `at` (RFC 3339).
function M.build(answers, since, at)
  return { schema = 1, since = since, at = at, jobs = jobs_of(answers.jobs), nodes = nodes_of(answers.nodes) }
end

-- Totals over the report's jobs: reserved, held and idle GPU-hours.
function M.totals(report)
  local total = { reservedHours = 0, heldHours = 0, idleHours = 0 }
  for _, entry in ipairs(report.jobs) do
    for key in pairs(total) do
      total[key] = total[key] + entry[key]
    end
  end
  return total
end

return M
