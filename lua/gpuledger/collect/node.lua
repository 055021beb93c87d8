-- Collecting a node's snapshot (docs/architecture.md, "The snapshot is the seam"): every
-- source's raw answer, already reduced where privacy demands it, or the
-- source's error. The only module that calls the collectors of the C core.
local clock = require "gpuledger.clock"
local docker = require "gpuledger.collect.docker"
local gather = require "gpuledger.collect.gather"
local kernel_log = require "gpuledger.collect.kernel_log"
local nomad = require "gpuledger.collect.nomad"
local nvidia = require "gpuledger.collect.nvidia"
local nvidia_parse = require "gpuledger.sources.nvidia"
local snapshot = require "gpuledger.snapshot"
local source_list = require "gpuledger.sources.list"

local M = {}

local pid_key = source_list.pid_key

-- How long past the HTTP sources' deadlines their run may last (their
-- requests end by their own deadlines; this only bounds the run itself).
local GATHER_MARGIN_MS = 1000

-- The pids nvidia-smi reported, as integers.
local function reported_pids(source)
  local pids = {}
  for _, row in ipairs(source.compute_apps and source.compute_apps.rows or {}) do
    local pid = nvidia_parse.int_value(row[2])
    if pid > 0 then
      pids[#pids + 1] = pid
    end
  end
  return pids
end

-- Who each GPU process belongs to (a container, a Nomad task, a service, a
-- login session or itself) and its uid, from <proc>/<pid>/cgroup and status;
-- a container or a Nomad task only from a cgroup under the system's own
-- roots or cgroup_parents (docs/sources.md, "Which cgroups prove a
-- tenant").
local function collect_proc(core, proc_root, cgroup_parents, pids)
  local found, why = core.proc_cgroups(proc_root, pids, cgroup_parents)
  if not found then
    return { ok = false, root = proc_root, error = string.format("proc %s: %s", proc_root, why) }
  end
  local by_pid = {}
  for pid, container in pairs(found) do
    by_pid[pid_key(pid)] = container
  end
  return { ok = true, root = proc_root, pids = by_pid }
end

-- The Podman endpoint --podman names: nil for none. `exists`
-- tells whether a path exists (for auto). The second value is true when the
-- operator named it explicitly (an unreachable named endpoint is an error; a
-- missing default socket is simply no Podman).
function M.podman_endpoint(value, exists)
  if value == "off" or value == "" then
    return nil
  end
  if value == "auto" then
    local socket = "/run/podman/podman.sock"
    if exists(socket) then
      return "unix://" .. socket, false
    end
    return nil
  end
  return value, true
end


-- The engines to ask, Docker first: {name, address} pairs.
local function engines(core, config)
  local list = { { "docker", config.docker.endpoint } }
  local podman = M.podman_endpoint(config.podman.endpoint, function(path) return core.stat(path) ~= nil end)
  if podman then
    list[#list + 1] = { "podman", podman }
  end
  return list
end

-- The main processes (State.Pid) of the engines' containers that /proc was
-- not asked about yet.
local function main_pids(sources)
  local pids = {}
  for _, name in ipairs(source_list.ENGINES) do
    local engine = sources[name]
    for _, container in ipairs(engine and engine.containers or {}) do
      local pid = math.tointeger(type(container.State) == "table" and container.State.Pid)
      if pid and pid > 0 and not sources.proc.pids[pid_key(pid)] then
        pids[#pids + 1] = pid
      end
    end
  end
  return pids
end

-- Adds the records of the containers' main processes to the proc source,
-- by which the ledger tells whether a GPU process that claims a container
-- is that container's (docs/sources.md, "Which cgroups prove a tenant").
local function add_main_processes(core, config, sources)
  local pids = sources.proc and sources.proc.ok and main_pids(sources) or {}
  if #pids == 0 then
    return
  end
  local found = core.proc_cgroups(config.proc.root, pids, config.proc.cgroup_parents) or {}
  for pid, record in pairs(found) do
    sources.proc.pids[pid_key(pid)] = record
  end
end

-- The containers of the GPU processes /proc named (full ids).
local function process_containers(proc)
  local ids = {}
  for _, process in pairs(proc.pids or {}) do
    if process.container_id then
      ids[#ids + 1] = process.container_id
    end
  end
  table.sort(ids)
  return ids
end

-- Collects this node's snapshot with core, as config (options.config:
-- node, nvidia, health, kernel_log, proc, docker, podman, nomad) says.
-- Each source has one deadline for all it is asked: nvidia-smi's queries
-- share nvidia.TIMEOUT_MS, asked in rounds (collect/nvidia.lua: the main
-- query, the process list, the driver's field list and the newest driver's
-- optional query; the driver's own in a round after where that is not it;
-- then the MIG slices where a GPU is in MIG mode); then, at once,
-- each engine's list and inspects share docker.DEADLINE_MS and Nomad's
-- calls nomad.DEADLINE_MS; the journal has kernel_log.TIMEOUT_MS.
-- kept: nil, or a table a caller that collects again and again (serve)
-- keeps across its calls, where the sources leave what lets the next call
-- read only what is new (the kernel log's position).
function M.collect(core, config, kept)
  local at = core.now()
  local sources = {}
  local nvidia_sources = nvidia.collect(core, config.nvidia.binary, config.health.enabled,
    core.monotonic_ms() + nvidia.TIMEOUT_MS)
  sources.nvidia, sources.health, sources.mig = nvidia_sources.nvidia, nvidia_sources.health, nvidia_sources.mig
  -- Without an NVIDIA driver there is no GPU to ask about: only Nomad is
  -- asked (a GPU it fingerprinted here is then reported as lost).
  local driver = sources.nvidia.installed ~= false
  if driver then
    if kept then
      kept.kernel_log = kept.kernel_log or {}
    end
    sources.kernel_log = kernel_log.collect(core, config.kernel_log.mode, config.kernel_log.proc_root, at,
      kept and kept.kernel_log)
  end

  local tasks = {}
  if config.docker.enabled and driver then
    sources.proc = collect_proc(core, config.proc.root, config.proc.cgroup_parents, reported_pids(sources.nvidia))
    local wanted = process_containers(sources.proc)
    for _, engine in ipairs(engines(core, config)) do
      local name, address = engine[1], engine[2]
      tasks[#tasks + 1] = function(task_core)
        sources[name] = docker.collect(task_core, name, address, wanted)
      end
    end
  end
  if config.nomad.enabled then
    tasks[#tasks + 1] = function(task_core)
      local deadline_ms = task_core.monotonic_ms() + nomad.DEADLINE_MS
      sources.nomad = nomad.collect(task_core, config.nomad, deadline_ms)
      if sources.nomad.ok then
        sources.nomad_devices = nomad.collect_devices(task_core, config.nomad, sources.nomad.node_id, deadline_ms)
      end
    end
  end
  gather.run(core, tasks, math.max(docker.DEADLINE_MS, nomad.DEADLINE_MS) + GATHER_MARGIN_MS)
  add_main_processes(core, config, sources)
  return snapshot.new(config.node, clock.format_time(at), sources)
end

return M
