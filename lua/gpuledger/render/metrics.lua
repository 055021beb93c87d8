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
  if s:find('[\\"\n]') then
    s = s:gsub('[\\"\n]', { ["\\"] = "\\\\", ['"'] = '\\"', ["\n"] = "\\n" })
  end
  return text.printable(s)
end

-- A sample value: integers plain, floats in their shortest exact form
-- (98.5, 12, 15.5), as Go's strconv 'g' -1 writes them.
function M.number(n)
  if type(n) == "boolean" then
    return n and "1" or "0"
  end
  if n ~= n then
    return "NaN"
  elseif n == math.huge then
    return "+Inf"
  elseif n == -math.huge then
    return "-Inf"
  end
  return json.number_text(n)
end

-- Collects the lines of the document, family by family, as pieces joined
-- once at the end (a sample's line is never put together on its own).
local function writer()
  local out, n = {}, 0
  local pairs_of = {} -- label name → text value → name="escaped value": a node's, a GPU's labels recur in many samples
  local w = {}
  -- Starts a family: its HELP and TYPE lines.
  function w.family(name, kind, help)
    out[n + 1] = string.format("# HELP %s %s\n", name, (help:gsub("\\", "\\\\"):gsub("\n", "\\n")))
    out[n + 2] = string.format("# TYPE %s %s\n", name, kind)
    n = n + 2
    w.name = name
  end
  -- Adds the pieces of the label set labels (an array of {name, value}),
  -- {name="value",…} (nothing for none), to the list into after its item
  -- at; returns the index of the last one.
  local function add_labels(into, at, labels)
    for i, label in ipairs(labels) do
      local name, raw = label[1], label[2]
      local of_name = pairs_of[name]
      if not of_name then
        of_name = {}
        pairs_of[name] = of_name
      end
      local pair = of_name[raw]
      if not pair then
        pair = name .. '="' .. M.escape(raw) .. '"'
        if type(raw) == "string" then -- (a number's text is its own: 1 and 1.0 are one key)
          of_name[raw] = pair
        end
      end
      into[at + 1], into[at + 2] = i == 1 and "{" or ",", pair
      at = at + 2
    end
    if labels[1] then
      at = at + 1
      into[at] = "}"
    end
    return at
  end
  -- The text of a label set that several samples share, which w.sample
  -- takes in place of the set.
  function w.labels(labels)
    local pieces = {}
    add_labels(pieces, 0, labels)
    return table.concat(pieces)
  end
  -- A sample of the current family: labels is an array of {name, value},
  -- or a set's text (w.labels).
  function w.sample(labels, value)
    n = n + 1
    out[n] = w.name
    if type(labels) == "string" then
      n = n + 1
      out[n] = labels
    else
      n = add_labels(out, n, labels)
    end
    out[n + 1], out[n + 2], out[n + 3] = " ", M.number(value), "\n"
    n = n + 3
  end
  function w.text()
    return table.concat(out)
  end
  return w
end

-- {node, gpu, uuid} of a GPU, plus extra label pairs.
local function gpu_labels(node, gpu, ...)
  local labels = { { "node", node }, { "gpu", gl.index_text(gpu) }, { "uuid", gpu.uuid } }
  for _, extra in ipairs { ... } do
    labels[#labels + 1] = extra
  end
  return labels
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

-- The health of each GPU: its health level (the judge's verdict), this
-- boot's Xid events per code, and the driver's health values.
local function health_families(w, node, entries)
  w.family("gpuledger_gpu_health_level", "gauge",
    "The GPU's health, the worst of its health findings: 0 OK, 1 WARN, 2 BAD, 3 ERROR; absent when nothing of its health was read.")
  for _, gpu in ipairs(entries) do
    if gpu.healthVerdict then
      w.sample(gpu_labels(node, gpu), rule_schema.LEVELS[gpu.healthVerdict.level])
    end
  end
  w.family("gpuledger_gpu_xid_events", "gauge", "Xid events in this boot's kernel log for the GPU, per Xid code (read again at each refresh).")
  for _, gpu in ipairs(entries) do
    for _, group in ipairs(gpu.xids or {}) do
      w.sample(gpu_labels(node, gpu, { "xid", tostring(group.xid) }), group.count)
    end
  end
  for _, family in ipairs(HEALTH_FAMILIES) do
    w.family(family[1], "gauge", family[2])
    for _, gpu in ipairs(entries) do
      for _, series in ipairs(gpu.health and family[4] or {}) do
        local value = series[2](gpu.health)
        if value ~= nil then
          local labels = gpu_labels(node, gpu)
          for i, label in ipairs(family[3]) do
            labels[#labels + 1] = { label, series[1][i] }
          end
          w.sample(labels, value)
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

-- The per-GPU gauges, in the contract's order: name, help, value of a GPU (nil: no sample).
local GPU_GAUGES = {
  { "gpuledger_gpu_utilization_percent", "GPU utilisation in percent.", function(g) return g.utilizationPct end },
  { "gpuledger_gpu_memory_used_bytes", "GPU memory in use, bytes.", function(g) return g.memoryUsedMiB * MIB end },
  { "gpuledger_gpu_memory_total_bytes", "GPU memory in total, bytes.", function(g) return g.memoryTotalMiB * MIB end },
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

-- A MIG slice's labels after its GPU's.
local function slice_labels(node, gpu, slice, ...)
  return gpu_labels(node, gpu, { "mig_uuid", slice.uuid }, { "mig_profile", slice.profile }, ...)
end

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
local function slice_families(w, node, entries)
  w.family("gpuledger_mig_state", "gauge", "The MIG slice's state (held, reserved-idle, unaccounted, free); 1 on the current one.")
  for _, gpu in ipairs(entries) do
    for _, slice in ipairs(gpu.migDevices or {}) do
      w.sample(slice_labels(node, gpu, slice, { "state", slice.state }), 1)
    end
  end
  for _, gauge in ipairs(SLICE_GAUGES) do
    w.family(gauge[1], "gauge", gauge[2])
    for _, gpu in ipairs(entries) do
      for _, slice in ipairs(gpu.migDevices or {}) do
        w.sample(slice_labels(node, gpu, slice), gauge[3](slice))
      end
    end
  end
end

-- A tenant's labels after the GPU's (and its MIG slice's, when on one).
local function tenant_labels(node, gpu, tenant, slice)
  local labels = slice and slice_labels(node, gpu, slice) or gpu_labels(node, gpu)
  for _, label in ipairs {
    { "kind", tenant.kind }, { "container", tenant.container or "" }, { "container_id", tenant.containerId or "" },
    { "nomad_job", tenant.jobName or "" }, { "task", tenant.taskName or "" }, { "alloc", tenant.allocId or "" },
    { "namespace", tenant.namespace or "" } } do
    labels[#labels + 1] = label
  end
  return labels
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

-- The tenant series of every GPU, {labels, bytes, reserved} each: tenants
-- whose labels print the same (the host tenants of a GPU: a service, a
-- user's session, a bare process; names that differ only in a byte escaped
-- away) are one series, their memory summed, so that no two samples of a
-- family share their labels.
local function tenant_series(node, entries)
  local series, by_key = {}, {}
  local units = {}
  for _, gpu in ipairs(entries) do
    units[#units + 1] = { gpu = gpu, tenants = gpu.tenants }
    for _, slice in ipairs(gpu.migDevices or {}) do
      units[#units + 1] = { gpu = gpu, slice = slice, tenants = slice.tenants }
    end
  end
  for _, unit in ipairs(units) do
    for _, tenant in ipairs(tenants_by_name(unit)) do
      local labels = tenant_labels(node, unit.gpu, tenant, unit.slice)
      local parts = {}
      for i, label in ipairs(labels) do
        parts[i] = M.escape(label[2])
      end
      local key = table.concat(parts, "\0")
      local one = by_key[key]
      if not one then
        one = { labels = labels, bytes = 0, reserved = false }
        by_key[key] = one
        series[#series + 1] = one
      end
      one.bytes = one.bytes + (tenant.usedMemoryMiB or 0) * MIB
      one.reserved = one.reserved or tenant.reserved == true
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
local function alert_families(w, node, findings, ledger, refresh)
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
    local labels = f.migUuid and slice_labels(node, f, { uuid = f.migUuid, profile = f.migProfile or "" }, { "code", f.code },
      { "level", f.level }) or gpu_labels(node, f, { "code", f.code }, { "level", f.level })
    w.sample(labels, counts[item.key])
  end
  w.family("gpuledger_source_up", "gauge", "1 when the source was read at the last refresh, 0 when it failed; absent when not asked.")
  for _, source in ipairs(source_list.NAMES) do
    local state = ledger.sources and ledger.sources[source]
    if state == "read" or state == "failed" then
      w.sample({ { "node", node }, { "source", source } }, state == "read" and 1 or 0)
    end
  end
  w.family("gpuledger_refresh_duration_seconds", "gauge", "Seconds the last refresh took to read the node and judge it.")
  if refresh then
    w.sample({ { "node", node } }, refresh.seconds)
  end
  w.family("gpuledger_last_refresh_timestamp_seconds", "gauge", "Unix time of the last refresh.")
  if refresh then
    w.sample({ { "node", node } }, refresh.at)
  end
end

-- How many findings of each code: [{code, level, count}], every code of
-- codes (the effective rule set's, zero when absent) first, then any other
-- code a finding carries (rule-error).
local function code_counts(findings, codes)
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
  for _, finding in ipairs(findings or {}) do
    local counted = item(finding.code, finding.level)
    counted.count = counted.count + 1
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
  local entries = ledger.entries or {}
  local up = not (ledger.errors and #ledger.errors > 0)

  w.family("gpuledger_up", "gauge", "1 when every source was read at the last refresh, 0 when one failed.")
  w.sample({ { "node", node } }, up and 1 or 0)

  w.family("gpuledger_findings", "gauge", "Findings of each code at the last refresh.")
  for _, item in ipairs(code_counts(findings, codes)) do
    w.sample({ { "node", node }, { "code", item.code }, { "level", item.level } }, item.count)
  end

  w.family("gpuledger_worst_level", "gauge", "Worst finding level at the last refresh: 0 OK, 1 WARN, 2 BAD, 3 ERROR.")
  w.sample({ { "node", node } }, rule_schema.LEVELS[report.worst])

  w.family("gpuledger_node_info", "gauge",
    "One series naming the node's driver and CUDA versions and its Nomad node (id, name, datacenter, pool, class); "
      .. "a label is empty where it is not known; always 1.")
  local nomad_node = ledger.nomadNode or {}
  w.sample({ { "node", node }, { "driver_version", ledger.driverVersion or "" }, { "cuda_version", ledger.cudaVersion or "" },
    { "nomad_node_id", nomad_node.id or "" }, { "nomad_node_name", nomad_node.name or "" },
    { "nomad_datacenter", nomad_node.datacenter or "" }, { "nomad_node_pool", nomad_node.pool or "" },
    { "nomad_node_class", nomad_node.class or "" } }, 1)

  w.family("gpuledger_gpu_info", "gauge", "One series per GPU naming its model and PCI bus id; always 1.")
  for _, gpu in ipairs(entries) do
    w.sample(gpu_labels(node, gpu, { "model", gpu.model or "" }, { "bus", gpu.busId or "" }), 1)
  end
  for _, gauge in ipairs(GPU_GAUGES) do
    w.family(gauge[1], "gauge", gauge[2])
    for _, gpu in ipairs(entries) do
      local value = gauge[3](gpu)
      if value ~= nil then
        w.sample(gpu_labels(node, gpu), value)
      end
    end
  end

  w.family("gpuledger_gpu_state", "gauge", "The GPU's state (held, reserved-idle, unaccounted, free); 1 on the current one.")
  for _, gpu in ipairs(entries) do
    w.sample(gpu_labels(node, gpu, { "state", gpu.state }), 1)
  end
  w.family("gpuledger_gpu_state_since_timestamp_seconds", "gauge",
    "Unix time the GPU entered its current state, when the history knows it.")
  for _, gpu in ipairs(entries) do
    local since = gpu.stateSince and clock.parse_time(gpu.stateSince)
    if since then
      w.sample(gpu_labels(node, gpu, { "state", gpu.state }), since)
    end
  end

  slice_families(w, node, entries)
  health_families(w, node, entries)

  local tenants = tenant_series(node, entries)
  local tenant_sets = {} -- each tenant's labels, written once for both families
  for i, tenant in ipairs(tenants) do
    tenant_sets[i] = w.labels(tenant.labels)
  end
  w.family("gpuledger_tenant_memory_bytes", "gauge", "GPU memory used by each tenant, bytes.")
  for i, tenant in ipairs(tenants) do
    w.sample(tenant_sets[i], tenant.bytes)
  end
  w.family("gpuledger_tenant_reserved", "gauge", "1 when Nomad reserved the GPU for the tenant, else 0.")
  for i, tenant in ipairs(tenants) do
    w.sample(tenant_sets[i], tenant.reserved and 1 or 0)
  end

  w.family("gpuledger_gpu_state_seconds_total", "counter",
    "Seconds each remembered GPU spent in each state, between consecutive good reads.")
  if h then
    for _, item in ipairs(history.sorted_gpus(h)) do
      local record = item.record
      for _, state in ipairs(SORTED_STATES) do
        w.sample({ { "node", record.node }, { "gpu", tostring(record.index) }, { "uuid", item.uuid }, { "state", state } },
          record.seconds[state] or 0)
      end
    end
  end
  w.family("gpuledger_job_gpu_seconds_total", "counter",
    "GPU-seconds each Nomad job held (use=held) or left reserved and idle (use=idle).")
  if h then
    for _, job in ipairs(history.sorted_jobs(h)) do
      for _, use in ipairs { "held", "idle" } do
        w.sample({ { "node", node }, { "namespace", job.namespace }, { "nomad_job", job.job }, { "use", use } }, job[use])
      end
    end
  end
  w.family("gpuledger_mig_job_gpu_seconds_total", "counter",
    "GPU-seconds each Nomad job held (use=held) or left reserved and idle (use=idle) on each MIG slice, "
      .. "a slice-second counting the slice's share of its GPU's compute slices.")
  if h then
    for _, r in ipairs(history.sorted(h.slices)) do
      for _, use in ipairs { "held", "idle" } do
        w.sample(slice_labels(node, r, { uuid = r.migUuid, profile = r.profile }, { "namespace", r.namespace },
          { "nomad_job", r.job }, { "use", use }), r[use])
      end
    end
  end
  w.family("gpuledger_tenant_gpu_seconds_total", "counter",
    "GPU-seconds each tenant used without a reservation: a Nomad task on a GPU it was not allocated (use=unreserved), "
      .. "a container or process outside Nomad (use=unmanaged).")
  if h then
    for _, t in ipairs(history.sorted(h.tenants)) do
      w.sample({ { "node", node }, { "kind", t.kind }, { "namespace", t.namespace }, { "nomad_job", t.job },
        { "task", t.task }, { "container", t.container }, { "tenant", t.tenant }, { "use", t.use } }, t.seconds)
    end
  end

  w.family("gpuledger_rules_loaded", "gauge", "Finding rules in the effective rule set.")
  if rules then
    w.sample({ { "node", node } }, rules.loaded)
  end
  w.family("gpuledger_rule_errors", "gauge",
    "Rule files that failed to load, a refused reload's too (the last good set stays in use until a good reload).")
  if rules then
    w.sample({ { "node", node } }, rules.errors)
  end
  alert_families(w, node, findings, ledger, refresh)
  w.family("gpuledger_build_info", "gauge", "Always 1: the version of gpuledger and of its Lua, as labels.")
  if build then
    w.sample({ { "version", build.version }, { "lua", build.lua } }, 1)
  end
  return w.text()
end

-- fleet serve's /metrics, without a node label: whether any
-- node was read, nodes read and unreachable, the fleet's GPUs per state,
-- each job's reserved and held GPUs, and the fleet's findings per code
-- (codes: the effective rule set's, each with a series, zero when absent).
function M.fleet(summary, findings, codes)
  local w = writer()
  local total = summary.total
  local read = #summary.nodes - total.unreachable
  w.family("gpuledger_fleet_up", "gauge", "1 when at least one node was read at the last poll, else 0.")
  w.sample({}, read > 0 and 1 or 0)
  w.family("gpuledger_fleet_nodes", "gauge", "Nodes read and unreachable at the last poll.")
  w.sample({ { "state", "read" } }, read)
  w.sample({ { "state", "unreachable" } }, total.unreachable)
  w.family("gpuledger_fleet_gpus", "gauge", "GPUs of the nodes read, per state.")
  for _, state in ipairs(ledger_mod.STATES) do
    w.sample({ { "state", state } }, total[fleet.COUNTER_OF_STATE[state]])
  end
  w.family("gpuledger_fleet_mig_slices", "gauge", "MIG slices of the nodes read, per state (a GPU in MIG mode also counts once in gpuledger_fleet_gpus).")
  if total.migSlices then
    for _, state in ipairs(ledger_mod.STATES) do
      w.sample({ { "state", state } }, total["mig" .. fleet.COUNTER_OF_STATE[state]:gsub("^%l", string.upper)] or 0)
    end
  end
  w.family("gpuledger_fleet_job_gpus", "gauge", "GPUs Nomad reserved for each job (use=reserved), and those it holds (use=held).")
  for _, job in ipairs(summary.jobs) do
    for _, use in ipairs { "reserved", "held" } do
      w.sample({ { "namespace", job.namespace }, { "nomad_job", job.job }, { "use", use } }, job[use])
    end
  end
  w.family("gpuledger_fleet_findings", "gauge", "Findings of each code across the fleet at the last poll.")
  for _, item in ipairs(code_counts(findings, codes)) do
    w.sample({ { "code", item.code }, { "level", item.level } }, item.count)
  end
  return w.text()
end

return M
