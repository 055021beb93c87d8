-- serve's /metrics (docs/contract.md#metrics): Prometheus text format 0.0.4, rendered by
-- hand. Every family is contiguous and carries HELP and TYPE even with no
-- samples; every finding code of the effective rule set has a series (zero
-- when absent). No label carries a process name, pid, image, path or
-- command, and none is named job or instance (Nomad's job is nomad_job).
local clock = require "gpuledger.clock"
local fleet = require "gpuledger.fleet"
local gl = require "gpuledger.gl"
local history = require "gpuledger.history"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local memo = require "gpuledger.memo"
local rule_schema = require "gpuledger.rule_schema"
local source_list = require "gpuledger.sources.list"
local text = require "gpuledger.text"

local M = {}

M.CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

-- A label value escaped for the text format: \ → \\, " → \", newline → \n,
-- then made printable (text.printable: valid UTF-8, which Prometheus
-- requires, and no other control or bidirectional character).
function M.escape(value)
  local s = tostring(value == nil and "" or value)
  if s:find('^[]-~#-[ !]*$') then
    return s -- printable ASCII but \ and ", most values: nothing to do (one anchored class is the quickest test)
  end
  if s:find('[\\"\n]') then
    s = s:gsub('[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" })
  end
  return text.printable(s)
end

local math_type, number_text = math.type, json.number_text

-- A sample value: integers plain, floats in their shortest exact form
-- (98.5, 12, 15.5), as Go's strconv 'g' -1 writes them.
local function number(n)
  if math_type(n) == "integer" then
    return number_text(n) -- most values (tostring's text, written quicker)
  elseif type(n) == "boolean" then
    return n and "1" or "0"
  end
  if n ~= n then
    return "NaN"
  elseif n == math.huge then
    return "+Inf"
  elseif n == -math.huge then
    return "-Inf"
  end
  return number_text(n)
end
M.number = number

-- ,name="value",… of the label pairs (an array of {name, value}), for
-- label sets fixed when the module loads.
local function pairs_text(labels)
  local parts = {}
  for i, label in ipairs(labels) do
    parts[i] = "," .. label[1] .. '="' .. M.escape(label[2]) .. '"'
  end
  return table.concat(parts)
end

-- The label pairs, per label name: pair.kind(value) is kind="value", the
-- value escaped. A node's names, ids and states recur in many samples and
-- at every refresh, so each is escaped once (memo.lua: this document's
-- pairs and the last one's are kept).
local new_pages = {} -- each label name's memo's
local pair = setmetatable({}, {
  __index = function(finders, name)
    local find, new_page = memo.new(function(raw) return name .. '="' .. M.escape(raw) .. '"' end)
    finders[name] = find
    new_pages[#new_pages + 1] = new_page
    return find
  end,
})

-- Collects the lines of the document, family by family, joined once at
-- the end; a sample's line is put together in one concatenation (one
-- piece of the document, not six). A sample's labels come as the text of
-- their set, {name="value",…}: each pair escaped once (pair), and each
-- set that several samples share put together once.
local function writer()
  local out, n = {}, 0
  local family = nil -- the current family's name
  for _, new_page in ipairs(new_pages) do
    new_page()
  end
  local w = {}
  -- Starts a family: its HELP and TYPE lines.
  function w.family(name, kind, help)
    out[n + 1] = string.format("# HELP %s %s\n", name, (help:gsub("\\", "\\\\"):gsub("\n", "\\n")))
    out[n + 2] = string.format("# TYPE %s %s\n", name, kind)
    n = n + 2
    family = name
  end
  -- The text of the label set labels (an array of {name, value}):
  -- {name="value",…}, nothing for none.
  function w.labels(labels)
    if not labels[1] then
      return ""
    end
    local parts = {}
    for i, label in ipairs(labels) do
      parts[i] = pair[label[1]](label[2])
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  -- A sample of the current family: set is the text of its label set, or
  -- of the set's start when rest (the set's end, up to its closing brace)
  -- follows.
  function w.sample(set, value, rest)
    n = n + 1
    out[n] = family .. set .. (rest or "") .. " " .. number(value) .. "\n"
  end
  function w.text()
    return table.concat(out)
  end
  return w
end

-- The label sets of a node's GPUs and MIG slices, each put together once
-- per render: {node, gpu, uuid} of a GPU (an entry, or a finding or a
-- history record with its index and uuid), and a slice's mig_uuid and
-- mig_profile after them. Each set comes closed, or open (without its
-- closing brace) for more pairs to follow: ",name=\"value\"…}".
local function label_sets(node)
  local node_pair = pair.node(node)
  local open_of, closed_of, slice_open_of = {}, {}, {}
  local sets = { node = "{" .. node_pair .. "}", node_open = "{" .. node_pair }
  function sets.gpu_open(gpu)
    local open = open_of[gpu]
    if not open then
      open = "{" .. node_pair .. "," .. pair.gpu(gl.index_text(gpu)) .. "," .. pair.uuid(gpu.uuid)
      open_of[gpu] = open
    end
    return open
  end
  function sets.gpu(gpu)
    local closed = closed_of[gpu]
    if not closed then
      closed = sets.gpu_open(gpu) .. "}"
      closed_of[gpu] = closed
    end
    return closed
  end
  function sets.slice_open(gpu, slice)
    local open = slice_open_of[slice]
    if not open then
      open = sets.gpu_open(gpu) .. "," .. pair.mig_uuid(slice.uuid) .. "," .. pair.mig_profile(slice.profile)
      slice_open_of[slice] = open
    end
    return open
  end
  return sets
end

local MIB = 1024 * 1024

-- 1 for true, 0 for false, nil for not reported.
local function flag(value)
  if value == nil then
    return nil
  end
  return value and 1 or 0
end

-- The health families (additive; each sample only where the driver reported
-- the value): name, help, label, and per label value the value of a GPU's
-- health record.
local HEALTH_FAMILIES = {
  { "gpuledger_gpu_remapped_rows", "Remapped memory rows: kind correctable and uncorrectable count rows; pending and failure are 1 when the driver says Yes.",
    { "kind" }, {
      { { "correctable" }, function(h) return h.remappedRowsCorrectable end },
      { { "uncorrectable" }, function(h) return h.remappedRowsUncorrectable end },
      { { "pending" }, function(h) return flag(h.remappedRowsPending) end },
      { { "failure" }, function(h) return flag(h.remappedRowsFailure) end },
    } },
  { "gpuledger_gpu_ecc_errors", "ECC errors the driver counted: kind corrected or uncorrected, scope volatile (since the driver loaded) or aggregate (lifetime).",
    { "kind", "scope" }, {
      { { "corrected", "volatile" }, function(h) return h.eccCorrectedVolatile end },
      { { "corrected", "aggregate" }, function(h) return h.eccCorrectedAggregate end },
      { { "uncorrected", "volatile" }, function(h) return h.eccUncorrectedVolatile end },
      { { "uncorrected", "aggregate" }, function(h) return h.eccUncorrectedAggregate end },
    } },
  { "gpuledger_gpu_pcie_link", "The GPU's PCIe link: its generation and width, current and the most GPU and host can do.",
    { "what" }, {
      { { "gen_current" }, function(h) return h.pcieGenCurrent end },
      { { "gen_max" }, function(h) return h.pcieGenMax end },
      { { "width_current" }, function(h) return h.pcieWidthCurrent end },
      { { "width_max" }, function(h) return h.pcieWidthMax end },
    } },
  { "gpuledger_gpu_power_limit_watts", "Power limits in watts: the one enforced, and the card's default.",
    { "which" }, {
      { { "enforced" }, function(h) return h.powerLimitEnforcedW end },
      { { "default" }, function(h) return h.powerLimitDefaultW end },
    } },
}
for _, family in ipairs(HEALTH_FAMILIES) do
  for _, series in ipairs(family[4]) do
    local labels = {}
    for i, label in ipairs(family[3]) do
      labels[i] = { label, series[1][i] }
    end
    series.rest = pairs_text(labels) .. "}" -- the end of its label set, after the GPU's
  end
end

-- The health of each GPU: its health level (the judge's verdict), this
-- boot's Xid events per code, and the driver's health values.
local function health_families(w, sets, entries)
  w.family("gpuledger_gpu_health_level", "gauge",
    "The GPU's health, the worst of its health findings: 0 OK, 1 WARN, 2 BAD, 3 ERROR; absent when nothing of its health was read.")
  for _, gpu in ipairs(entries) do
    if gpu.healthVerdict then
      w.sample(sets.gpu(gpu), rule_schema.LEVELS[gpu.healthVerdict.level])
    end
  end
  w.family("gpuledger_gpu_xid_events", "gauge", "Xid events in this boot's kernel log for the GPU, per Xid code (read again at each refresh).")
  for _, gpu in ipairs(entries) do
    for _, group in ipairs(gpu.xids or {}) do
      w.sample(sets.gpu_open(gpu), group.count, "," .. pair.xid(tostring(group.xid)) .. "}")
    end
  end
  for _, family in ipairs(HEALTH_FAMILIES) do
    w.family(family[1], "gauge", family[2])
    for _, gpu in ipairs(entries) do
      local health = gpu.health
      if health then
        for _, series in ipairs(family[4]) do
          local value = series[2](health)
          if value ~= nil then
            w.sample(sets.gpu_open(gpu), value, series.rest)
          end
        end
      end
    end
  end
end

local SORTED_STATES = {}
for i, state in ipairs(ledger_mod.STATES) do
  SORTED_STATES[i] = state
end
table.sort(SORTED_STATES)
local STATE_REST = {} -- per state, the end of a label set: ,state="held"}
for _, state in ipairs(SORTED_STATES) do
  STATE_REST[state] = pairs_text { { "state", state } } .. "}"
end
local USES = { "held", "idle" } -- of the job counters, each with the end of its label set
local USE_REST = { held = pairs_text { { "use", "held" } } .. "}", idle = pairs_text { { "use", "idle" } } .. "}" }

-- The per-GPU gauges, in the contract's order: name, help, value of a GPU (nil: no sample).
local GPU_GAUGES = {
  { "gpuledger_gpu_utilization_percent", "GPU utilisation in percent.", function(g) return g.utilizationPct end },
  { "gpuledger_gpu_memory_used_bytes", "GPU memory in use, bytes.", function(g) return g.memoryUsedMiB and g.memoryUsedMiB * MIB end },
  { "gpuledger_gpu_memory_total_bytes", "GPU memory in total, bytes.", function(g) return g.memoryTotalMiB and g.memoryTotalMiB * MIB end },
  { "gpuledger_gpu_temperature_celsius", "GPU temperature in degrees Celsius.", function(g) return g.temperatureC end },
  { "gpuledger_gpu_power_watts", "GPU power draw in watts.", function(g) return g.powerW end },
  { "gpuledger_gpu_encoder_sessions", "NVENC sessions open on the GPU.", function(g) return g.encoderSessions end },
  { "gpuledger_gpu_thermal_margin_celsius",
    "Degrees Celsius before the card's own slowdown temperature, only when the driver reports it.",
    function(g) return g.thermalMarginC end },
  { "gpuledger_gpu_thermal_slowdown", "1 while the driver reports thermal slowdown, 0 when it reports none; absent when unreported.",
    function(g) if g.thermalSlowdown == nil then return nil end return g.thermalSlowdown and 1 or 0 end },
  { "gpuledger_gpu_tenants", "Containers and host processes holding the GPU.", function(g) return #(g.tenants or {}) end },
  { "gpuledger_gpu_reservations", "Nomad reservations naming the GPU.", function(g) return #(g.reservations or {}) end },
}

-- The per-slice gauges of a GPU in MIG mode: name, help, value of a slice.
local SLICE_GAUGES = {
  { "gpuledger_mig_memory_used_bytes", "Memory in use on the MIG slice, bytes.", function(s) return s.memoryUsedMiB * MIB end },
  { "gpuledger_mig_memory_total_bytes", "Memory of the MIG slice, bytes.", function(s) return s.memoryTotalMiB * MIB end },
  { "gpuledger_mig_tenants", "Containers and host processes holding the MIG slice.", function(s) return #(s.tenants or {}) end },
  { "gpuledger_mig_reservations", "Nomad reservations naming the MIG slice.", function(s) return #(s.reservations or {}) end },
}

-- The MIG families: per slice of each GPU in MIG mode its state (1 on the
-- current one) and SLICE_GAUGES, labelled with its GPU's labels, mig_uuid
-- and mig_profile.
local function slice_families(w, sets, entries)
  w.family("gpuledger_mig_state", "gauge", "The MIG slice's state (held, reserved-idle, unaccounted, free); 1 on the current one.")
  for _, gpu in ipairs(entries) do
    for _, slice in ipairs(gpu.migDevices or {}) do
      w.sample(sets.slice_open(gpu, slice), 1, "," .. pair.state(slice.state) .. "}")
    end
  end
  for _, gauge in ipairs(SLICE_GAUGES) do
    w.family(gauge[1], "gauge", gauge[2])
    for _, gpu in ipairs(entries) do
      for _, slice in ipairs(gpu.migDevices or {}) do
        w.sample(sets.slice_open(gpu, slice), gauge[3](slice), "}")
      end
    end
  end
end

local function tenants_by_name(unit)
  local tenants = {}
  for i, tenant in ipairs(unit.tenants or {}) do
    tenants[i] = tenant
  end
  table.sort(tenants, function(a, b)
    if (a.container or "") ~= (b.container or "") then
      return (a.container or "") < (b.container or "")
    end
    return (a.containerId or "") < (b.containerId or "")
  end)
  return tenants
end

-- The tenant series of every GPU, {set, bytes, reserved} each, set the
-- text of its labels (the GPU's, its MIG slice's when on one, then the
-- tenant's): tenants whose labels print the same (the host tenants of a
-- GPU: a service, a user's session, a bare process; names that differ
-- only in a byte escaped away) are one series, their memory summed, so
-- that no two samples of a family share their labels.
local function tenant_series(sets, entries)
  local series, by_set = {}, {}
  local function add(open, unit)
    for _, tenant in ipairs(tenants_by_name(unit)) do
      local set = open .. "," .. pair.kind(tenant.kind) .. "," .. pair.container(tenant.container or "") .. ","
        .. pair.container_id(tenant.containerId or "") .. "," .. pair.nomad_job(tenant.jobName or "") .. ","
        .. pair.task(tenant.taskName or "") .. "," .. pair.alloc(tenant.allocId or "") .. ","
        .. pair.namespace(tenant.namespace or "") .. "}"
      local one = by_set[set]
      if not one then
        one = { set = set, bytes = 0, reserved = false }
        by_set[set] = one
        series[#series + 1] = one
      end
      one.bytes = one.bytes + (tenant.usedMemoryMiB or 0) * MIB
      one.reserved = one.reserved or tenant.reserved == true
    end
  end
  for _, gpu in ipairs(entries) do
    add(sets.gpu_open(gpu), gpu)
    for _, slice in ipairs(gpu.migDevices or {}) do
      add(sets.slice_open(gpu, slice), slice)
    end
  end
  return series
end

-- The families an alert can name a card or a source by (beside the
-- families above): each finding on a GPU by gpu, uuid, code and level (the number of
-- such findings, so two tenants with one code are one series of 2); 1 or 0
-- per source read or failed at the last refresh (a source that was not
-- asked has none); and, when refresh is given, how long the refresh took
-- (collecting and judging) and when it was.
local function alert_families(w, sets, findings, ledger, refresh)
  w.family("gpuledger_gpu_finding", "gauge",
    "Findings on a GPU at the last refresh, by code and level (the count of such findings).")
  local counts, order = {}, {}
  for _, finding in ipairs(findings or {}) do
    if finding.uuid then
      local key = table.concat({ finding.index, finding.uuid, finding.migUuid or "", finding.code, finding.level }, "\0")
      if not counts[key] then
        order[#order + 1] = { key = key, finding = finding }
        counts[key] = 0
      end
      counts[key] = counts[key] + 1
    end
  end
  table.sort(order, function(a, b)
    if a.finding.index ~= b.finding.index then
      return a.finding.index < b.finding.index
    end
    return a.key < b.key
  end)
  for _, item in ipairs(order) do
    local f = item.finding
    local open = sets.gpu_open(f)
    if f.migUuid then
      open = open .. "," .. pair.mig_uuid(f.migUuid) .. "," .. pair.mig_profile(f.migProfile or "")
    end
    w.sample(open, counts[item.key], "," .. pair.code(f.code) .. "," .. pair.level(f.level) .. "}")
  end
  w.family("gpuledger_source_up", "gauge", "1 when the source was read at the last refresh, 0 when it failed; absent when not asked.")
  for _, source in ipairs(source_list.NAMES) do
    local state = ledger.sources and ledger.sources[source]
    if state == "read" or state == "failed" then
      w.sample(sets.node_open, state == "read" and 1 or 0, "," .. pair.source(source) .. "}")
    end
  end
  w.family("gpuledger_refresh_duration_seconds", "gauge", "Seconds the last refresh took to read the node and judge it.")
  if refresh then
    w.sample(sets.node, refresh.seconds)
  end
  w.family("gpuledger_last_refresh_timestamp_seconds", "gauge", "Unix time of the last refresh.")
  if refresh then
    w.sample(sets.node, refresh.at)
  end
end

-- How many findings of each code: [{code, level, count}], every code of
-- codes (the effective rule set's, zero when absent) first, then any other
-- code found carries (rule-error). found: findings, each counted once, or
-- with of_group the fleet's groups of them (fleet.group_kept), each counted
-- by its count.
local function code_counts(found, codes, of_group)
  local list, by_code = {}, {}
  local function item(code, level)
    if not by_code[code] then
      by_code[code] = { code = code, level = level, count = 0 }
      list[#list + 1] = by_code[code]
    end
    return by_code[code]
  end
  for _, entry in ipairs(codes or {}) do
    item(entry.code, entry.level)
  end
  for _, one in ipairs(found or {}) do
    local counted = item(one.code, one.level)
    if of_group then
      counted.count = counted.count + one.count
    else
      counted.count = counted.count + 1
    end
  end
  return list
end

-- The node's /metrics from a report (judge.lua): its ledger (annotated),
-- findings, worst level, codes ({code, level} per code of the rule set,
-- for the zero series) and rules ({loaded, errors}; nil: no samples).
-- h: the history (nil: no counter samples). refresh: {at, seconds} of
-- serve's refresh (nil: no samples of the refresh families). build:
-- {version = gpuledger's, lua = "5.4"} (nil: no sample).
function M.node(report, h, refresh, build)
  local ledger, findings, codes, rules = report.ledger, report.findings, report.codes, report.rules
  local w = writer()
  local node = ledger.node or ""
  local sets = label_sets(node)
  local entries = ledger.entries or {}
  local up = not (ledger.errors and #ledger.errors > 0)

  w.family("gpuledger_up", "gauge", "1 when every source was read at the last refresh, 0 when one failed.")
  w.sample(sets.node, up and 1 or 0)

  w.family("gpuledger_findings", "gauge", "Findings of each code at the last refresh.")
  for _, item in ipairs(code_counts(findings, codes)) do
    w.sample(sets.node_open, item.count, "," .. pair.code(item.code) .. "," .. pair.level(item.level) .. "}")
  end

  w.family("gpuledger_worst_level", "gauge", "Worst finding level at the last refresh: 0 OK, 1 WARN, 2 BAD, 3 ERROR.")
  w.sample(sets.node, rule_schema.LEVELS[report.worst])

  w.family("gpuledger_node_info", "gauge",
    "One series naming the node's driver and CUDA versions and its Nomad node (id, name, datacenter, pool, class); "
      .. "a label is empty where it is not known; always 1.")
  local nomad_node = ledger.nomadNode or {}
  w.sample(w.labels { { "node", node }, { "driver_version", ledger.driverVersion or "" }, { "cuda_version", ledger.cudaVersion or "" },
    { "nomad_node_id", nomad_node.id or "" }, { "nomad_node_name", nomad_node.name or "" },
    { "nomad_datacenter", nomad_node.datacenter or "" }, { "nomad_node_pool", nomad_node.pool or "" },
    { "nomad_node_class", nomad_node.class or "" } }, 1)

  w.family("gpuledger_gpu_info", "gauge", "One series per GPU naming its model and PCI bus id; always 1.")
  for _, gpu in ipairs(entries) do
    w.sample(sets.gpu_open(gpu), 1, "," .. pair.model(gpu.model or "") .. "," .. pair.bus(gpu.busId or "") .. "}")
  end
  for _, gauge in ipairs(GPU_GAUGES) do
    w.family(gauge[1], "gauge", gauge[2])
    for _, gpu in ipairs(entries) do
      local value = gauge[3](gpu)
      if value ~= nil then
        w.sample(sets.gpu(gpu), value)
      end
    end
  end

  w.family("gpuledger_gpu_state", "gauge", "The GPU's state (held, reserved-idle, unaccounted, free); 1 on the current one.")
  for _, gpu in ipairs(entries) do
    w.sample(sets.gpu_open(gpu), 1, "," .. pair.state(gpu.state) .. "}")
  end
  w.family("gpuledger_gpu_state_since_timestamp_seconds", "gauge",
    "Unix time the GPU entered its current state, when the history knows it.")
  for _, gpu in ipairs(entries) do
    local since = gpu.stateSince and clock.parse_time(gpu.stateSince)
    if since then
      w.sample(sets.gpu_open(gpu), since, "," .. pair.state(gpu.state) .. "}")
    end
  end

  slice_families(w, sets, entries)
  health_families(w, sets, entries)

  local tenants = tenant_series(sets, entries)
  w.family("gpuledger_tenant_memory_bytes", "gauge", "GPU memory used by each tenant, bytes.")
  for _, tenant in ipairs(tenants) do
    w.sample(tenant.set, tenant.bytes)
  end
  w.family("gpuledger_tenant_reserved", "gauge", "1 when Nomad reserved the GPU for the tenant, else 0.")
  for _, tenant in ipairs(tenants) do
    w.sample(tenant.set, tenant.reserved and 1 or 0)
  end

  w.family("gpuledger_gpu_state_seconds_total", "counter",
    "Seconds each remembered GPU spent in each state, between consecutive good reads.")
  if h then
    for _, item in ipairs(history.sorted_gpus(h)) do
      local record = item.record
      local open = "{" .. pair.node(record.node) .. "," .. pair.gpu(tostring(record.index)) .. ","
        .. pair.uuid(item.uuid)
      for _, state in ipairs(SORTED_STATES) do
        w.sample(open, record.seconds[state] or 0, STATE_REST[state])
      end
    end
  end
  w.family("gpuledger_job_gpu_seconds_total", "counter",
    "GPU-seconds each Nomad job held (use=held) or left reserved and idle (use=idle).")
  if h then
    for _, job in ipairs(history.sorted_jobs(h)) do
      local open = sets.node_open .. "," .. pair.namespace(job.namespace) .. "," .. pair.nomad_job(job.job)
      for _, use in ipairs(USES) do
        w.sample(open, job[use], USE_REST[use])
      end
    end
  end
  w.family("gpuledger_mig_job_gpu_seconds_total", "counter",
    "GPU-seconds each Nomad job held (use=held) or left reserved and idle (use=idle) on each MIG slice, "
      .. "a slice-second counting the slice's share of its GPU's compute slices.")
  if h then
    for _, r in ipairs(history.sorted(h.slices)) do
      local open = sets.gpu_open(r) .. "," .. pair.mig_uuid(r.migUuid) .. "," .. pair.mig_profile(r.profile) .. ","
        .. pair.namespace(r.namespace) .. "," .. pair.nomad_job(r.job)
      for _, use in ipairs(USES) do
        w.sample(open, r[use], USE_REST[use])
      end
    end
  end
  w.family("gpuledger_tenant_gpu_seconds_total", "counter",
    "GPU-seconds each tenant used without a reservation: a Nomad task on a GPU it was not allocated (use=unreserved), "
      .. "a container or process outside Nomad (use=unmanaged).")
  if h then
    for _, t in ipairs(history.sorted(h.tenants)) do
      w.sample(w.labels { { "node", node }, { "kind", t.kind }, { "namespace", t.namespace }, { "nomad_job", t.job },
        { "task", t.task }, { "container", t.container }, { "tenant", t.tenant }, { "use", t.use } }, t.seconds)
    end
  end

  w.family("gpuledger_rules_loaded", "gauge", "Finding rules in the effective rule set.")
  if rules then
    w.sample(sets.node, rules.loaded)
  end
  w.family("gpuledger_rule_errors", "gauge",
    "Rule files that failed to load, a refused reload's too (the last good set stays in use until a good reload).")
  if rules then
    w.sample(sets.node, rules.errors)
  end
  alert_families(w, sets, findings, ledger, refresh)
  w.family("gpuledger_build_info", "gauge", "Always 1: the version of gpuledger and of its Lua, as labels.")
  if build then
    w.sample(w.labels { { "version", build.version }, { "lua", build.lua } }, 1)
  end
  return w.text()
end

-- fleet serve's /metrics, without a node label: whether any
-- node was read, nodes read and unreachable, the fleet's GPUs per state,
-- each job's reserved and held GPUs, and the fleet's findings per code
-- (groups: fleet.group_kept's; codes: the effective rule set's, each with a
-- series, zero when absent).
function M.fleet(summary, groups, codes)
  local w = writer()
  local total = summary.total
  local read = #summary.nodes - total.unreachable
  w.family("gpuledger_fleet_up", "gauge", "1 when at least one node was read at the last poll, else 0.")
  w.sample("", read > 0 and 1 or 0)
  w.family("gpuledger_fleet_nodes", "gauge", "Nodes read and unreachable at the last poll.")
  w.sample(w.labels { { "state", "read" } }, read)
  w.sample(w.labels { { "state", "unreachable" } }, total.unreachable)
  w.family("gpuledger_fleet_gpus", "gauge", "GPUs of the nodes read, per state.")
  for _, state in ipairs(ledger_mod.STATES) do
    w.sample(w.labels { { "state", state } }, total[fleet.COUNTER_OF_STATE[state]])
  end
  w.family("gpuledger_fleet_mig_slices", "gauge", "MIG slices of the nodes read, per state (a GPU in MIG mode also counts once in gpuledger_fleet_gpus).")
  if total.migSlices then
    for _, state in ipairs(ledger_mod.STATES) do
      w.sample(w.labels { { "state", state } }, total["mig" .. fleet.COUNTER_OF_STATE[state]:gsub("^%l", string.upper)] or 0)
    end
  end
  w.family("gpuledger_fleet_job_gpus", "gauge", "GPUs Nomad reserved for each job (use=reserved), and those it holds (use=held).")
  for _, job in ipairs(summary.jobs) do
    for _, use in ipairs { "reserved", "held" } do
      w.sample(w.labels { { "namespace", job.namespace }, { "nomad_job", job.job }, { "use", use } }, job[use])
    end
  end
  w.family("gpuledger_fleet_findings", "gauge", "Findings of each code across the fleet at the last poll.")
  for _, item in ipairs(code_counts(groups, codes, true)) do
    w.sample(w.labels { { "code", item.code }, { "level", item.level } }, item.count)
  end
  return w.text()
end

return M
