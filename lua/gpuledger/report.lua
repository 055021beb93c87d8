-- The arithmetic of `gpuledger report` (docs/contract.md#report): GPU-hours
-- per job (reserved, held, idle, idle share; most idle first), per node
-- and GPU state, per tenant used without a reservation (most first) and
-- per job and MIG slice,
-- from the samples of Prometheus' queries. Pure: the values come in, the
-- report goes out; render/table.lua and render/json.lua print it.
local json = require "gpuledger.json"

local M = {}

M.STATES = { "held", "reserved-idle", "unaccounted", "free" }

local function hours(seconds)
  return seconds / 3600
end

-- The labels of a job's samples and the fields of its entry, and the same
-- of a job's on one MIG slice: what tells one entry from another.
local JOB_LABELS = { { "namespace", "namespace" }, { "nomad_job", "job" } }
local SLICE_LABELS = {
  { "node", "node" }, { "gpu", "gpu" }, { "uuid", "uuid" }, { "mig_uuid", "migUuid" }, { "mig_profile", "profile" },
  { "namespace", "namespace" }, { "nomad_job", "job" },
}

-- The entries of the samples of a reservation counter ({metric = {…, use},
-- value = seconds}, use "held" or "idle"), one per distinct value of the
-- labels (a list of {label, field}): those fields, heldHours, idleHours,
-- reservedHours = held + idle and idleShare = idle / reserved (0 when
-- nothing was reserved). Returns them, and each entry's key (its labels'
-- values joined) by entry, to sort by.
local function reservations_of(samples, labels)
  local by_key, list, keys = {}, json.array(), {}
  for _, sample in ipairs(samples) do
    local values = {}
    for i, label in ipairs(labels) do
      values[i] = sample.metric[label[1]] or ""
    end
    local key = table.concat(values, "\0")
    local entry = by_key[key]
    if not entry then
      entry = { heldHours = 0, idleHours = 0 }
      for i, label in ipairs(labels) do
        entry[label[2]] = values[i]
      end
      by_key[key], keys[entry] = entry, key
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
  return list, keys
end

-- list sorted by its entries' field, most first (none: by key alone), then
-- by their keys (keys[entry], computed once: a sort compares n log n times).
local function most_first(list, keys, field)
  table.sort(list, function(a, b)
    if field and a[field] ~= b[field] then
      return a[field] > b[field]
    end
    return keys[a] < keys[b]
  end)
  return list
end

-- The jobs of the per-job samples ({metric = {namespace, nomad_job, use},
-- value = seconds}), most idle first, then by namespace and job.
local function jobs_of(samples)
  local list, keys = reservations_of(samples, JOB_LABELS)
  return most_first(list, keys, "idleHours")
end

-- The jobs per MIG slice of the per-slice samples ({metric = {node, gpu,
-- uuid, mig_uuid, mig_profile, namespace, nomad_job, use}, value =
-- GPU-seconds: the slice's share of its GPU}), by node, GPU, slice and job.
local function slices_of(samples)
  local list, keys = reservations_of(samples, SLICE_LABELS)
  return most_first(list, keys)
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

-- The tenants of the per-tenant samples ({metric = {node, kind, namespace,
-- nomad_job, task, container, tenant, use}, value = seconds}) that used a
-- GPU without a reservation over the window: those with GPU-hours, most
-- first, then by node and tenant.
local function unreserved_of(samples)
  local list, keys = json.array(), {}
  for _, sample in ipairs(samples) do
    local m = sample.metric
    if sample.value > 0 then
      local entry = {
        node = m.node or "", kind = m.kind or "", use = m.use or "", namespace = m.namespace or "",
        job = m.nomad_job or "", task = m.task or "", container = m.container or "", tenant = m.tenant or "",
        hours = hours(sample.value),
      }
      list[#list + 1], keys[entry] = entry, entry.node .. "\0" .. entry.tenant
    end
  end
  return most_first(list, keys, "hours")
end

-- The report (its JSON in docs/json.md) of the answers ({jobs = samples, nodes =
-- samples, unreserved = samples, slices = samples}) over the window `since`,
-- made at `at` (RFC 3339).
function M.build(answers, since, at)
  return {
    schema = 1, since = since, at = at, jobs = jobs_of(answers.jobs), nodes = nodes_of(answers.nodes),
    unreserved = unreserved_of(answers.unreserved or {}), slices = slices_of(answers.slices or {}),
  }
end

-- Totals over the report: the jobs' reserved, held and idle GPU-hours, and
-- the GPU-hours used without a reservation.
function M.totals(report)
  local total = { reservedHours = 0, heldHours = 0, idleHours = 0 }
  for _, entry in ipairs(report.jobs) do
    for key in pairs(total) do
      total[key] = total[key] + entry[key]
    end
  end
  total.unreservedHours = 0
  for _, entry in ipairs(report.unreserved) do
    total.unreservedHours = total.unreservedHours + entry.hours
  end
  return total
end

return M
