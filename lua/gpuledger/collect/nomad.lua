-- Nomad (docs/sources.md#nomad), the impure half: reads this node's allocations from
-- the agent for the snapshot, each reduced (gpuledger.sources.nomad reads
-- them).
local http = require "gpuledger.collect.http"
local json = require "gpuledger.json"
local nomad_node = require "gpuledger.sources.nomad_node"
local parse = require "gpuledger.sources.nomad"
local shape = require "gpuledger.sources.shape"

local M = {}

M.DEADLINE_MS = 5000 -- for every call of one refresh together (collect and collect_devices)

-- What a 403 from each endpoint means the token lacks.
local CAPABILITY = { agent = "agent:read", allocations = "node:read", node = "node:read" }

-- The TLS options of the Nomad client from config.nomad (docs/sources.md#tls-nomad-consul-prometheus).
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

-- err, the error of a request to the Nomad of config that answered status,
-- with what a 403 means the token lacks (capability: "node:read") and
-- whether it went without one (http.without_token).
function M.explain(core, err, status, config, capability)
  if status == 403 then
    err = string.format("%s — the token in the variable named by --nomad-token-env (%s) needs %s",
      err, config.token_env, capability)
  end
  return http.without_token(core, err, config, status)
end

-- GETs path as JSON by deadline_ms (core.monotonic_ms): the decoded
-- answer (any JSON value, false too) and nil, or nil and the error
-- explained (M.explain).
local function get(core, endpoint, path, request, capability, config, deadline_ms)
  local within, late = http.until_deadline(core, deadline_ms)
  if not within then
    return http.json_answer("nomad", endpoint, path, { error = late })
  end
  request.timeout_ms = within.timeout_ms
  local value, err, status = http.get_json(core, "nomad", endpoint, path, request)
  if err then
    err = M.explain(core, err, status, config, capability)
  end
  return value, err
end

-- Reads this node's allocations from the Nomad agent config.nomad names
-- (its id from /v1/agent/self unless node_id is given), by deadline_ms
-- (core.monotonic_ms; collect/node.lua sets it M.DEADLINE_MS from the
-- start, for this and collect_devices together). Returns the
-- snapshot source {ok=true, address, node_id, allocations, token_unset?}
-- (each allocation reduced; token_unset the name of the token variable
-- when it is not set, so that Nomad was asked without a token) or
-- {ok=false, address, error}.
function M.collect(core, config, deadline_ms)
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
    local self, err = get(core, endpoint, "/v1/agent/self", request, CAPABILITY.agent, config, deadline_ms)
    err = err or shape.not_an_object(http.asked("nomad", endpoint, "/v1/agent/self"), self)
    if err then
      return failed(err)
    end
    local client = type(self.stats) == "table" and self.stats.client
    node_id = type(client) == "table" and client.node_id or ""
    if type(node_id) ~= "string" or node_id == "" then
      return failed(string.format("nomad %s: the agent is not a client node (no stats.client.node_id in /v1/agent/self)", address))
    end
  end
  local path = "/v1/node/" .. node_id .. "/allocations"
  local allocations, err = get(core, endpoint, path, request, CAPABILITY.allocations, config, deadline_ms)
  err = err or shape.not_a_list(http.asked("nomad", endpoint, path), allocations)
  if err then
    return failed(err)
  end
  -- each in its place, one that is no object (a null too) as it came, for
  -- the ledger to name (sources/nomad.lua): the others stand
  local reduced = json.array()
  for i = 1, shape.length(allocations) do
    local alloc = allocations[i]
    reduced[i] = type(alloc) == "table" and parse.reduce(alloc) or shape.kept_item(alloc)
  end
  return {
    ok = true, address = address, node_id = node_id, allocations = reduced,
    token_unset = http.missing_token(core, config),
  }
end

-- Reads the GPU devices of node node_id as Nomad fingerprinted them (GET
-- /v1/node/:id), by deadline_ms (as collect's). Returns
-- the snapshot source {ok=true, address, node_id, devices, node}
-- (nomad_node.reduce, nomad_node.identity) or {ok=false, address, error}
-- (a device list that is no list among the causes).
function M.collect_devices(core, config, node_id, deadline_ms)
  local address = config.address
  local request = assert(M.tls_options(config)) -- collect() refused a bad pair first
  local endpoint = assert(http.endpoint(address))
  local path = "/v1/node/" .. node_id
  local node, err = get(core, endpoint, path, request, CAPABILITY.node, config, deadline_ms)
  local asked = http.asked("nomad", endpoint, path)
  err = err or shape.not_an_object(asked, node)
  if err then
    return { ok = false, address = address, error = err }
  end
  local devices, why = nomad_node.reduce(node)
  if not devices then
    return { ok = false, address = address, error = shape.unexpected(asked, why) }
  end
  return { ok = true, address = address, node_id = node_id, devices = devices, node = nomad_node.identity(node) }
end

return M
