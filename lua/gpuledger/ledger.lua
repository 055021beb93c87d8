-- The join (docs/contract.md#the-join): from a snapshot, per GPU, who Nomad reserved it
-- for (reservations) and who holds it (tenants: Nomad tasks, other
-- containers, host processes), and its state. Pure: a function of the
-- snapshot alone. The ledger's fields are named as in its JSON (docs/json.md),
-- which is also what rules read.
local json = require "gpuledger.json"
local docker = require "gpuledger.sources.docker"
local gpu_health = require "gpuledger.gpu_health"
local mig = require "gpuledger.sources.mig"
local node_context = require "gpuledger.sources.node_context"
local nomad = require "gpuledger.sources.nomad"
local nvidia = require "gpuledger.sources.nvidia"
local shape = require "gpuledger.sources.shape"
local source_list = require "gpuledger.sources.list"
local text = require "gpuledger.text"

local M = {}

local pid_key = source_list.pid_key

M.SCHEMA = 1
M.STATES = { "held", "reserved-idle", "unaccounted", "free" }

local GPUS = {} -- (the key under which gpu_names keeps its GPUs)

-- Every device id that names one of gpus, with the GPUs it names (a list,
-- in the order of gpus): a GPU is named by "all", its uuid, its uuid
-- without "GPU-", its index, and a prefix of its uuid of 8 characters or
-- more. Built once per ledger, so that each list of ids is read once, not
-- once per GPU. A prefix is looked up when first asked (gpus_named), not
-- written out for every length.
function M.gpu_names(gpus)
  local names = { [GPUS] = gpus }
  local function add(id, gpu)
    local named = names[id]
    if not named then
      named = {}
      names[id] = named
    end
    if named[#named] ~= gpu then
      named[#named + 1] = gpu
    end
  end
  for _, gpu in ipairs(gpus) do
    add("all", gpu)
    add(gpu.uuid, gpu)
    if gpu.uuid:sub(1, 4) == "GPU-" then
      add(gpu.uuid:sub(5), gpu)
    end
    add(tostring(gpu.index), gpu)
  end
  return names
end

local NONE = {} -- (never written)

-- The GPUs (a list) that one device id names (names: M.gpu_names). An id
-- no GPU is named by exactly is read as a prefix of their uuids, and what
-- it names is kept in names for the next time it is asked.
local function gpus_named(names, raw)
  local id = text.trim(tostring(raw))
  local named = names[id]
  if named then
    return named
  end
  named = NONE
  if #id >= 8 then
    for _, gpu in ipairs(names[GPUS]) do
      if #gpu.uuid > #id and gpu.uuid:sub(1, #id) == id then
        if named == NONE then
          named = {}
        end
        named[#named + 1] = gpu
      end
    end
  end
  names[id] = named
  return named
end

-- The GPUs that one of the device ids names (names: M.gpu_names), as a set.
function M.named(names, ids)
  local gpus = {}
  for _, raw in ipairs(ids or NONE) do
    for _, gpu in ipairs(gpus_named(names, raw)) do
      gpus[gpu] = true
    end
  end
  return gpus
end

-- Each GPU's items among items whose device ids (item[field]) name it
-- (names: M.gpu_names): GPU → a list of them, in the order of items, each
-- once (an item whose ids name a GPU twice is the last of its list). Many
-- items name the same GPU by the same id: each distinct id is read once.
local function naming_each(items, field, names)
  local of, gpus_of = {}, {}
  for i = 1, #items do
    local item = items[i]
    local ids = item[field] or NONE
    for k = 1, #ids do
      local gpus = gpus_of[ids[k]]
      if not gpus then
        gpus = gpus_named(names, ids[k])
        gpus_of[ids[k]] = gpus
      end
      for g = 1, #gpus do
        local list = of[gpus[g]]
        if not list then
          list = {}
          of[gpus[g]] = list
        end
        if list[#list] ~= item then
          list[#list + 1] = item
        end
      end
    end
  end
  return of
end

-- The state of a GPU from its tenants and reservations
-- (docs/contract.md#gpu-states).
function M.classify(entry)
  local tenants, reservations = entry.tenants or {}, entry.reservations or {}
  if #tenants == 0 then
    return #reservations > 0 and "reserved-idle" or "free"
  end
  for _, tenant in ipairs(tenants) do
    if not (tenant.kind == "nomad" and tenant.reserved) then
      return "unaccounted"
    end
  end
  return "held"
end

-- What may be said of a tenant being on its GPU (or MIG slice): "unplaced"
-- (processes of a GPU in MIG mode the driver placed on no slice, or -q
-- could not be read: which slice, and so whether it was reserved, cannot be
-- told), "unidentified" (a
-- container no engine could tell about, or processes /proc could not place:
-- whether Nomad manages it cannot be told), "unmanaged" (outside Nomad),
-- "unreserved" (a Nomad task the GPU was not allocated to), "hidden" (Nomad
-- did not return its allocation to the token), "unknown" (Nomad was not
-- read), "unnamed" (a Nomad task whose cgroup does not name its
-- allocation), or nil for a Nomad task the GPU is reserved for.
function M.tenant_verdict(ledger, tenant)
  if tenant.unplaced then
    return "unplaced"
  elseif tenant.unidentified then
    return "unidentified"
  elseif tenant.kind ~= "nomad" then
    return "unmanaged"
  elseif tenant.reserved then
    return nil
  elseif not tenant.allocId then
    return "unnamed"
  elseif not ledger.nomadRead then
    return "unknown"
  elseif not tenant.allocVisible then
    return "hidden"
  end
  return "unreserved"
end

-- Gives every tenant of the ledger its verdict (M.tenant_verdict), once, as
-- each GPU has its state; renderers show it. Not part of the ledger's JSON
-- (M.DERIVED): a ledger read back from JSON (fleet) is given them again.
function M.give_verdicts(ledger)
  for _, entry in ipairs(ledger.entries or {}) do
    for _, tenant in ipairs(entry.tenants or {}) do
      tenant.verdict = M.tenant_verdict(ledger, tenant)
    end
    for _, slice in ipairs(entry.migDevices or {}) do
      for _, tenant in ipairs(slice.tenants or {}) do
        tenant.verdict = M.tenant_verdict(ledger, tenant)
      end
    end
  end
end

-- Fields computed from the rest that the ledger's JSON leaves out (the
-- judge gives each GPU its healthVerdict from the health rules' findings).
M.DERIVED = { verdict = true, healthVerdict = true }

-- The fields of a source that say where it was asked, as sourceErrors'
-- asked gives the first it has: an engine's endpoint, Nomad's address,
-- nvidia-smi's binary, the kernel log's file, /proc's root.
local ORIGINS = { "endpoint", "address", "binary", "path", "root" }

-- A failed source with error in place of source (what the snapshot keeps
-- of it, an object or not), keeping those of its ORIGINS that are text,
-- so that its error's entry still says where it was asked.
local function failed_source(source, error)
  local kept = { ok = false, error = error }
  for _, field in ipairs(ORIGINS) do
    kept[field] = type(source) == "table" and type(source[field]) == "string" and source[field] or nil
  end
  return kept
end

-- Where a source of the snapshot (one of checked_sources') was asked: the
-- first of its ORIGINS it has, or nil.
local function asked_at(source)
  for _, field in ipairs(ORIGINS) do
    if source[field] then
      return source[field]
    end
  end
  return nil
end

-- The snapshot's sources, each of the wrong shape replaced by a failed
-- source whose error names who answered it (source_list.asked) and the
-- field (a failed one without its error, by one that says so). A source
-- this version does not know (a later one's, in a replayed snapshot) is
-- left out, whatever it holds.
local function checked_sources(sources)
  local checked = {}
  for _, name in ipairs(source_list.NAMES) do
    local source = sources[name]
    if source ~= nil then
      local why = shape.check(source, source_list.SHAPES[name], name)
      if why then
        checked[name] = failed_source(source, shape.unexpected(source_list.asked(name, source), why))
      elseif source.ok == false and source.error == nil then -- a replay that lost the cause
        checked[name] = failed_source(source,
          string.format("%s: %s failed, and the snapshot does not say why", source_list.asked(name, source), name))
      else
        checked[name] = source
      end
    end
  end
  return checked
end

-- Why an engine's inspect record (of docker.SHAPE, at path_of(k):
-- shape.items') cannot be read, as an error naming the engine (source:
-- "<engine> <endpoint>"), or nil when it can: a record reduced to {Id,
-- Unreadable}, or a failed inspect {Id, Error}, whose error is the
-- request's own (it names the engine already).
local function unreadable(source, path_of, k, inspect)
  if inspect.Error then
    return inspect.Error
  elseif inspect.Unreadable then
    return shape.unexpected(source, string.format("%s (%s): %s", path_of(k), tostring(inspect.Id), inspect.Unreadable))
  end
end

-- Containers known to the engines, by full id: Docker's first, then
-- Podman's. A container whose inspect failed or could not be read is left
-- out, an error (added with add_error) naming the engine and the cause or
-- the field, unless the other engine knows it (each engine is asked about
-- every GPU process's container: one that failed for the other's container
-- misses nothing); so is an item of the snapshot that is no object or not
-- of docker.SHAPE, its error always.
local function known_containers(sources, add_error)
  local by_id, order, failed = {}, {}, {}
  for _, engine in ipairs(source_list.ENGINES) do
    local source = sources[engine]
    if source and source.ok then
      local name = source_list.asked(engine, source)
      local inspects, whys, path_of = shape.items(source.containers or {}, docker.SHAPE, "containers")
      for _, why in ipairs(whys) do
        failed[#failed + 1] = { engine = engine, error = shape.unexpected(name, why) }
      end
      for k, inspect in ipairs(inspects) do
        local err = unreadable(name, path_of, k, inspect)
        local container = not err and docker.describe(inspect)
        if err then
          failed[#failed + 1] = { engine = engine, id = inspect.Id, error = err }
        elseif container.id ~= "" and not by_id[container.id] then
          by_id[container.id] = container
          order[#order + 1] = container
        end
      end
    end
  end
  for _, failure in ipairs(failed) do
    if not (failure.id and by_id[failure.id]) then
      add_error(failure.engine, failure.error, { containerId = type(failure.id) == "string" and failure.id:sub(1, 12) or nil })
    end
  end
  return by_id, order
end

local function new_tenant(kind)
  return { kind = kind, pids = json.array(), processes = json.array(), usedMemoryMiB = 0, reserved = false, allocVisible = false }
end

-- A tenant for a known container on a GPU whose reservations name
-- reserved_allocs: made whole by one constructor (adding its fields to
-- new_tenant's table one by one would grow the table again); a Nomad
-- task's container (one with an allocId) also names its allocation.
local function container_tenant(container, reserved_allocs, visible)
  local alloc = container.allocId ~= "" and container.allocId or nil
  return {
    kind = alloc and "nomad" or "docker", pids = json.array(), processes = json.array(), usedMemoryMiB = 0,
    reserved = alloc ~= nil and reserved_allocs[alloc] == true,
    allocVisible = alloc ~= nil and visible ~= nil and visible[alloc] ~= nil,
    container = container.name ~= "" and container.name or nil, containerId = container.id:sub(1, 12),
    image = container.image ~= "" and container.image or nil, allocId = alloc,
    jobName = alloc and container.jobName ~= "" and container.jobName or nil,
    taskName = alloc and container.taskName ~= "" and container.taskName or nil,
    namespace = alloc and container.namespace ~= "" and container.namespace or nil,
    allocFromName = alloc and container.allocFromName or nil,
  }
end

-- A tenant for a Nomad task that runs without a container (the exec,
-- raw_exec, java and exec2 drivers), from its process's cgroup: joined to
-- its allocation as a container is by its labels.
local function task_tenant(owner, reserved_allocs, visible)
  local tenant = new_tenant("nomad")
  tenant.allocId = owner.alloc_id
  tenant.taskName = owner.task
  local alloc = visible and visible[owner.alloc_id]
  if alloc then
    tenant.jobName = alloc.jobId ~= "" and alloc.jobId or nil
    tenant.namespace = alloc.namespace
  end
  tenant.reserved = reserved_allocs[owner.alloc_id] == true
  tenant.allocVisible = alloc ~= nil
  return tenant
end

-- The key of the host tenant a process outside any container and any
-- Nomad task belongs to, from its proc record owner read as of kind
-- (owner.owner; "process" for one whose cgroup only looks like a
-- container's; nil when /proc could not tell: the one unnamed "host"
-- tenant): one per systemd service, one per user's login session, one per
-- process name and uid otherwise.
local function host_key(process, owner, kind)
  if kind == "service" then
    return "service:" .. owner.unit
  elseif kind == "session" then
    return "user:" .. owner.session_uid
  elseif kind and owner.uid then
    return string.format("process:%d:%s", owner.uid, process.process)
  end
  return "host"
end

-- The host tenant of host_key(process, owner, kind), made when its first
-- process is met.
local function host_tenant(owner, kind)
  local tenant = new_tenant("host")
  if kind == "service" then
    tenant.owner, tenant.service, tenant.uid, tenant.user = "service", owner.unit, owner.uid, owner.user
  elseif kind == "session" then
    tenant.owner, tenant.uid, tenant.user = "user", owner.session_uid, owner.session_user
  elseif kind and owner.uid then
    tenant.owner, tenant.uid, tenant.user = "process", owner.uid, owner.user
  end
  return tenant
end

-- The cgroup the engine made for each known container (containers: by
-- id), by id: its main process's (State.Pid), where /proc places that
-- process in the container. Read once per ledger, not once per process.
local function main_cgroups(containers, pid_owners)
  local cgroups = {}
  for id, container in pairs(containers) do
    local main = container.mainPid > 0 and pid_owners[pid_key(container.mainPid)]
    if main and main.container_id == id then
      cgroups[id] = main.container_cgroup
    end
  end
  return cgroups
end

-- Whether a GPU process whose cgroup names a container the engine knows is
-- that container's (docs/sources.md, "Which cgroups prove a tenant"): it is
-- the container's main process (State.Pid), or it is in the cgroup the
-- engine made for the container (main_cgroup, of main_cgroups: that
-- cgroup holds the pids the engine counts as the container's, the
-- descendants of the main process and what `exec` started), or it runs as
-- the container's user. A cgroup of the same name elsewhere proves nothing.
local function claim_holds(process, owner, container, main_cgroup)
  if container.mainPid > 0 and (process.pid == container.mainPid
      or (main_cgroup ~= nil and main_cgroup == owner.container_cgroup)) then
    return true
  end
  return container.uid ~= nil and owner.uid == container.uid
end

-- tenant marked as one that could not be identified (M.tenant_verdict).
local function unidentified(tenant)
  tenant.unidentified = true
  return tenant
end

-- The tenant of the processes /proc has no record of.
local function unidentified_host()
  return unidentified(new_tenant("host"))
end

-- The tenant of a container no engine knows, named by the cgroup of its
-- process (owner, a proc record).
local function unknown_container(owner)
  local unknown = unidentified(new_tenant("docker"))
  unknown.containerId = owner.container_id:sub(1, 12)
  unknown.runtime = owner.runtime -- what its cgroup says runs it (docker, libpod, containerd)
  return unknown
end

-- A GPU's tenants: most memory first, then by container name, id and
-- first pid (each field read once: a GPU's tenants are sorted at every
-- refresh).
local function tenant_order(a, b)
  local used_a, used_b = a.usedMemoryMiB, b.usedMemoryMiB
  if used_a ~= used_b then
    return used_a > used_b
  end
  local name_a, name_b = a.container or "", b.container or ""
  if name_a ~= name_b then
    return name_a < name_b
  end
  local id_a, id_b = a.containerId or "", b.containerId or ""
  if id_a ~= id_b then
    return id_a < id_b
  end
  return (a.pids[1] or 0) < (b.pids[1] or 0)
end

-- The tenants of the processes of one GPU (or MIG slice); pid_owners is
-- the proc source's record of each pid (gpuledger.core's proc_cgroups),
-- nil when the proc source was not asked (--no-docker: every process is
-- the one unnamed host tenant); cgroups the cgroup the engine made for
-- each known container (main_cgroups). A process /proc has no record of
-- (it failed, or the pid is not in its answer) and a container no engine
-- knows are tenants marked unidentified; a process whose cgroup names a
-- container it is not in (claim_holds) is its own tenant, by uid.
local function gpu_tenants(processes, pid_owners, containers, cgroups, reserved_allocs, visible)
  local tenants, by_key = {}, {}
  -- the tenant of key, made by make(a, b, c) (its first process is met);
  -- each process of a tenant made already finds it in by_key, without a call
  local function made(key, make, a, b, c)
    local tenant = make(a, b, c)
    by_key[key] = tenant
    tenants[#tenants + 1] = tenant
    return tenant
  end
  for i = 1, #processes do
    local process = processes[i]
    local owner = pid_owners and pid_owners[pid_key(process.pid)]
    local kind = owner and owner.owner
    local container_id = owner and owner.container_id or ""
    local container = containers[container_id]
    local tenant
    if pid_owners and not owner then
      tenant = by_key.unidentified or made("unidentified", unidentified_host)
    elseif kind == "nomad" and owner.alloc_id ~= "" then
      local key = "alloc:" .. owner.alloc_id .. "/" .. owner.task
      tenant = by_key[key] or made(key, task_tenant, owner, reserved_allocs, visible)
    elseif kind == "nomad" then -- Nomad 1.3-1.6 on cgroup v1: /nomad/<random id>
      tenant = by_key["nomad-unnamed"] or made("nomad-unnamed", new_tenant, "nomad")
    elseif container_id == "" then
      local key = host_key(process, owner, kind)
      tenant = by_key[key] or made(key, host_tenant, owner, kind)
    elseif container and claim_holds(process, owner, container, cgroups[container_id]) then
      tenant = by_key[container_id] or made(container_id, container_tenant, container, reserved_allocs, visible)
    elseif container then -- a look-alike: the process is its own tenant
      local key = host_key(process, owner, "process")
      tenant = by_key[key] or made(key, host_tenant, owner, "process")
    else
      tenant = by_key[container_id] or made(container_id, unknown_container, owner)
    end
    local n = #tenant.pids + 1
    tenant.pids[n] = process.pid
    tenant.processes[n] = process.process
    tenant.usedMemoryMiB = tenant.usedMemoryMiB + process.used_memory_mib
  end
  return tenants, by_key
end

-- Gives entry (a GPU in MIG mode) its migDevices from record (sources/mig.lua):
-- per slice its ids, memory, reservations (those whose device ids name it:
-- mig.names), tenants (its processes, placed by the driver's instance ids,
-- and the containers whose NVIDIA_VISIBLE_DEVICES names it) and state.
-- reserved_allocs are the allocations that reserved the whole GPU; a slice
-- counts them as its own; tenants_of(processes, allocs, names_it) gives a
-- slice's tenants. Returns the processes the driver placed on no slice,
-- which stay the GPU's.
local function add_slices(entry, record, processes, reservations, reserved_allocs, tenants_of)
  local on_slice, unplaced = {}, {}
  for _, process in ipairs(processes) do
    local device = mig.slice_of(record, process.pid)
    if device then
      on_slice[device] = on_slice[device] or {}
      table.insert(on_slice[device], process)
    else
      unplaced[#unplaced + 1] = process
    end
  end
  entry.migDevices = json.array()
  for _, device in ipairs(record.devices) do
    local slice = {
      uuid = device.uuid, index = device.index, profile = device.profile,
      gpuInstanceId = device.gpuInstanceId, computeInstanceId = device.computeInstanceId,
      memoryUsedMiB = device.memoryUsedMiB or 0, memoryTotalMiB = device.memoryTotalMiB or 0,
      reservations = json.array(),
    }
    local allocs = setmetatable({}, { __index = reserved_allocs })
    for _, reservation in ipairs(reservations) do
      if mig.names(reservation.deviceIds, slice, entry) then
        slice.reservations[#slice.reservations + 1] = reservation
        allocs[reservation.allocId] = true
      end
    end
    slice.tenants = tenants_of(on_slice[device] or {}, allocs, function(ids) return mig.names(ids, slice, entry) end)
    slice.state = M.classify(slice)
    entry.migDevices[#entry.migDevices + 1] = slice
  end
  return unplaced
end

-- The state of a GPU in MIG mode, from its slices' and its own (its own
-- reservations and the tenants no slice holds): the first of unaccounted,
-- held, reserved-idle that one of them is, else free.
function M.mig_state(entry)
  local seen = {}
  for _, slice in ipairs(entry.migDevices or {}) do
    seen[slice.state] = true
  end
  if #(entry.tenants or {}) > 0 or #(entry.reservations or {}) > 0 then
    seen[M.classify(entry)] = true
  end
  for _, state in ipairs { "unaccounted", "held", "reserved-idle" } do
    if seen[state] then
      return state
    end
  end
  return "free"
end

-- How each source fared: "read", "failed" or "off" (not asked).
local function source_states(sources)
  local states = {}
  for _, name in ipairs(source_list.NAMES) do
    local source = sources[name]
    if source == nil then
      states[name] = "off"
    elseif source.ok then
      states[name] = "read"
    else
      states[name] = "failed"
    end
  end
  return states
end

-- Builds the ledger of a snapshot, the Xid catalogue
-- (rules/xid_catalogue.lua) grading its Xid events. Returns
-- {schema, node, at, entries, nomadRead, nomadTokenUnset?, processesRead,
-- nvidiaInstalled?, errors?, sourceErrors?, sources} (nomadTokenUnset the
-- token variable's name when Nomad was read without a token;
-- nvidiaInstalled false only: this node
-- has no nvidia-smi; errors the text of each source error, sourceErrors the
-- same errors with their fields {source, asked?, containerId?, gpu?,
-- message}, docs/json.md),
-- every GPU with its health (gpu_health.lua; a GPU nvidia-smi no longer
-- lists comes last, index -1, missing = true), every tenant with its verdict:
-- processesRead is false when nvidia-smi's process list could not be read,
-- so that no GPU is called idle for want of an answer.
function M.build(snapshot, catalogue)
  local sources = checked_sources(snapshot.sources or {})
  local errors = {} -- {source, asked?, containerId?, gpu?, message}, in the order they are met
  local said = {} -- the messages added: one that two sources share (a field list that cannot be had) is one error
  local function add_error(name, message, fields)
    if message and not said[message] then
      said[message] = true
      local err = { source = name, asked = asked_at(sources[name] or {}), message = message }
      for key, value in pairs(fields or {}) do
        err[key] = value
      end
      errors[#errors + 1] = err
    end
  end
  local gpus, processes, nvidia_errors = nvidia.read(sources.nvidia)
  for _, message in ipairs(nvidia_errors) do
    add_error("nvidia", message)
  end
  local health, health_errors = gpu_health.read(sources)
  for _, err in ipairs(health_errors) do
    add_error(err.source, err.message, { gpu = err.gpu })
  end
  local proc = sources.proc
  if proc and not proc.ok then
    add_error("proc", proc.error)
  end
  for _, engine in ipairs(source_list.ENGINES) do
    local source = sources[engine]
    if source and not source.ok then
      add_error(engine, source.error)
    end
  end
  local visible, reservations, nomad_error = nomad.read(sources.nomad)
  add_error("nomad", nomad_error)
  local mig_gpus, mig_error = mig.read(sources.mig)
  add_error("mig", mig_error)
  local context, context_errors = node_context.read(sources)
  for _, message in ipairs(context_errors) do
    add_error("health", message)
  end
  for _, err in ipairs(snapshot.errors or {}) do -- a snapshot's own (collect/node.lua), by text
    errors[#errors + 1] = { message = err }
  end

  local pid_owners = proc and (proc.ok and proc.pids or {})
  local containers, container_order = known_containers(sources, add_error)
  local container_cgroups = main_cgroups(containers, pid_owners or {})

  table.sort(gpus, function(a, b) return a.index < b.index end)
  if sources.nvidia and sources.nvidia.ok then
    for _, lost in ipairs(gpu_health.missing(gpus, health)) do
      gpus[#gpus + 1] = lost
    end
  end
  -- The tenants of a GPU or slice: of its processes, and the known
  -- containers given it (naming, in container_order) that have none.
  local function tenants_of(unit_processes, reserved_allocs, naming)
    local tenants, by_key = gpu_tenants(unit_processes, pid_owners, containers, container_cgroups, reserved_allocs, visible)
    for _, container in ipairs(naming) do
      if not by_key[container.id] then
        tenants[#tenants + 1] = container_tenant(container, reserved_allocs, visible)
      end
    end
    table.sort(tenants, tenant_order)
    return json.array(tenants)
  end
  local function slice_tenants(unit_processes, reserved_allocs, names_it)
    local naming = {}
    for _, container in ipairs(container_order) do
      if #container.gpus > 0 and names_it(container.gpus) then
        naming[#naming + 1] = container
      end
    end
    return tenants_of(unit_processes, reserved_allocs, naming)
  end
  local names = M.gpu_names(gpus)
  local reservations_of = naming_each(reservations, "deviceIds", names)
  local containers_of = naming_each(container_order, "gpus", names)
  local processes_of = {}
  for i = 1, #processes do
    local process = processes[i]
    local list = processes_of[process.gpu_uuid]
    if not list then
      list = {}
      processes_of[process.gpu_uuid] = list
    end
    list[#list + 1] = process
  end
  local entries = json.array()
  for _, gpu in ipairs(gpus) do
    local entry = gpu
    entry.reservations = json.array(reservations_of[gpu] or {})
    local reserved_allocs = {}
    for _, reservation in ipairs(entry.reservations) do
      reserved_allocs[reservation.allocId] = true
    end
    local own = processes_of[gpu.uuid] or {}
    local record = mig_gpus[gpu.uuid]
    if record then
      own = add_slices(entry, record, own, reservations, reserved_allocs, slice_tenants)
    end
    entry.tenants = tenants_of(own, reserved_allocs, containers_of[gpu] or {})
    for _, tenant in ipairs(record and entry.tenants or {}) do
      tenant.unplaced = #tenant.pids > 0 or nil
    end
    entry.state = record and M.mig_state(entry) or M.classify(entry)
    entries[#entries + 1] = text.cut_strings(entry, text.NAME_MAX)
  end
  gpu_health.attach(entries, health, catalogue or {})

  local apps = sources.nvidia and sources.nvidia.compute_apps
  local ledger = {
    schema = M.SCHEMA,
    node = text.cut(snapshot.node or "", text.NAME_MAX),
    at = snapshot.at,
    entries = entries,
    driverVersion = context.driverVersion, cudaVersion = context.cudaVersion, nomadNode = context.nomadNode,
    nomadRead = visible ~= nil,
    nomadTokenUnset = visible ~= nil and sources.nomad.token_unset or nil,
    processesRead = apps ~= nil and apps.error == nil,
    errors = #errors > 0 and json.array() or nil,
    sourceErrors = #errors > 0 and json.array(text.cut_strings(errors, text.ERROR_MAX)) or nil,
    sources = source_states(sources),
  }
  for i, err in ipairs(ledger.sourceErrors or {}) do
    ledger.errors[i] = err.message
  end
  if sources.nvidia and sources.nvidia.installed == false then
    ledger.nvidiaInstalled = false
  end
  M.give_verdicts(ledger)
  return ledger
end

return M
