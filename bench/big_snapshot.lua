-- Writes a snapshot of a made-up node with GPUS GPUs and PROCESSES GPU processes to
-- stdout, for `--replay` (not a test; bench/processes.sh uses it):
--   LUA_PATH="lua/?.lua;;" LUA_CPATH="build/lua/?.so;;" lua5.4 bench/big_snapshot.lua GPUS PROCESSES > node.json
-- Every source is read but MIG (off). Each GPU answers as the demo node's GPU of the same
-- index modulo 4 does (its nvidia-smi and health rows; the first four, none
-- in MIG mode), under its own index, uuid and bus id. The processes are spread over the
-- GPUs in containers of four; seven containers in eight are Nomad tasks
-- with an allocation reserving their GPU, the eighth a plain Docker
-- container given its GPU; every sixteenth process runs on the host, by a
-- user, outside any container. A container's first process is its main
-- process (State.Pid) and the others share its cgroup, so every process's
-- claim on its container holds, as on a real node.
-- Needs the repository's lua/ on LUA_PATH and a build's lua/ on LUA_CPATH (gpuledger.json
-- and its writer, build/lua/gpuledger/json_write.so), and lua-cjson.
local json = require "gpuledger.json"

local gpus, processes = tonumber(arg[1]), tonumber(arg[2])
if not (gpus and processes and gpus >= 1 and processes >= 0) then
  io.stderr:write("usage: lua5.4 bench/big_snapshot.lua GPUS PROCESSES\n")
  os.exit(2)
end

local demo_file = assert(io.open("lua/gpuledger/demo/snapshot.json"))
local demo = json.decode(demo_file:read("a"))
demo_file:close()
local sources = demo.sources
sources.mig = nil -- the made-up GPUs are not in MIG mode

local function uuid_of(index)
  return string.format("GPU-%08x-0000-4000-8000-%012x", 0x5eed0000 + index, index)
end
local function bus_id_of(index)
  return string.format("00000000:%02X:00.0", index + 1)
end
local function alloc_id_of(n)
  return string.format("%08x-0000-4000-8000-%012x", 0xa110c000 + n, n)
end
local function container_id_of(n)
  return string.format("%064x", 0xc0 * 2 ^ 32 + n)
end

-- The rows of a demo answer, one per GPU; template: the answer;
-- columns: the field positions of the index, uuid and bus id (any may be nil).
local function per_gpu(answer, columns)
  local rows = json.array()
  for index = 0, gpus - 1 do
    local row = {}
    for k, value in ipairs(answer.rows[index % 4 + 1]) do
      row[k] = value
    end
    if columns.index then row[columns.index] = tostring(index) end
    if columns.uuid then row[columns.uuid] = uuid_of(index) end
    if columns.bus then row[columns.bus] = bus_id_of(index) end
    rows[#rows + 1] = row
  end
  answer.rows = rows
end

local nvidia = sources.nvidia
per_gpu(nvidia.query_gpu, { index = 1, uuid = 2, bus = 4 })
per_gpu(nvidia.tlimit, { index = 1 })
per_gpu(nvidia.slowdown, { index = 1 })
per_gpu(sources.health.health, { index = 1, uuid = 2, bus = 3 })

local instances = json.array()
for index = 0, gpus - 1 do
  instances[#instances + 1] = { ID = uuid_of(index), Healthy = true, HealthDescription = "", PciBusID = bus_id_of(index) }
end
sources.nomad_devices.devices = json.array { { Name = "NVIDIA L4", Instances = instances } }

local NAMES = { "python3", "ffmpeg", "HandBrakeCLI", "tritonserver" }
local apps, pids = json.array(), {}
local containers, allocations = json.array(), json.array()
local per_container, container = 4, nil
for n = 0, processes - 1 do
  local pid = 10000 + n
  local name = NAMES[n % #NAMES + 1]
  if n % 16 == 15 then -- a user's process on the host
    local gpu = n // 16 % gpus
    apps[#apps + 1] = { uuid_of(gpu), tostring(pid), "256", name }
    pids[tostring(pid)] = { owner = "process", uid = 1000, user = "ci" }
  else
    if not container or container.members == per_container then
      local c = #containers
      local gpu = c % gpus
      local id = container_id_of(c)
      local inspect = {
        Id = id, State = { Pid = pid },
        Config = { Image = "registry.example/batch/job:1." .. c, Labels = {}, Env = { "NVIDIA_VISIBLE_DEVICES=" .. uuid_of(gpu) } },
        HostConfig = { DeviceRequests = json.array() },
      }
      if c % 8 == 7 then
        inspect.Name = "/manual-" .. c
      else
        local alloc = alloc_id_of(c)
        local job = "job-" .. c
        inspect.Name = "/task-" .. alloc
        inspect.Config.Labels = {
          ["com.hashicorp.nomad.alloc_id"] = alloc, ["com.hashicorp.nomad.job_name"] = job,
          ["com.hashicorp.nomad.task_name"] = "task", ["com.hashicorp.nomad.namespace"] = "batch",
        }
        allocations[#allocations + 1] = {
          ID = alloc, JobID = job, Namespace = "batch", TaskGroup = "group", ClientStatus = "running",
          AllocatedResources = { Tasks = { task = { Devices = {
            { Vendor = "nvidia", Type = "gpu", Name = "NVIDIA L4", DeviceIDs = { uuid_of(gpu) } },
          } } } },
        }
      end
      containers[#containers + 1] = inspect
      container = { id = id, gpu = gpu, members = 0 }
    end
    container.members = container.members + 1
    apps[#apps + 1] = { uuid_of(container.gpu), tostring(pid), "512", name }
    pids[tostring(pid)] = {
      container_id = container.id, runtime = "docker",
      container_cgroup = "0::/system.slice/docker-" .. container.id .. ".scope",
    }
  end
end
nvidia.compute_apps.rows = apps
sources.proc.pids = pids
sources.docker.containers = containers
sources.nomad.allocations = allocations

demo.node = string.format("bench-%dx%d", gpus, processes)
io.write(json.encode(demo), "\n")
