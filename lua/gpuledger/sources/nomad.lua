-- Nomad (SPEC §2.4): read() turns the allocations of this node, as the
-- snapshot keeps them, into the allocations the token could see (id →
-- namespace) and the GPU reservations of running and pending ones.
local http = require "gpuledger.sources.http"
local json = require "gpuledger.json"

local M = {}

local RESERVING = { running = true, pending = true }

-- Reduces an allocation to the fields gpuledger reads (the real answer
-- carries the whole job spec).
function M.reduce(alloc)
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

-- Reads the snapshot's nomad source. Returns visible (alloc id → namespace,
-- "default" when empty; nil when Nomad was not read), the reservations (each
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
  for _, alloc in ipairs(source.allocations or {}) do
    local namespace = alloc.Namespace or ""
    visible[alloc.ID or ""] = namespace ~= "" and namespace or "default"
    local resources = alloc.AllocatedResources
    if RESERVING[alloc.ClientStatus] and resources and resources.Tasks then
      local tasks = {}
      for task in pairs(resources.Tasks) do
        tasks[#tasks + 1] = task
      end
      table.sort(tasks)
      for _, task in ipairs(tasks) do
        for _, device in ipairs(resources.Tasks[task].Devices or {}) do
          if device.Type == "gpu" and type(device.Vendor) == "string" and device.Vendor:lower() == "nvidia" then
            local ids = json.array()
            for _, id in ipairs(device.DeviceIDs or {}) do
              ids[#ids + 1] = id
            end
            reservations[#reservations + 1] = {
              allocId = alloc.ID or "", jobId = alloc.JobID or "", taskGroup = alloc.TaskGroup or "",
              task = task, namespace = namespace, clientStatus = alloc.ClientStatus, deviceIds = ids,
            }
          end
        end
      end
    end
  end
  return visible, reservations, nil
end

-- What a 403 from each endpoint means the token lacks (SPEC §2.4).
local CAPABILITY = { agent = "agent:read", allocations = "node:read" }

-- The TLS options of the Nomad client from config.nomad (SPEC §2.6).
-- Returns them, or nil and why (half a key pair is refused here, before
-- any request).
function M.tls_options(config)
  local cert, key = config.client_cert, config.client_key
  if (cert == "") ~= (key == "") then
    return nil, "--nomad-client-cert and --nomad-client-key go together"
  end
  return {
    ca_file = config.ca_cert, ca_path = config.ca_path,
    client_cert = cert, client_key = key, tls_server_name = config.tls_server_name,
    token_header = "X-Nomad-Token", token_env = config.token_env,
  }
end

local function get(core, endpoint, path, request, capability, config)
  local value, err, status = http.get_json(core, "nomad", endpoint, path, request)
  if status == 403 then
    err = string.format("%s — the token in the variable named by --nomad-token-env (%s) needs %s",
      err, config.token_env, capability)
  end
  return value, err
end

-- Reads this node's allocations from the Nomad agent config.nomad names
-- (its id from /v1/agent/self unless node_id is given). Returns the
-- snapshot source {ok=true, address, node_id, allocations} (each allocation
-- reduced) or {ok=false, address, error}.
function M.collect(core, config)
  local address = config.address
  local function failed(why)
    return { ok = false, address = address, error = why }
  end
  local request, tls_problem = M.tls_options(config)
  if not request then
    return failed("nomad " .. address .. ": " .. tls_problem)
  end
  local endpoint, why = http.endpoint(address)
  if not endpoint then
    return failed("nomad " .. why)
  end
  local node_id = config.node_id
  if node_id == "" then
    local self, err = get(core, endpoint, "/v1/agent/self", request, CAPABILITY.agent, config)
    if not self then
      return failed(err)
    end
    local client = type(self.stats) == "table" and self.stats.client
    node_id = type(client) == "table" and client.node_id or ""
    if type(node_id) ~= "string" or node_id == "" then
      return failed(string.format("nomad %s: the agent is not a client node (no stats.client.node_id in /v1/agent/self)", address))
    end
  end
  local path = "/v1/node/" .. node_id .. "/allocations"
  local allocations, err = get(core, endpoint, path, request, CAPABILITY.allocations, config)
  if not allocations then
    return failed(err)
  end
  if type(allocations) ~= "table" then
    return failed(string.format("nomad %s: GET %s: want a JSON array", address, path))
  end
  local reduced = json.array()
  for _, alloc in ipairs(allocations) do
    if type(alloc) == "table" then
      reduced[#reduced + 1] = M.reduce(alloc)
    end
  end
  return { ok = true, address = address, node_id = node_id, allocations = reduced }
end

return M
