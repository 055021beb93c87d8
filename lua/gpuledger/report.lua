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

-- The tally of a reservation counter's samples ({metric = {…, use},
-- value = seconds}, use "held" or "idle"): add(sample) counts one, and
-- entries() gives one entry per distinct value of the labels (a list of
-- {label, field}): those fields, heldHours, idleHours, reservedHours =
-- held + idle and idleShare = idle / reserved (0 when nothing was
-- reserved). An entry is found by its labels' values, one table level per
-- label, so that a sample costs no new string; its last two fields are
-- added by entries(), once the answer's text is gone (an entry of six
-- fields is half again as large as one of four).
local function reservations(labels)
  local by_value, list = {}, json.array()
  local function add(sample)
    local level = by_value
    for i = 1, #labels - 1 do
      local value = sample.metric[labels[i][1]] or ""
      local below = level[value]
      if not below then
        below = {}
        level[value] = below
      end
      level = below
    end
    local last = sample.metric[labels[#labels][1]] or ""
    local entry = level[last]
    if not entry then
      entry = { heldHours = 0, idleHours = 0 } -- reservedHours and idleShare once all are counted
      for _, label in ipairs(labels) do
        entry[label[2]] = sample.metric[label[1]] or ""
      end
      level[last] = entry
      list[#list + 1] = entry
    end
    if sample.metric.use == "held" then
      entry.heldHours = entry.heldHours + hours(sample.value)
    elseif sample.metric.use == "idle" then
      entry.idleHours = entry.idleHours + hours(sample.value)
    end
  end
  local function entries()
    by_value = nil
    for _, entry in ipairs(list) do
      entry.reservedHours = entry.heldHours + entry.idleHours
      entry.idleShare = entry.reservedHours > 0 and entry.idleHours / entry.reservedHours or 0
    end
    return list
  end
  return add, entries
end

-- list sorted by its entries' field, most first (none: by the fields of
-- order alone), then by the fields of order, each a string.
local function most_first(list, field, order)
  table.sort(list, function(a, b)
    if field and a[field] ~= b[field] then
      return a[field] > b[field]
    end
    for i = 1, #order do
      local name = order[i]
      if a[name] ~= b[name] then
        return a[name] < b[name]
      end
    end
    return false
  end)
  return list
end

-- The fields of the labels of a tally (JOB_LABELS, SLICE_LABELS), in order.
local function fields_of(labels)
  local fields = {}
  for i, label in ipairs(labels) do
    fields[i] = label[2]
  end
  return fields
end

local JOB_FIELDS, SLICE_FIELDS = fields_of(JOB_LABELS), fields_of(SLICE_LABELS)

-- The fields a tenant used without a reservation is told apart by.
local TENANT_FIELDS = { "node", "tenant" }

-- The tally of the per-node samples ({metric = {node, state}, value =
-- seconds}): add(sample), and entries(): hours per state, every GPU state
-- present, by node.
local function nodes()
  local by_node, list = {}, json.array()
  local function add(sample)
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
  local function entries()
    by_node = nil
    table.sort(list, function(a, b) return a.node < b.node end)
    return list
  end
  return add, entries
end

-- The tally of the per-tenant samples ({metric = {node, kind, namespace,
-- nomad_job, task, container, tenant, use}, value = seconds}): add(sample),
-- and entries(): the tenants that used a GPU without a reservation over the
-- window, those with GPU-hours, most first, then by node and tenant.
local function unreserved()
  local list = json.array()
  local function add(sample)
    local m = sample.metric
    if sample.value > 0 then
      local entry = {
        node = m.node or "", kind = m.kind or "", use = m.use or "", namespace = m.namespace or "",
        job = m.nomad_job or "", task = m.task or "", container = m.container or "", tenant = m.tenant or "",
        hours = hours(sample.value),
      }
      list[#list + 1] = entry
    end
  end
  local function entries()
    return most_first(list, "hours", TENANT_FIELDS)
  end
  return add, entries
end

-- A report made sample by sample, each counted as it is read and let go:
-- add(answer, sample) counts a sample of the answer "jobs" (per job and
-- use: {metric = {namespace, nomad_job, use}, value = seconds}), "nodes"
-- (per node and GPU state: {metric = {node, state}, …}), "unreserved" (per
-- tenant used without a reservation: {metric = {node, kind, namespace,
-- nomad_job, task, container, tenant, use}, …}) or "slices" (per job and
-- use on each MIG slice: {metric = {node, gpu, uuid, mig_uuid, mig_profile,
-- namespace, nomad_job, use}, value = GPU-seconds: the slice's share of its
-- GPU}); report(since, at) gives the report (its JSON in docs/json.md) over
-- the window `since`, made at `at` (RFC 3339): the jobs most idle first,
-- then by namespace and job; the nodes by name; the tenants most first; the
-- jobs per slice by node, GPU, slice and job.
function M.builder()
  local add_job, jobs = reservations(JOB_LABELS)
  local add_node, node_entries = nodes()
  local add_tenant, tenants = unreserved()
  local add_slice, slices = reservations(SLICE_LABELS)
  local adders = { jobs = add_job, nodes = add_node, unreserved = add_tenant, slices = add_slice }
  local function add(answer, sample)
    adders[answer](sample)
  end
  local function report(since, at)
    return {
      schema = 1, since = since, at = at, jobs = most_first(jobs(), "idleHours", JOB_FIELDS), nodes = node_entries(),
      unreserved = tenants(), slices = most_first(slices(), nil, SLICE_FIELDS),
    }
  end
  return { add = add, report = report }
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
