-- The fleet's nodes, the impure half (docs/contract.md#fleet): finding them, by
-- precedence --targets, else Nomad's service discovery, else Consul's
-- health API; and reading every node's /ledger at once. A discovery that
-- fails is not a failed command: it gives one pseudo-node named after the
-- source, with the error, which the fleet counts as unreachable. Tokens are
-- read by the C core from the variables named; their values never reach
-- Lua. The answers' parsers are sources/consul.lua and sources/nomad.lua.
local consul = require "gpuledger.sources.consul"
local http = require "gpuledger.collect.http"
local nomad = require "gpuledger.collect.nomad"
local nomad_parse = require "gpuledger.sources.nomad"

local M = {}

M.MAX_BYTES = 8 * 1024 * 1024
M.DEADLINE_MARGIN_MS = 1000

-- The one pseudo-node of a failed discovery; why names the source and
-- its address ("consul http://…: …").
local function failed(source, address, why)
  return { { node = source, url = address, error = why, discovery = true } }
end

-- The targets a discovery's answer listed (targets, or nil and wrong when
-- the answer was no list), or the pseudo-node of source at address saying
-- what was wrong, or that it listed none (none: that message), each noting
-- a request sent without its token (http.without_token, settings).
local function listed(core, source, address, settings, targets, wrong, none)
  if not targets then
    return failed(source, address, http.without_token(core, wrong, settings))
  elseif #targets == 0 then
    return failed(source, address, http.without_token(core, none, settings))
  end
  return targets
end

-- Nomad's registrations of the service in its namespace (config.fleet),
-- through the agent config.nomad names.
local function from_nomad(core, fleet, nomad_config)
  local address, service, namespace = nomad_config.address, fleet.nomad_service, fleet.nomad_namespace
  local request, tls_problem = nomad.tls_options(nomad_config)
  if not request then
    return failed("nomad", address, "nomad " .. address .. ": " .. tls_problem)
  end
  local endpoint, why = http.endpoint(address)
  if not endpoint then
    return failed("nomad", address, "nomad " .. why)
  end
  local path = string.format("/v1/service/%s?namespace=%s", consul.path_escape(service), consul.path_escape(namespace))
  local registrations, err, status = http.get_json(core, "nomad", endpoint, path, request)
  if err then
    return failed("nomad", address,
      nomad.explain(core, err, status, nomad_config, string.format("read-job on namespace %q", namespace)))
  end
  local targets, wrong = nomad_parse.service_targets(registrations, address)
  return listed(core, "nomad", address, nomad_config, targets, wrong,
    string.format("nomad %s: no registration of service %q in namespace %q", address, service, namespace))
end

-- Consul's passing instances of the service (config.fleet.consul).
local function from_consul(core, settings)
  local base, why = consul.base_url(settings.address, consul.is_true(core.getenv("CONSUL_HTTP_SSL") or ""))
  local address = settings.address ~= "" and settings.address or consul.DEFAULT_ADDRESS
  if not base then
    return failed("consul", address, "consul " .. why)
  end
  if (settings.client_cert == "") ~= (settings.client_key == "") then
    return failed("consul", base, "consul " .. base .. ": --consul-client-cert and --consul-client-key go together")
  end
  local request = {
    ca_file = settings.ca_cert, ca_path = settings.ca_path, client_cert = settings.client_cert,
    client_key = settings.client_key, tls_server_name = settings.tls_server_name,
    token_header = "X-Consul-Token", token_env = settings.token_env,
  }
  local path = "/v1/health/service/" .. consul.path_escape(settings.service) .. "?passing=true"
  local entries, err, status = http.get_json(core, "consul", { address = base, base = base }, path, request)
  if err then
    return failed("consul", base, http.without_token(core, err, settings, status))
  end
  local targets, wrong = consul.targets(entries, base)
  return listed(core, "consul", base, settings, targets, wrong,
    string.format("consul %s: no passing instance of service %q", base, settings.service))
end

-- The targets {node, url} to read, or one {node, url, error} when the
-- discovery failed. config: options.config's (fleet and nomad sections).
function M.targets(core, config)
  local fleet = config.fleet
  if fleet.targets then
    return fleet.targets
  end
  if fleet.nomad_service ~= "" then
    return from_nomad(core, fleet, config.nomad)
  end
  return from_consul(core, fleet.consul)
end

-- Reads every target's /ledger at once (core.http_get_many, one thread),
-- each within how.timeout seconds and M.MAX_BYTES, the whole read within
-- the timeout and M.DEADLINE_MARGIN_MS of waiting (each's own time is not
-- counted: http_multi.h), trusting how.ca_cert (nil: the
-- system's roots) and sending how.username and how.password (nil: none).
-- Calls each(target, result) as every answer arrives ({status, body,
-- content_type} or {error}); targets that carry an error already (a failed
-- discovery) are not read.
function M.read(core, targets, how, each)
  local requests, asked = {}, {}
  local timeout_ms = math.max(1, math.floor(how.timeout * 1000 + 0.5))
  for _, target in ipairs(targets) do
    if not target.error then
      requests[#requests + 1] = { url = target.url .. "/ledger", timeout_ms = timeout_ms, max_bytes = M.MAX_BYTES,
                                  ca_file = how.ca_cert, username = how.username, password = how.password }
      asked[#requests] = target
    end
  end
  core.http_get_many(requests, {
    deadline_ms = timeout_ms + M.DEADLINE_MARGIN_MS,
    each = function(index, result)
      each(asked[index], result)
    end,
  })
end

return M
