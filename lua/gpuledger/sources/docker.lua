-- Docker and Podman (docs/sources.md#docker-and-podman): describe() turns a container's inspect
-- answer, as the snapshot keeps it, into what the ledger needs: its name,
-- image, Nomad allocation (from the com.hashicorp.nomad.* labels, else from a
-- "<task>-<alloc uuid>" name) and the GPUs it was given.
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"
local text = require "gpuledger.text"

local M = {}

local LABEL = "com.hashicorp.nomad."
local UUID = string.rep("[0-9a-f]", 8) .. "%-" .. string.rep("[0-9a-f]", 4) .. "%-"
  .. string.rep("[0-9a-f]", 4) .. "%-" .. string.rep("[0-9a-f]", 4) .. "%-" .. string.rep("[0-9a-f]", 12)
local TASK_ALLOC_NAME = "^(.+)%-(" .. UUID .. ")$"
local SLASH = string.byte("/") -- the engines' names begin with one

-- The shape of an inspect answer as the snapshot keeps it (shape.lua);
-- Error: why the engine could not be asked about it (collect/docker.lua).
M.SHAPE = {
  Id = "string", Name = "string", Unreadable = "string", Error = "string",
  State = { Pid = "number" },
  Config = { Image = "string", User = "string", Labels = { map = "string" }, Env = { list = "string" } },
  HostConfig = { DeviceRequests = { list = { Count = "number", DeviceIDs = { list = "string" } } } },
}

-- Splits a device list ("GPU-1,GPU-2"; trimmed, not empty) into trimmed,
-- non-empty ids.
local function split_ids(list)
  if not list:find(",", 1, true) then -- one id, the common case
    return { list }
  end
  local ids = {}
  for item in (list .. ","):gmatch("([^,]*),") do
    item = text.trim(item)
    if item ~= "" then
      ids[#ids + 1] = item
    end
  end
  return ids
end

local VISIBLE = "NVIDIA_VISIBLE_DEVICES="
local VISIBLE_PREFIX = "^" .. VISIBLE -- (no magic character in it): fails at an entry's first byte that differs

-- The value of NVIDIA_VISIBLE_DEVICES in an inspect's Config.Env, or nil.
function M.visible_devices(env)
  env = env or {}
  for i = 1, #env do
    local entry = env[i]
    if type(entry) == "string" and entry:find(VISIBLE_PREFIX) then
      return entry:sub(#VISIBLE + 1)
    end
  end
end

-- The GPUs a container was given: NVIDIA_VISIBLE_DEVICES unless empty,
-- void or none; else the first DeviceRequest naming DeviceIDs; else "all"
-- for a request with a Count (e.g. --gpus all is Count -1). Empty if none.
function M.gpus(inspect)
  local config, host = inspect.Config or {}, inspect.HostConfig or {}
  local visible = M.visible_devices(config.Env)
  if visible then
    visible = text.trim(visible)
    if visible ~= "" and visible ~= "void" and visible ~= "none" then
      return split_ids(visible)
    end
  end
  local requests = host.DeviceRequests or {}
  for _, request in ipairs(requests) do
    if type(request.DeviceIDs) == "table" and #request.DeviceIDs > 0 then
      local ids = {}
      for _, id in ipairs(request.DeviceIDs) do
        ids[#ids + 1] = text.trim(tostring(id))
      end
      return ids
    end
  end
  for _, request in ipairs(requests) do
    if (tonumber(request.Count) or 0) ~= 0 then
      return { "all" }
    end
  end
  return {}
end

-- Reduces a container's inspect answer to what gpuledger may keep: id,
-- name, its main process (State.Pid) and user (Config.User), image, the
-- com.hashicorp.nomad.* labels, NVIDIA_VISIBLE_DEVICES (the only
-- environment value read) and the DeviceRequests' counts and ids.
-- An answer with a field of the wrong type is reduced to its id and why it
-- cannot be read ({Id, Unreadable}), which the ledger reports.
function M.reduce(inspect)
  local why = shape.check(inspect, M.SHAPE, "container")
  if why then
    return { Id = type(inspect.Id) == "string" and inspect.Id or nil, Unreadable = why }
  end
  local config, host, state = inspect.Config or {}, inspect.HostConfig or {}, inspect.State or {}
  local labels = {}
  for key, value in pairs(config.Labels or {}) do
    if type(key) == "string" and key:sub(1, #LABEL) == LABEL then
      labels[key] = value
    end
  end
  local env = json.array()
  local visible = M.visible_devices(config.Env)
  if visible then
    env[1] = "NVIDIA_VISIBLE_DEVICES=" .. visible
  end
  local requests = json.array()
  for _, request in ipairs(host.DeviceRequests or {}) do
    local ids = type(request.DeviceIDs) == "table" and json.array(request.DeviceIDs) or nil
    requests[#requests + 1] = { Count = request.Count, DeviceIDs = ids }
  end
  return {
    Id = inspect.Id, Name = inspect.Name, State = { Pid = state.Pid },
    Config = { Image = config.Image, User = config.User, Labels = labels, Env = env },
    HostConfig = { DeviceRequests = requests },
  }
end

-- The label com.hashicorp.nomad.<name> of each name describe reads.
local LABELS = {}
for _, name in ipairs { "allocation_id", "alloc_id", "job_name", "namespace", "task_name" } do
  LABELS[name] = LABEL .. name
end

-- The value of label com.hashicorp.nomad.<name> (text: M.SHAPE), or nil
-- when absent or empty.
local function label(labels, name)
  local value = labels[LABELS[name]]
  if value ~= "" then
    return value
  end
end

-- The uid a container's processes run as, from its Config.User (the
-- image's user merged in by the engine: "" and "root" are root, "1000" or
-- "1000:1000" a uid), or nil for another user named by its name (only the
-- container's own passwd file could tell its uid).
function M.user_uid(user)
  if user == nil or user == "" then -- the image's default, the common case
    return 0
  end
  local name = user:match("^([^:]*)")
  if name == "" or name == "root" then
    return 0
  end
  return math.tointeger(tonumber(name:match("^%d+$") or ""))
end

-- What the ledger needs of a container (an inspect of M.SHAPE: the shape
-- checks saw to it): {id, name, image, mainPid (its State.Pid, 0 when not
-- running), uid (M.user_uid), allocId, allocFromName, jobName, taskName,
-- namespace, gpus}.
function M.describe(inspect)
  local config = inspect.Config or {}
  local labels = config.Labels or {}
  local name = inspect.Name or ""
  if name:byte(1) == SLASH then
    name = name:sub(2)
  end
  local container = {
    id = inspect.Id or "",
    name = name,
    image = config.Image or "",
    mainPid = math.tointeger((inspect.State or {}).Pid) or 0,
    uid = M.user_uid(config.User),
    allocId = label(labels, "allocation_id") or label(labels, "alloc_id") or "",
    allocFromName = false,
    jobName = label(labels, "job_name") or "",
    taskName = "",
    namespace = label(labels, "namespace") or "",
    gpus = M.gpus(inspect),
  }
  if container.allocId == "" then
    local task, alloc = name:match(TASK_ALLOC_NAME)
    if alloc then
      container.allocId, container.allocFromName, container.taskName = alloc, true, task
    end
  end
  container.taskName = label(labels, "task_name") or container.taskName
  return container
end


return M
