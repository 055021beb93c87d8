-- What an operator needs to know of the node beyond its GPUs, from a
-- snapshot's sources: the driver's and CUDA's versions (nvidia-smi
-- --version, asked with the health query once per driver; the driver's
-- also from the health query's driver_version) and which Nomad node it is
-- (GET /v1/node/:id, asked for Nomad's devices). Each is absent where no
-- source told it.
local text = require "gpuledger.text"

local M = {}

-- The value after "<label> : " on a line of nvidia-smi --version's text
-- ("DRIVER version      : 590.48.01", "CUDA Version        : 13.1").
local function version_line(version_text, label)
  for line in version_text:gmatch("[^\n]+") do
    local name, value = line:match("^%s*(.-)%s*:%s*(%S+)%s*$")
    if name and name:lower() == label then
      return value
    end
  end
end

-- The health query's driver_version on its first row, or nil.
local function health_driver(answer)
  for i, name in ipairs(answer and answer.fields or {}) do
    local row = answer.rows and answer.rows[1]
    local value = name == "driver_version" and row and row[i]
    if type(value) == "string" and text.trim(value) ~= "" then
      return text.trim(value)
    end
  end
end

-- Reads sources (the snapshot's, checked). Returns {driverVersion,
-- cudaVersion, nomadNode = {id, name, class, pool, datacenter}}, each
-- absent when unknown (a driver without --version, Nomad not read), and the
-- errors to report: only a --version that did not answer in time (one the
-- driver does not know is no error).
function M.read(sources)
  local context, errors = {}, {}
  local health = sources.health
  if health and health.ok then
    local version = health.version or {}
    if version.text then
      context.driverVersion = version_line(version.text, "driver version")
      context.cudaVersion = version_line(version.text, "cuda version")
    elseif version.error and (version.error:find(": timed out after ", 1, true) or version.error:find(": not started: ", 1, true)) then
      errors[1] = version.error
    end
    context.driverVersion = context.driverVersion or health_driver(health.health)
  end
  local devices = sources.nomad_devices
  local node = devices and devices.ok and devices.node
  if node and node.ID then
    context.nomadNode = {
      id = node.ID, name = node.Name, class = node.NodeClass, pool = node.NodePool, datacenter = node.Datacenter,
    }
  end
  return text.cut_strings(context, text.NAME_MAX), errors
end

return M
