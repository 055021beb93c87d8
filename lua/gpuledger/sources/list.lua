-- Every source of a snapshot, once, in the order `ls` and the metrics show
-- them, each with the shape of its answer as a snapshot keeps it
-- (shape.lua): what the ledger checks a source against where it enters, and
-- what everything that shows or checks sources reads. A new source is one
-- entry here. An engine's containers and Nomad's allocations are checked
-- one by one, and so are the health rows, kernel log records and Nomad's
-- devices (gpu_health.read): here these are lists of anything, so that one
-- bad item costs only itself.
local json = require "gpuledger.json"
local kernel_log = require "gpuledger.sources.kernel_log"
local nomad = require "gpuledger.sources.nomad"
local nvidia = require "gpuledger.sources.nvidia"
local shape = require "gpuledger.sources.shape"

local M = {}

-- The key of a pid (an integer) in the proc source's pids: its decimal
-- text, as tostring writes it, without tostring's printf (the join looks
-- up every GPU process's pid).
M.pid_key = json.number_text

local OK = shape.required "boolean" -- a source without it would fail saying nothing
-- A count or an id that is a whole number (a slice's index, its instance
-- ids, its memory in MiB, a pid, a uid).
local WHOLE = shape.whole(0, shape.MAX_WHOLE)
local PROC_RECORD = {
  container_id = "string", runtime = "string", container_cgroup = "string", alloc_id = "string", task = "string", owner = "string",
  unit = "string", user = "string", session_user = "string", uid = WHOLE, session_uid = WHOLE,
}
local HEALTH_ANSWER = { rows = { list = "any" }, fields = { list = "string" }, error = "string" }

local ENGINE = { ok = OK, error = "string", endpoint = "string", containers = { list = "any" } }

-- How an error names a container engine's source: "<engine> <endpoint>".
local function engine_asked(engine)
  return function(source) return shape.named(engine, source.endpoint, "endpoint") end
end

-- {name, shape, asked, engine?} of each source, in order; asked(source)
-- names who answered it, as its errors begin (the snapshot's address,
-- binary, file or journal command); engine: a container engine, whose
-- answer is its containers (sources/docker.lua reads them).
M.SOURCES = {
  { name = "nvidia", asked = function(source) return nvidia.asked("query-gpu", source.binary) end, shape = {
    ok = OK, error = "string", binary = "string", installed = "boolean",
    query_gpu = shape.ROWS, compute_apps = shape.ROWS, tlimit = shape.ROWS, slowdown = shape.ROWS,
  } },
  { name = "health", asked = function(source) return nvidia.asked("health", source.binary) end, shape = {
    ok = OK, error = "string", binary = "string", health = HEALTH_ANSWER, remapped_rows = HEALTH_ANSWER,
    version = { text = "string", error = "string" },
  } },
  { name = "mig", asked = function(source) return nvidia.asked("mig", source.binary) end, shape = {
    ok = OK, error = "string", binary = "string", enabled = { list = "string" },
    gpus = { list = {
      uuid = shape.required "string",
      devices = shape.required { list = {
        uuid = shape.required "string", index = shape.required(WHOLE), profile = shape.required "string",
        gpuInstanceId = WHOLE, computeInstanceId = WHOLE, memoryUsedMiB = WHOLE, memoryTotalMiB = WHOLE,
      } },
      processes = shape.required { list = { pid = shape.required(WHOLE), gpuInstanceId = WHOLE, computeInstanceId = WHOLE } },
    } },
  } },
  { name = "kernel_log", asked = kernel_log.asked, shape = {
    ok = OK, error = "string", via = "string", path = "string", records = { list = "any" }, dropped = "number",
    oversized = "number",
  } },
  { name = "proc", asked = function(source) return shape.named("proc", source.root, "root") end, shape = { ok = OK, error = "string", root = "string", pids = { map = PROC_RECORD } } },
  { name = "docker", engine = true, asked = engine_asked "docker", shape = ENGINE },
  { name = "podman", engine = true, asked = engine_asked "podman", shape = ENGINE },
  { name = "nomad", asked = nomad.asked, shape = { ok = OK, error = "string", address = "string", node_id = "string", allocations = { list = "any" }, token_unset = "string" } },
  { name = "nomad_devices", asked = nomad.asked, shape = {
    ok = OK, error = "string", address = "string", node_id = "string", devices = { list = "any" },
    node = { ID = "string", Name = "string", NodeClass = "string", NodePool = "string", Datacenter = "string" },
  } },
}

-- The names of M.SOURCES in order, the shape of each by name, and the
-- names of the container engines in order.
M.NAMES, M.SHAPES, M.ENGINES = {}, {}, {}
local ASKED = {}
for i, source in ipairs(M.SOURCES) do
  M.NAMES[i], M.SHAPES[source.name], ASKED[source.name] = source.name, source.shape, source.asked
  if source.engine then
    M.ENGINES[#M.ENGINES + 1] = source.name
  end
end

-- How an error names who answered the snapshot's source `name` (source:
-- what the snapshot keeps of it, an object or not): its entry's asked, or
-- the name of a source this list does not know.
function M.asked(name, source)
  return ASKED[name] and ASKED[name](type(source) == "table" and source or {}) or name
end

return M
