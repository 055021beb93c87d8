-- The fleet's arithmetic (docs/contract.md#fleet), pure: a node's ledger as read
-- from its /ledger (ours, an older release's with null arrays and
-- its own states, or a schema-0 one with fields missing) shaped for the
-- summary, or made readable for the rules; each node reduced to its summary
-- row and its jobs as soon as it is read, so the fleet never holds every
-- ledger at once; the rows summed into the fleet's summary; unreachable
-- nodes as ERROR findings; every finding in the fleet's order, and grouped
-- by level and code from the findings or from what was kept of them.
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local rule_schema = require "gpuledger.rule_schema"
local node_ledger = require "gpuledger.sources.node_ledger"
local shape = require "gpuledger.sources.shape"
local text = require "gpuledger.text"

local M = {}

M.SCHEMA = 1

-- The counters of a summary row, in the order the table shows them.
local COUNTERS = { "gpus", "held", "reservedIdle", "unaccounted", "free", "memoryUsedMiB", "memoryTotalMiB" }
-- The summary counter each GPU state counts in (metrics names them by state).
M.COUNTER_OF_STATE = { held = "held", ["reserved-idle"] = "reservedIdle", unaccounted = "unaccounted", free = "free" }

-- The fields of a GPU entry an older node may leave out, and what they are
-- then (utilizationPct and memoryUtilizationPct stay absent: unknown, as
-- on a GPU in MIG mode, not 0 %). MEASURED ones stay absent on a GPU the
-- node's nvidia-smi no longer lists (missing): nothing of it was measured.
local ENTRY_DEFAULTS = {
  memoryUsedMiB = 0, memoryTotalMiB = 0, temperatureC = 0, powerW = 0, encoderSessions = 0, encoderAverageFps = 0,
  index = 0, uuid = "", model = "", busId = "",
}
local MEASURED = { memoryUsedMiB = true, memoryTotalMiB = true, temperatureC = true, powerW = true,
  encoderSessions = true, encoderAverageFps = true }
local RESERVATION_TEXT = { "allocId", "jobId", "taskGroup", "task", "namespace", "clientStatus" }

-- A number as the node meant it (JSON's 4242 decodes as 4242.0); a name
-- of digits stays a name.
local number_of = json.whole

-- A list the shape let through (or nil: absent, or JSON null as the
-- older releases write an empty one) as a JSON array, in place,
-- its whole numbers as integers.
local function array_of(value)
  value = value or {}
  for i, item in ipairs(value) do
    value[i] = number_of(item)
  end
  return json.array(value)
end

-- One tenant made readable for the rules: its arrays, numbers and flags.
local function tenant_readable(tenant)
  tenant.kind = tenant.kind or "docker"
  tenant.pids = array_of(tenant.pids)
  tenant.processes = array_of(tenant.processes)
  tenant.usedMemoryMiB = number_of(tenant.usedMemoryMiB) or 0
  tenant.uid = number_of(tenant.uid)
  tenant.allocVisible = tenant.allocVisible == true
  tenant.allocFromName = tenant.allocFromName or nil
  tenant.unidentified = tenant.unidentified or nil
end

-- The reservations and tenants of a GPU entry or a MIG slice made readable.
local function unit_readable(unit)
  for _, reservation in ipairs(unit.reservations) do
    for _, field in ipairs(RESERVATION_TEXT) do
      reservation[field] = reservation[field] or ""
    end
    reservation.deviceIds = array_of(reservation.deviceIds)
  end
  for _, tenant in ipairs(unit.tenants) do
    tenant_readable(tenant)
  end
end

-- One GPU entry made readable for the rules (after shape_entry), its MIG
-- slices too.
local function entry_readable(entry)
  for field, default in pairs(ENTRY_DEFAULTS) do
    local value = number_of(entry[field])
    if value == nil and not (entry.missing and MEASURED[field]) then
      value = default
    end
    entry[field] = value
  end
  entry.thermalMarginC = number_of(entry.thermalMarginC)
  unit_readable(entry)
  for _, slice in ipairs(entry.migDevices or {}) do
    slice.memoryUsedMiB = number_of(slice.memoryUsedMiB) or 0
    slice.memoryTotalMiB = number_of(slice.memoryTotalMiB) or 0
    slice.index = number_of(slice.index) or 0
    unit_readable(slice)
  end
end

-- What the summary reads of a GPU entry: its reservations and tenants as
-- arrays, each tenant's reserved flag, and its state, classified here
-- whatever the node said (older nodes send none, or their own).
local function shape_unit(unit)
  unit.reservations = array_of(unit.reservations)
  unit.tenants = array_of(unit.tenants)
  for _, tenant in ipairs(unit.tenants) do
    tenant.reserved = tenant.reserved == true
  end
  unit.state = ledger_mod.classify(unit)
end

-- The same of each MIG slice of a GPU in MIG mode, whose own state is then
-- derived from its slices' (ledger.mig_state).
local function shape_entry(entry)
  shape_unit(entry)
  if entry.migDevices then
    entry.migDevices = array_of(entry.migDevices)
    for _, slice in ipairs(entry.migDevices) do
      shape_unit(slice)
    end
    entry.state = ledger_mod.mig_state(entry)
  end
end

-- A decoded /ledger answer (json.decode's, or json.decode_raw's with its
-- nulls) shaped in place for the summary (node_row), once it has the shape
-- of a ledger (sources/node_ledger.lua): schema, node, entries, each
-- entry's arrays and state, every name cut to text.NAME_MAX and every
-- error to text.ERROR_MAX, every JSON null dropped. Returns the ledger,
-- or nil and why it is not one, the first field that is not as the contract
-- has it worded as source's (the node's "<url>/ledger") unexpected answer.
function M.shape(decoded, source)
  if type(decoded) ~= "table" or json.is_array(decoded) or decoded[1] ~= nil then
    return nil, string.format("%s: the answer is not a gpuledger ledger (want a JSON object)", source)
  end
  local why = shape.check(decoded, node_ledger.SHAPE, "ledger")
  if why then
    return nil, shape.unexpected(source, why)
  end
  for key, value in pairs(decoded) do -- names and errors cut as this node's own are
    decoded[key] = text.cut_strings(value, key == "errors" and text.ERROR_MAX or text.NAME_MAX, json.NULL)
  end
  decoded.schema = number_of(decoded.schema) or 0
  decoded.node = decoded.node or ""
  decoded.entries = array_of(decoded.entries)
  for _, entry in ipairs(decoded.entries) do
    shape_entry(entry)
  end
  return decoded
end

-- The same, and every field the contract has that an older node left out
-- given its default, so the rules can read the ledger as they read this
-- node's own.
function M.readable(decoded, source)
  local ledger, why = M.shape(decoded, source)
  if not ledger then
    return nil, why
  end
  for _, entry in ipairs(ledger.entries) do
    entry_readable(entry)
  end
  ledger.nomadRead = ledger.nomadRead == true
  ledger.errors = ledger.errors and #ledger.errors > 0 and json.array(ledger.errors) or nil
  return ledger
end

-- The ledger in one node's answer (core.http_get_many's result for
-- <url>/ledger): shaped for the summary, or with for_rules readable for
-- the rules; or nil and why, in the contract's words, each naming the
-- address: "<url>/ledger: " and a transport error as the HTTP client gives
-- it, "<url>/ledger: HTTP N", "<url>/ledger: the answer
-- (<type>) is not JSON: …", "<url>/ledger: the answer is not a gpuledger
-- ledger …", "<url>/ledger: unexpected answer: ledger.entries[1].index is
-- a string, want …".
function M.answer_ledger(url, result, for_rules)
  if result.error then
    return nil, string.format("%s/ledger: %s", url, result.error)
  end
  if result.status ~= 200 then
    return nil, string.format("%s/ledger: HTTP %d", url, result.status)
  end
  local decoded, why = json.decode(result.body)
  if decoded == nil then
    local content_type = result.content_type and (" (" .. result.content_type .. ")") or ""
    return nil, string.format("%s/ledger: the answer%s is not JSON: %s", url, content_type, why)
  end
  return (for_rules and M.readable or M.shape)(decoded, url .. "/ledger")
end

-- "namespace/job" key and its parts for a reservation (empty namespace is
-- "default").
local function job_key(reservation)
  local namespace = type(reservation.namespace) == "string" and reservation.namespace or ""
  namespace = namespace ~= "" and namespace or "default"
  local job = type(reservation.jobId) == "string" and reservation.jobId or ""
  return namespace .. "/" .. job, namespace, job
end

-- Counts in jobs ("namespace/job" → {namespace, job, reserved, held}) the
-- reservations of unit, a GPU or a MIG slice: once per job, held when a
-- tenant its allocation reserved is on the unit.
local function count_jobs(jobs, unit)
  local seen = {}
  for _, reservation in ipairs(unit.reservations) do
    local key, namespace, job = job_key(reservation)
    if not seen[key] then
      seen[key] = true
      jobs[key] = jobs[key] or { namespace = namespace, job = job, reserved = 0, held = 0 }
      jobs[key].reserved = jobs[key].reserved + 1
      for _, tenant in ipairs(unit.tenants) do
        if tenant.reserved and tenant.allocId == reservation.allocId then
          jobs[key].held = jobs[key].held + 1
          break
        end
      end
    end
  end
end

-- The summary row of a node that was read (target: {node, url}; ledger:
-- shaped, or readable): its name (the ledger's, else the target's), url,
-- schema, counts and memory, and its jobs ("namespace/job" → {namespace,
-- job, reserved, held}).
function M.node_row(target, ledger)
  local row = {
    node = ledger.node ~= "" and ledger.node or target.node, url = target.url, schema = ledger.schema,
    nomadNodeId = ledger.nomadNode and ledger.nomadNode.id,
    gpus = 0, held = 0, reservedIdle = 0, unaccounted = 0, free = 0, memoryUsedMiB = 0, memoryTotalMiB = 0,
  }
  local jobs = {}
  for _, entry in ipairs(ledger.entries) do
    row.gpus = row.gpus + 1
    local counter = M.COUNTER_OF_STATE[entry.state]
    row[counter] = row[counter] + 1
    for _, slice in ipairs(entry.migDevices or {}) do -- beside the GPUs: a MIG GPU counts once as a GPU
      row.migSlices = (row.migSlices or 0) + 1
      local slice_counter = "mig" .. M.COUNTER_OF_STATE[slice.state]:gsub("^%l", string.upper)
      row[slice_counter] = (row[slice_counter] or 0) + 1
    end
    row.memoryUsedMiB = row.memoryUsedMiB + (tonumber(entry.memoryUsedMiB) or 0)
    row.memoryTotalMiB = row.memoryTotalMiB + (tonumber(entry.memoryTotalMiB) or 0)
    count_jobs(jobs, entry)
    for _, slice in ipairs(entry.migDevices or {}) do
      count_jobs(jobs, slice)
    end
  end
  row.jobs = jobs
  return row
end

-- The summary row of a node that could not be read (or of a failed
-- discovery: target.discovery).
function M.unreachable_row(target, err)
  return { node = target.node, url = target.url, discovery = target.discovery, schema = 0, error = err,
    unreachable = 1, jobs = {} }
end

local function by_namespace_job(a, b)
  if a.namespace ~= b.namespace then
    return a.namespace < b.namespace
  end
  return a.job < b.job
end

-- Sorts rows by before (a, b: true or false, nil when they rank equal),
-- keeping the order of equals (a stable sort).
local function sort_stably(rows, before)
  for i, row in ipairs(rows) do
    row.position = i
  end
  table.sort(rows, function(a, b)
    local first = before(a, b)
    if first == nil then
      return a.position < b.position
    end
    return first
  end)
  for _, row in ipairs(rows) do
    row.position = nil
  end
  return rows
end

local function by_name(a, b)
  if a.node ~= b.node then
    return a.node < b.node
  end
end

-- Sorts rows by node name, keeping the order of equal names.
function M.sort_rows(rows)
  return sort_stably(rows, by_name)
end

-- Names each row that shares its node name with a row read from another
-- address "<name> (<url>)", its reported name kept as reported, so that
-- every row, link and finding is told apart by where it was read. Returns
-- the names shared, in the rows' order: {name, urls (in the rows' order)}.
local function name_by_address(rows)
  local urls_of, shared = {}, {}
  for _, row in ipairs(rows) do
    local urls = urls_of[row.node]
    if not urls then
      urls = { seen = {} }
      urls_of[row.node] = urls
    end
    if not urls.seen[row.url] then
      urls.seen[row.url] = true
      urls[#urls + 1] = row.url
      if #urls == 2 then
        shared[#shared + 1] = { name = row.node, urls = urls }
      end
    end
  end
  for _, row in ipairs(rows) do
    if #urls_of[row.node] > 1 then
      row.reported = row.node
      row.node = string.format("%s (%s)", row.node, row.url)
    end
  end
  for _, name in ipairs(shared) do
    name.urls.seen = nil
  end
  return shared
end

-- The WARN of each node name that nodes at more than one address report
-- (summary.shared), about the fleet.
function M.shared_name_findings(summary)
  local found = {}
  for i, name in ipairs(summary.shared or {}) do
    found[i] = {
      level = "WARN", code = "node-name-shared", node = "fleet",
      message = string.format("%d nodes report the name %q (%s): each is listed as \"%s (<address>)\"; "
        .. "give each node its own name", #name.urls, name.name, table.concat(name.urls, ", "), name.name),
    }
  end
  return found
end

-- The fleet's summary from the rows of every node (read or not): {schema,
-- nodes (sorted by name), jobs (sorted by namespace, job), total (node
-- "fleet", unreachable = how many could not be read), shared (the node
-- names reported at more than one address: name_by_address)}. The rows
-- keep their url and jobs; the JSON renderer shows only the contract's
-- fields.
function M.summarise(rows)
  local shared = name_by_address(rows)
  M.sort_rows(rows)
  local total = { node = "fleet", schema = M.SCHEMA, unreachable = 0 }
  for _, counter in ipairs(COUNTERS) do
    total[counter] = 0
  end
  local jobs, job_list = {}, json.array()
  for _, row in ipairs(rows) do
    if row.error then
      total.unreachable = total.unreachable + 1
    else
      for _, counter in ipairs(COUNTERS) do
        total[counter] = total[counter] + row[counter]
      end
      for _, counter in ipairs(M.SLICE_COUNTERS) do
        if row[counter] then
          total[counter] = (total[counter] or 0) + row[counter]
        end
      end
      for key, job in pairs(row.jobs) do
        if not jobs[key] then
          jobs[key] = { namespace = job.namespace, job = job.job, reserved = 0, held = 0 }
          job_list[#job_list + 1] = jobs[key]
        end
        jobs[key].reserved = jobs[key].reserved + job.reserved
        jobs[key].held = jobs[key].held + job.held
      end
    end
  end
  table.sort(job_list, by_namespace_job)
  return { schema = M.SCHEMA, nodes = json.array(rows), jobs = job_list, total = total, shared = shared }
end

-- The contract's fields of a summary row (docs/json.md): unreachable only
-- when not 0, error only when there is one.
local ROW_FIELDS = { "node", "schema", "gpus", "held", "reservedIdle", "unaccounted", "free",
  "memoryUsedMiB", "memoryTotalMiB", "unreachable", "error", "worst", "badFindings", "errorFindings" }
-- The MIG slices' counters, beside the GPUs': in a row only where it has slices.
M.SLICE_COUNTERS = { "migSlices", "migHeld", "migReservedIdle", "migUnaccounted", "migFree" }

local function contract_row(row)
  local out = {}
  for _, field in ipairs(ROW_FIELDS) do
    out[field] = row[field]
  end
  if out.unreachable == 0 then
    out.unreachable = nil
  end
  for _, counter in ipairs(COUNTERS) do
    out[counter] = out[counter] or 0
  end
  if row.migSlices then
    for _, counter in ipairs(M.SLICE_COUNTERS) do
      out[counter] = row[counter] or 0
    end
  end
  return out
end

-- The summary as the contract has it (docs/json.md) and fleet rules read it:
-- {schema, nodes, jobs, total}, plain tables with the contract's fields only.
function M.view(summary)
  local nodes, jobs = json.array(), json.array()
  for i, row in ipairs(summary.nodes) do
    nodes[i] = contract_row(row)
  end
  for i, job in ipairs(summary.jobs) do
    jobs[i] = { namespace = job.namespace, job = job.job, reserved = job.reserved, held = job.held }
  end
  return { schema = summary.schema, nodes = nodes, jobs = jobs, total = contract_row(summary.total) }
end

-- The ERROR finding of a node that could not be read, or of a discovery
-- that failed (row.discovery: its error names Consul or Nomad and where
-- it was asked).
function M.unreachable_finding(row)
  local message = row.discovery and ("the fleet's nodes could not be listed: " .. row.error)
    or string.format("gpuledger at %s could not be read: %s", row.url, row.error)
  return { level = "ERROR", code = "source-unavailable", node = row.node, message = message }
end

-- Gives each finding of row's list the address of the node it is about
-- (row.url, where its ledger was read or could not be; none for a failed
-- discovery): what tells apart the findings of nodes reporting one name.
-- Returns list.
function M.addressed(list, row)
  local url = not row.discovery and row.url or nil
  for _, finding in ipairs(list) do
    finding.url = url
  end
  return list
end

-- A row's findings: its own (node_findings: row → its findings), or the
-- ERROR of a node that could not be read, each with its address
-- (M.addressed); on a row whose name nodes at other addresses report too,
-- each names the node as its row does.
function M.findings_of(row, node_findings)
  local list = M.addressed(row.error and { M.unreachable_finding(row) } or node_findings[row] or {}, row)
  if row.reported then
    for _, finding in ipairs(list) do
      finding.node = row.node
    end
  end
  return list
end

-- Sorts the rows, each with its verdict (worst, badFindings,
-- errorFindings), worst first (ERROR, BAD, WARN, OK), then by node name,
-- keeping the order of equals.
function M.sort_worst_first(rows)
  return sort_stably(rows, function(a, b)
    local rank_a, rank_b = rule_schema.LEVELS[a.worst], rule_schema.LEVELS[b.worst]
    if rank_a ~= rank_b then
      return rank_a > rank_b
    end
    return by_name(a, b)
  end)
end

-- Every node's findings and the fleet rules' (fleet_findings, may be
-- nil) in one list, worst first across the fleet; within a level, the
-- fleet's first, then nodes in the summary's order, each in its own order.
-- lists: row → {findings, worst first (findings.ordered); counts, per
-- level (findings.counts)}. A node's findings of a level are one slice of
-- its list, found by its counts: they are moved, not read, and nothing is
-- sorted.
function M.merge_findings(summary, lists, fleet_findings)
  local merged, next_of = json.array(), {}
  for _, level in ipairs(rule_schema.WORST_FIRST) do
    for _, finding in ipairs(fleet_findings or {}) do
      if finding.level == level then
        merged[#merged + 1] = finding
      end
    end
    for _, row in ipairs(summary.nodes) do
      local list, first = lists[row], next_of[row] or 1
      local last = first + list.counts[level] - 1
      table.move(list.findings, first, last, #merged + 1, merged)
      next_of[row] = last + 1
    end
  end
  return merged
end

-- The groups of group_findings and group_kept made whole: each group's
-- node names sorted and its working sets dropped; the groups worst first,
-- within a level the one on most nodes, then on most GPUs, then of most
-- findings, then by code.
local function in_group_order(groups)
  for _, group in ipairs(groups) do
    table.sort(group.nodes)
    group.seen_gpus, group.seen_nodes = nil, nil
  end
  table.sort(groups, function(a, b)
    local rank_a, rank_b = rule_schema.LEVELS[a.level], rule_schema.LEVELS[b.level]
    if rank_a ~= rank_b then
      return rank_a > rank_b
    elseif #a.nodes ~= #b.nodes then
      return #a.nodes > #b.nodes
    elseif a.gpus ~= b.gpus then
      return a.gpus > b.gpus
    elseif a.count ~= b.count then
      return a.count > b.count
    end
    return a.code < b.code
  end)
  return groups
end

-- The group of level and code among groups (by_key: "<level> <code>" →
-- group), made empty when it is not there yet.
local function group_of(groups, by_key, key, level, code)
  local group = by_key[key]
  if not group then
    group = { level = level, code = code, count = 0, gpus = 0, nodes = json.array(), findings = json.array(),
      seen_gpus = {}, seen_nodes = {} }
    by_key[key] = group
    groups[#groups + 1] = group
  end
  return group
end

-- Counts the node at place (its address, or a name where there is none:
-- "fleet") among group's nodes, shown by label, and gpu (a name unique in
-- the fleet: the place's and the GPU's; nil for a finding about no GPU)
-- among its GPUs, each once.
local function count_place(group, place, label, gpu)
  if not group.seen_nodes[place] then
    group.seen_nodes[place] = true
    group.nodes[#group.nodes + 1] = label
  end
  if gpu and not group.seen_gpus[gpu] then
    group.seen_gpus[gpu] = true
    group.gpus = group.gpus + 1
  end
end

-- The GPU a finding at place is about, unique in the fleet (place and
-- uuid), or nil for a finding about no GPU.
local function gpu_of(place, finding)
  return finding.index ~= nil and (place .. "\0" .. tostring(finding.uuid or finding.gpu)) or nil
end

-- The fleet's findings (worst first, as merge_findings gives them) grouped
-- by level and code: each group {level, code, count, gpus (how many GPUs:
-- distinct node and uuid among its findings about a GPU), nodes (the names
-- of the nodes it is on, sorted), findings (in their order)}; the groups in
-- in_group_order's order.
function M.group_findings(findings)
  local groups, by_key = json.array(), {}
  for _, finding in ipairs(findings) do
    local group = group_of(groups, by_key, finding.level .. " " .. finding.code, finding.level, finding.code)
    group.count = group.count + 1
    group.findings[#group.findings + 1] = finding
    local node = finding.node or "" -- unique by address: findings_of
    count_place(group, node, node, gpu_of(node, finding))
  end
  return in_group_order(groups)
end

-- A place in a digest's places (string.pack): the group's key, the node's
-- address (or "fleet"), 1 when about a GPU (else 0), the GPU.
local PLACE = "s4s4Bs4"

-- What group_kept needs of the findings of row (a list, worst first; row
-- nil for the fleet rules') when they are kept as text: {count = "<level>
-- <code>" → how many, places = the distinct places of each group (the
-- row's url, gpu_of), PLACE-packed, in one string}. A node's findings are
-- then two small values, not a table each, while the fleet is read.
function M.digest(list, row)
  local count, places, seen = {}, {}, {}
  for _, finding in ipairs(list) do
    local key = finding.level .. " " .. finding.code
    count[key] = (count[key] or 0) + 1
    local node = row and row.url or finding.node or ""
    local gpu = gpu_of(node, finding)
    local place = string.pack(PLACE, key, node, gpu and 1 or 0, gpu or "")
    if not seen[place] then
      seen[place] = true
      places[#places + 1] = place
    end
  end
  return { count = count, places = table.concat(places) }
end

-- The groups of group_findings, and the counts per level of every
-- finding, from a fleet's report judged keeping each node's findings as
-- text (judge.fleet with a keep function): kept, row → M.digest of its
-- findings with levels (level → their JSON text, render_json.finding_levels),
-- and fleet_kept the same of the fleet rules' findings. A group's findings
-- are its first `shown` (in merge_findings' order), read back from their
-- text, its count every one of them: a page lists no more.
function M.group_kept(summary, kept, fleet_kept, shown)
  local groups, by_key = json.array(), {}
  local digests, rows, label_of = { fleet_kept }, { false }, {}
  for _, row in ipairs(summary.nodes) do
    digests[#digests + 1], rows[#rows + 1] = kept[row], row
    label_of[row.url] = row.node
  end
  local counts = { OK = 0, WARN = 0, BAD = 0, ERROR = 0 }
  for _, digest in ipairs(digests) do
    for key, n in pairs(digest.count) do
      local level, code = key:match("^(%S+) (.*)$")
      local group = group_of(groups, by_key, key, level, code)
      group.count = group.count + n
      counts[level] = counts[level] + n
    end
    local places, at = digest.places, 1
    while at <= #places do
      local key, node, about_gpu, gpu
      key, node, about_gpu, gpu, at = string.unpack(PLACE, places, at)
      count_place(by_key[key], node, label_of[node] or node, about_gpu == 1 and gpu or nil)
    end
  end
  for _, level in ipairs(rule_schema.WORST_FIRST) do
    local wanting = 0
    for _, group in ipairs(groups) do
      if group.level == level then
        wanting = wanting + math.min(group.count, shown)
      end
    end
    for i, digest in ipairs(digests) do
      if wanting == 0 then
        break
      end
      local written = digest.levels[level]
      for _, finding in ipairs(written and json.decode("[" .. written .. "]") or {}) do
        local group = by_key[level .. " " .. finding.code]
        finding.node = rows[i] and rows[i].node or finding.node -- as its row is named
        if #group.findings < shown then
          group.findings[#group.findings + 1] = finding
          wanting = wanting - 1
        end
      end
    end
  end
  return in_group_order(groups), counts
end

return M
