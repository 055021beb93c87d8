-- Collecting a node's snapshot (DESIGN.md, "The snapshot is the seam"): every
-- source's raw answer, already reduced where privacy demands it, or the
-- source's error. The only module that calls the collectors of the C core.
local clock = require "gpuledger.clock"
local nvidia = require "gpuledger.sources.nvidia"
local snapshot = require "gpuledger.snapshot"

local M = {}

-- The pids nvidia-smi reported, as integers.
local function reported_pids(source)
  local pids = {}
  for _, row in ipairs(source.compute_apps and source.compute_apps.rows or {}) do
    local pid = nvidia.int_value(row[2])
    if pid > 0 then
      pids[#pids + 1] = pid
    end
  end
  return pids
end

-- Which container each GPU process is in, from <proc>/<pid>/cgroup.
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

-- Collects this node's snapshot with core, as opts (the command line) say.
function M.collect(core, opts)
  local at = core.now()
  local sources = {}
  sources.nvidia = nvidia.collect(core, opts["nvidia-smi"])
  if not opts["no-docker"] then
    sources.proc = collect_proc(core, opts.proc, reported_pids(sources.nvidia))
  end
  return snapshot.new(opts.node, clock.format_time(at), sources)
end

return M
