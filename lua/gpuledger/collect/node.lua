-- Collecting a node's snapshot (DESIGN.md, "The snapshot is the seam"): every
-- source's raw answer, already reduced where privacy demands it, or the
-- source's error. The only module that calls the collectors of the C core.
local clock = require "gpuledger.clock"
local docker = require "gpuledger.collect.docker"
local health = require "gpuledger.collect.health"
local kernel_log = require "gpuledger.collect.kernel_log"
local http = require "gpuledger.collect.http"
local nomad = require "gpuledger.collect.nomad"
local nvidia = require "gpuledger.collect.nvidia"
local nvidia_parse = require "gpuledger.sources.nvidia"
local snapshot = require "gpuledger.snapshot"

local M = {}

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
-- login session or itself) and its uid, from <proc>/<pid>/cgroup and status.
local function collect_proc(core, proc_root, pids)
  local found, why = core.proc_cgroups(proc_root, pids)
  if not found then
    return { ok = false, root = proc_root, error = string.format("proc %s: %s", proc_root, why) }
  end
  local by_pid = {}
  for pid, container in pairs(found) do
    by_pid[tostring(pid)] = container
  end
  return { ok = true, root = proc_root, pids = by_pid }
end

-- The Podman endpoint --podman names (SPEC §1.3): nil for none. `exists`
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

-- Inspects, engine by engine, the containers of GPU processes that no list
-- showed (SPEC §2.3: a container started between the list and now); the
-- first engine that knows one keeps it.
local function inspect_unlisted(core, sources, order, proc)
  local listed = {}
  for _, name in ipairs(order) do
    for _, inspect in ipairs(sources[name].containers or {}) do
      listed[inspect.Id] = true
    end
  end
  for _, process in pairs(proc.pids or {}) do
    local id = process.container_id
    if id and not listed[id] then
      listed[id] = true
      for _, name in ipairs(order) do
        local source = sources[name]
        local endpoint = source.ok and http.endpoint(source.endpoint)
        local inspect = endpoint and docker.inspect(core, name, endpoint, id)
        if inspect then
          source.containers[#source.containers + 1] = inspect
          break
        end
      end
    end
  end
end

-- Collects this node's snapshot with core, as config (options.config:
-- node, nvidia, health, kernel_log, proc, docker, podman, nomad) says.
function M.collect(core, config)
  local at = core.now()
  local sources = {}
  sources.nvidia = nvidia.collect(core, config.nvidia.binary)
  if config.docker.enabled then
    sources.proc = collect_proc(core, config.proc.root, reported_pids(sources.nvidia))
    local order = {}
    for _, engine in ipairs(engines(core, config)) do
      local name, address = engine[1], engine[2]
      sources[name] = docker.collect(core, name, address)
      order[#order + 1] = name
    end
    if sources.proc.ok then
      inspect_unlisted(core, sources, order, sources.proc)
    end
  end
  if config.health.enabled and sources.nvidia.ok then -- a driver that failed the main query has no health to tell
    sources.health = health.collect(core, config.health.binary)
  end
  sources.kernel_log = kernel_log.collect(core, config.kernel_log.mode, config.kernel_log.proc_root, at)
  if config.nomad.enabled then
    sources.nomad = nomad.collect(core, config.nomad)
    if sources.nomad.ok then
      sources.nomad_devices = nomad.collect_devices(core, config.nomad, sources.nomad.node_id)
    end
  end
  return snapshot.new(config.node, clock.format_time(at), sources)
end

return M
