-- Nomad (docs/sources.md#nomad): read() turns the allocations of this node, as the
-- snapshot keeps them, into the allocations the token could see (id →
-- namespace) and the GPU reservations of running and pending ones.
local consul = require "gpuledger.sources.consul"
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"

local M = {}

local RESERVING = { running = true, pending = true }

-- The shape of an allocation as the snapshot keeps it (shape.lua).
M.SHAPE = {
  Unreadable = "string", ID = "string", JobID = "string", Namespace = "string", TaskGroup = "string", ClientStatus = "string",
  AllocatedResources = {
    Tasks = { map = { Devices = { list = { Vendor = "string", Type = "string", Name = "string", DeviceIDs = { list = "string" } } } } },
  },
}

-- Reduces an allocation to the fields gpuledger reads (the real answer
-- carries the whole job spec). An allocation with a field of the wrong
-- type is reduced to its id and why ({ID, Unreadable}), which read reports.
function M.reduce(alloc)
  local why = shape.check(alloc, M.SHAPE, "allocation")
  if why then
    return { ID = type(alloc.ID) == "string" and alloc.ID or nil, Unreadable = why }
  end
  local tasks = {}
  local resources = alloc.AllocatedResources
  for task, resource in pairs(type(resources) == "table" and type(resources.Tasks) == "table" and resources.Tasks or {}) do
    local devices = {}
    for _, device in ipairs(type(resource) == "table" and type(resource.Devices) == "table" and resource.Devices or {}) do
      devices[#devices + 1] = {
        Vendor = device.Vendor, Type = device.Type, Name = device.Name,
        DeviceIDs = json.array(device.DeviceIDs or {}),
      }
    end
    tasks[task] = { Devices = json.array(devices) }
  end
  return {
    ID = alloc.ID, JobID = alloc.JobID, Namespace = alloc.Namespace,
    TaskGroup = alloc.TaskGroup, ClientStatus = alloc.ClientStatus,
    AllocatedResources = type(resources) == "table" and { Tasks = tasks } or nil,
  }
end

local NONE = {} -- (never written)

-- How an error names the agent a snapshot source of Nomad's (nomad,
-- nomad_devices) answered from: "nomad <address>" (shape.named: where the
-- snapshot keeps no address, it says so).
function M.asked(source)
  return shape.named("nomad", source.address, "address")
end

-- Reads the snapshot's nomad source. Returns visible (alloc id →
-- {namespace ("default" when empty), jobId}; nil when Nomad was not read),
-- the reservations (each
-- {allocId, jobId, taskGroup, task, namespace, clientStatus, deviceIds}),
-- and the source's error if it failed.
function M.read(source)
  if not source then
    return nil, {}, nil
  end
  if not source.ok then
    return nil, {}, source.error
  end
  local visible, reservations = {}, {}
  local allocs, problems, path_of = shape.items(source.allocations or {}, M.SHAPE, "allocations")
  for k = 1, #allocs do
    local alloc = allocs[k]
    if alloc.Unreadable then
      problems[#problems + 1] = string.format("%s: %s", path_of(k), alloc.Unreadable)
      goto next_alloc
    end
    local namespace = alloc.Namespace or ""
    visible[alloc.ID or ""] = { namespace = namespace ~= "" and namespace or "default", jobId = alloc.JobID or "" }
    local resources = alloc.AllocatedResources
    if RESERVING[alloc.ClientStatus] and resources and resources.Tasks then
      local tasks = {}
      for task in pairs(resources.Tasks) do
        tasks[#tasks + 1] = task
      end
      if #tasks > 1 then -- (one task, the common case, is in order)
        table.sort(tasks)
      end
      for t = 1, #tasks do
        local task = tasks[t]
        local devices = resources.Tasks[task].Devices or NONE
        for d = 1, #devices do
          local device = devices[d]
          local vendor = device.Vendor -- (text or nil: M.SHAPE)
          if device.Type == "gpu" and vendor and (vendor == "nvidia" or vendor:lower() == "nvidia") then
            local ids, device_ids = json.array(), device.DeviceIDs or NONE
            for i = 1, #device_ids do
              ids[i] = device_ids[i]
            end
            reservations[#reservations + 1] = {
              allocId = alloc.ID or "", jobId = alloc.JobID or "", taskGroup = alloc.TaskGroup or "",
              task = task, namespace = namespace, clientStatus = alloc.ClientStatus, deviceIds = ids,
            }
          end
        end
      end
    end
    ::next_alloc::
  end
  if #problems > 0 then -- the other allocations stand
    return visible, reservations, shape.unexpected(M.asked(source), table.concat(problems, "; "))
  end
  return visible, reservations, nil
end

-- The fleet's targets {node, url} from Nomad's registrations of a service
-- (/v1/service/<name>) read from the agent at address: node =
-- the registration's address:port until its ledger names it, url http://address:port (an IPv6 address in
-- brackets), one per url, sorted by node (consul.distinct); a registration
-- whose address is no host or port no port is a target with its error
-- (consul.target); nil and why when the answer is no array
-- (shape.not_a_list).
function M.service_targets(registrations, address)
  local targets, from = {}, { source = "nomad " .. address, address = address }
  local wrong = shape.not_a_list(from.source, registrations)
  if wrong then
    return nil, wrong
  end
  for i, registration in ipairs(registrations) do
    registration = type(registration) == "table" and registration or {}
    local host = registration.Address
    targets[#targets + 1] = consul.target({
      node = type(host) == "string" and host ~= "" and host or "nomad", unnamed = true, host = host, port = registration.Port,
      host_at = string.format("[%d].Address", i), port_at = string.format("[%d].Port", i),
    }, from)
  end
  return consul.distinct(targets)
end

return M
