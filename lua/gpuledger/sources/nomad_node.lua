-- Nomad's view of this node's GPUs (API-SHAPES.md §9): the NVIDIA device
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
-- them (shape.lua).
M.GROUP = { Name = "string", Instances = { list = "table" } }
M.INSTANCE = { ID = shape.required "string", Healthy = "boolean", HealthDescription = "string", PciBusID = "string" }

local function is_nvidia_gpu(group)
  return type(group) == "table" and group.Type == "gpu" and type(group.Vendor) == "string"
    and group.Vendor:lower() == "nvidia"
end

-- Reduces a node answer to its NVIDIA GPU devices, as the snapshot keeps
-- them: [{Name, Instances = [{ID, Healthy, HealthDescription, PciBusID}]}].
function M.reduce(node)
  local groups = json.array()
  local resources = type(node) == "table" and node.NodeResources
  local devices = type(resources) == "table" and resources.Devices
  for _, group in ipairs(type(devices) == "table" and devices or {}) do
    if is_nvidia_gpu(group) then
      local instances = json.array()
      for _, instance in ipairs(type(group.Instances) == "table" and group.Instances or {}) do
        if type(instance) == "table" and type(instance.ID) == "string" then
          local locality = type(instance.Locality) == "table" and instance.Locality or {}
          instances[#instances + 1] = {
            ID = instance.ID, Healthy = instance.Healthy == true,
            HealthDescription = type(instance.HealthDescription) == "string" and instance.HealthDescription or "",
            PciBusID = type(locality.PciBusID) == "string" and locality.PciBusID:gsub("%z", "") or nil,
          }
        end
      end
      groups[#groups + 1] = { Name = group.Name, Instances = instances }
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

return M
