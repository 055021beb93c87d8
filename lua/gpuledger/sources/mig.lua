-- MIG (Multi-Instance GPU), the pure half. A GPU in MIG mode is cut into
-- slices (MIG devices), each with its own MIG-… UUID; a slice is one GPU
-- instance and one compute instance of it, and one GPU instance may hold
-- several compute instances (a "1c.2g.20gb" profile), so a slice is named
-- by both ids. Which GPUs are in MIG mode comes from mig.mode.current in a
-- --query-gpu answer; `nvidia-smi -L` names each slice (profile, device
-- index, UUID) under its GPU; `nvidia-smi -q` gives each slice its ids and
-- memory, and each process the ids of the slice it runs on
-- (--query-compute-apps names only the parent GPU). collect/mig.lua asks;
-- this module reads the texts into the records a snapshot keeps, and
-- places a process on its slice.
local text = require "gpuledger.text"

local M = {}

-- The fields of the MIG mode query (asked when the health query was not).
M.MODE_FIELDS = { "uuid", "mig.mode.current" }

-- The UUIDs of the GPUs an answer ({fields, rows}, with uuid and
-- mig.mode.current columns) says are in MIG mode, in its order; nil when
-- the answer has no mig.mode.current column (a driver without MIG).
function M.enabled(answer)
  local uuid_at, mode_at
  for i, name in ipairs(answer and answer.fields or {}) do
    if name == "uuid" then
      uuid_at = i
    elseif name == "mig.mode.current" then
      mode_at = i
    end
  end
  if not (uuid_at and mode_at) then
    return nil
  end
  local uuids = {}
  for _, row in ipairs(answer.rows or {}) do
    if text.trim(row[mode_at] or "") == "Enabled" then
      uuids[#uuids + 1] = text.trim(row[uuid_at] or "")
    end
  end
  return uuids
end

-- The ids an old driver's slice UUID carries: MIG-GPU-<parent>/<gi>/<ci>.
local function legacy_ids(uuid)
  local gi, ci = uuid:match("^MIG%-GPU%-[^/]+/(%d+)/(%d+)$")
  return math.tointeger(tonumber(gi)), math.tointeger(tonumber(ci))
end

-- Reads `nvidia-smi -L`. Returns its GPUs in order, {index, uuid, devices =
-- {{index, profile, uuid}}}, or nil and why when the text names no GPU or a
-- MIG device line comes before any GPU.
function M.parse_list(out)
  local gpus, gpu = {}, nil
  for line in out:gmatch("[^\n]+") do
    local index, uuid = line:match("^GPU (%d+):.*%(UUID: ([^)]+)%)%s*$")
    local profile, device, mig_uuid = line:match("^%s+MIG (%S+)%s+Device%s+(%d+):%s*%(UUID: ([^)]+)%)%s*$")
    if index then
      gpu = { index = math.tointeger(tonumber(index)), uuid = uuid, devices = {} }
      gpus[#gpus + 1] = gpu
    elseif profile then
      if not gpu then
        return nil, "a MIG device before any GPU: " .. text.cut(line, 100)
      end
      gpu.devices[#gpu.devices + 1] = { index = math.tointeger(tonumber(device)), profile = profile, uuid = mig_uuid }
    end
  end
  if #gpus == 0 then
    return nil, "no GPU listed"
  end
  return gpus
end

-- An integer of -q's text ("2", "11091 MiB"); nil for N/A and the like.
local function number_of(value)
  return math.tointeger(tonumber(value:match("^(%d+)") or ""))
end

-- Reads `nvidia-smi -q`. Returns its GPUs in order, {busId, uuid, devices =
-- {{index, gpuInstanceId, computeInstanceId, memoryUsedMiB,
-- memoryTotalMiB}}, processes = {{pid, gpuInstanceId, computeInstanceId}}}
-- (a process outside MIG has no instance ids), or nil and why when the
-- text has no GPU section.
function M.parse_query(out)
  local gpus, gpu, process = {}, nil, nil
  local path = {} -- the section headers above the line, by depth (4 spaces each)
  for line in out:gmatch("[^\n]+") do
    line = line:gsub("\r$", "")
    local bus = line:match("^GPU (%x+:%x+:%x+%.%x+)%s*$")
    local indent, key, value = line:match("^( *)(%S.-)%s+: ?(.-)%s*$")
    if not indent then
      indent, key = line:match("^( *)(%S.-)%s*$")
    end
    if bus then
      gpu = { busId = bus, devices = {}, processes = {} }
      gpus[#gpus + 1] = gpu
      path = {}
    elseif gpu and indent then
      local depth = #indent // 4
      for d = depth, #path do
        path[d] = nil
      end
      local name = key:lower()
      if value == nil then
        path[depth] = name
        if depth == 1 and name == "mig device" then
          gpu.devices[#gpu.devices + 1] = {}
        end
      elseif depth == 1 and name == "gpu uuid" then
        gpu.uuid = value
      elseif depth == 2 and path[1] == "mig device" then
        local device = gpu.devices[#gpu.devices]
        if name == "index" then
          device.index = number_of(value)
        elseif name == "gpu instance id" then
          device.gpuInstanceId = number_of(value)
        elseif name == "compute instance id" then
          device.computeInstanceId = number_of(value)
        end
      elseif depth == 3 and path[1] == "mig device" and path[2] == "shared fb memory usage" then
        local device = gpu.devices[#gpu.devices]
        if name == "used" then
          device.memoryUsedMiB = number_of(value)
        elseif name == "total" then
          device.memoryTotalMiB = number_of(value)
        end
      elseif depth == 2 and path[1] == "processes" then
        if name == "gpu instance id" then
          process = { gpuInstanceId = number_of(value) }
        elseif name == "compute instance id" and process then
          process.computeInstanceId = number_of(value)
        elseif name == "process id" then
          process = process or {}
          process.pid = number_of(value)
          if process.pid then
            gpu.processes[#gpu.processes + 1] = process
          end
          process = nil
        end
      end
    end
  end
  if #gpus == 0 then
    return nil, "no GPU section"
  end
  return gpus
end

-- The snapshot's record of each GPU of `enabled` (UUIDs in MIG mode): its
-- slices from -L (list, M.parse_list) with their ids and memory from -q
-- (query, M.parse_query; joined by the GPU's UUID and the device index),
-- and the instance ids of its processes from -q. Returns {{uuid, devices =
-- {{uuid, index, profile, gpuInstanceId?, computeInstanceId?,
-- memoryUsedMiB?, memoryTotalMiB?}}, processes = {{pid, gpuInstanceId?,
-- computeInstanceId?}}}}, a GPU in MIG mode that -L does not list with no
-- slice.
function M.join(list, query, enabled)
  local listed, queried = {}, {}
  for _, gpu in ipairs(list) do
    listed[gpu.uuid] = gpu
  end
  for _, gpu in ipairs(query) do
    if gpu.uuid then
      queried[gpu.uuid] = gpu
    end
  end
  local records = {}
  for _, uuid in ipairs(enabled) do
    local detail = queried[uuid] or { devices = {}, processes = {} }
    local by_index = {}
    for _, device in ipairs(detail.devices) do
      if device.index then
        by_index[device.index] = device
      end
    end
    local devices = {}
    for _, device in ipairs(listed[uuid] and listed[uuid].devices or {}) do
      local found = by_index[device.index] or {}
      local gi, ci = legacy_ids(device.uuid)
      devices[#devices + 1] = {
        uuid = device.uuid, index = device.index, profile = device.profile,
        gpuInstanceId = found.gpuInstanceId or gi, computeInstanceId = found.computeInstanceId or ci,
        memoryUsedMiB = found.memoryUsedMiB, memoryTotalMiB = found.memoryTotalMiB,
      }
    end
    records[#records + 1] = { uuid = uuid, devices = devices, processes = detail.processes }
  end
  return records
end

-- The slice of record (a GPU of M.join) that process pid runs on, joined on
-- both instance ids; nil when the driver places it on none.
function M.slice_of(record, pid)
  for _, process in ipairs(record.processes or {}) do
    if process.pid == pid then
      for _, device in ipairs(record.devices or {}) do
        if device.gpuInstanceId ~= nil and device.gpuInstanceId == process.gpuInstanceId
          and device.computeInstanceId == process.computeInstanceId then
          return device
        end
      end
      return nil
    end
  end
  return nil
end

-- Reads a snapshot's mig source (collect/mig.lua). Returns the record of
-- each GPU in MIG mode by its UUID (M.join's; when -L or -q could not be
-- read, one without slices, unread = true) and the source's error, if any.
function M.read(source)
  local by_uuid = {}
  if not source then
    return by_uuid
  end
  for _, uuid in ipairs(source.enabled or {}) do
    by_uuid[uuid] = { uuid = uuid, devices = {}, processes = {}, unread = true }
  end
  if not source.ok then
    return by_uuid, source.error
  end
  for _, gpu in ipairs(source.gpus or {}) do
    by_uuid[gpu.uuid] = gpu
  end
  return by_uuid
end

-- True when one of ids (a reservation's device ids, a container's
-- NVIDIA_VISIBLE_DEVICES) names slice, one of parent's (a GPU entry:
-- index, uuid): its UUID, "MIG-<parent uuid>/<gi>/<ci>" as old drivers
-- wrote it, or "<gpu index>:<device index>".
function M.names(ids, slice, parent)
  local legacy = string.format("MIG-%s/%s/%s", parent.uuid, tostring(slice.gpuInstanceId), tostring(slice.computeInstanceId))
  local pair = string.format("%d:%d", parent.index, slice.index)
  for _, raw in ipairs(ids or {}) do
    local id = text.trim(tostring(raw))
    if id == slice.uuid or id == legacy or id == pair then
      return true
    end
  end
  return false
end

return M
