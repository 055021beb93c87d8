-- Nomad's view of this node's GPUs (docs/health.md#nomads-device-list): the NVIDIA device
-- instances of GET /v1/node/:id, each as Nomad fingerprinted it (healthy or
-- not, and why), with its PCI address. The NVIDIA plugin reports every
-- device healthy; a GPU the driver has lost still appears here until the
-- plugin fingerprints again, which is how a GPU gone from nvidia-smi is
-- still reported.
local json = require "gpuledger.json"
local pci = require "gpuledger.sources.pci"
local shape = require "gpuledger.sources.shape"

local M = {}

-- The shapes of a device group and of its instances as the snapshot keeps
-- them (shape.lua); a group's instances are checked one by one.
M.GROUP = { Name = "string", Instances = { list = "any" } }
M.INSTANCE = { ID = shape.required "string", Healthy = "boolean", HealthDescription = "string", PciBusID = "string" }

local function is_nvidia_gpu(group)
  return type(group) == "table" and group.Type == "gpu" and type(group.Vendor) == "string"
    and group.Vendor:lower() == "nvidia"
end

-- An instance as the snapshot keeps it: its ID, health and bus id (without
-- Nomad's NUL padding). A field of the wrong type is kept as it came, for
-- the ledger to report (gpu_health.read), and so is an instance that is not
-- an object.
local function reduce_instance(instance)
  if type(instance) ~= "table" then
    return instance
  end
  local locality = instance.Locality
  local bus_id = type(locality) == "table" and locality.PciBusID or locality -- a wrong Locality is named as the bus id
  return {
    ID = instance.ID, Healthy = instance.Healthy, HealthDescription = instance.HealthDescription,
    PciBusID = type(bus_id) == "string" and bus_id:gsub("%z", "") or bus_id,
  }
end

-- A group's instances, each reduced in its place (a null kept as
-- json.NULL), for the ledger to report what is wrong with one; an object,
-- and anything but a table, as it came.
local function reduce_instances(instances)
  local length = type(instances) == "table" and shape.length(instances)
  if not length then
    return instances
  end
  local reduced = json.array()
  for i = 1, length do
    reduced[i] = shape.kept_item(reduce_instance(instances[i]))
  end
  return reduced
end

-- Reduces a node answer to its NVIDIA GPU devices, as the snapshot keeps
-- them: [{Name, Instances = [{ID, Healthy, HealthDescription, PciBusID}]}]
-- (M.GROUP, M.INSTANCE when Nomad answered as it should); a group that is
-- no object (a null too) is kept as it came, for the ledger to report.
-- Returns them, or nil and why NodeResources.Devices is no list.
function M.reduce(node)
  local groups = json.array()
  local resources = type(node) == "table" and node.NodeResources
  local devices = type(resources) == "table" and resources.Devices or nil
  local why = shape.check(devices, { list = "any" }, "NodeResources.Devices")
  if why then
    return nil, why
  end
  for i = 1, devices and shape.length(devices) or 0 do
    local group = devices[i]
    if is_nvidia_gpu(group) then
      groups[#groups + 1] = { Name = group.Name, Instances = reduce_instances(group.Instances) }
    elseif type(group) ~= "table" then
      groups[#groups + 1] = shape.kept_item(group)
    end
  end
  return groups
end

-- The devices of a reduced answer: [{id, name, healthy, healthDescription,
-- busId?, busKey?}], in Nomad's order.
function M.devices(groups)
  local devices = {}
  for _, group in ipairs(groups or {}) do
    for _, instance in ipairs(group.Instances or {}) do
      devices[#devices + 1] = {
        id = instance.ID, name = group.Name, healthy = instance.Healthy,
        healthDescription = instance.HealthDescription, busId = instance.PciBusID,
        busKey = pci.bus_key(instance.PciBusID),
      }
    end
  end
  return devices
end

-- The fields of a node answer that say which node it is, as the snapshot
-- keeps them: {ID, Name, NodeClass, NodePool, Datacenter}, each its text or
-- absent (NodePool is Nomad 1.6's; NodeClass is "" when none was set). A
-- field of another type is left out: it names nothing.
function M.identity(node)
  local identity = {}
  for _, field in ipairs { "ID", "Name", "NodeClass", "NodePool", "Datacenter" } do
    local value = type(node) == "table" and node[field]
    identity[field] = type(value) == "string" and value or nil
  end
  return identity
end

return M
