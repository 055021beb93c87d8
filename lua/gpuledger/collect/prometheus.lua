-- The one impure part of `report`: the instant queries (docs/contract.md#report) sent
-- to Prometheus through core.http_get (TLS like the Nomad client, a bearer
-- token from the variable a flag names, never seen by Lua).
local http = require "gpuledger.collect.http"
local prometheus = require "gpuledger.sources.prometheus"

local M = {}

M.TIMEOUT_MS = 30000
M.MAX_BYTES = 8 * 1024 * 1024

-- The samples of one query's answer, or nil and the message of M.query.
local function ask(core, endpoint, request, query)
  local status, body, content_type = http.get(core, "prometheus", endpoint, prometheus.query_path(query),
    request, prometheus.QUERY_PATH)
  if not status then
    return nil, body
  end
  local samples, problem = prometheus.samples(status, body, content_type)
  if not samples then
    return nil, string.format("prometheus %s: query %s: %s", endpoint.address, query, problem)
  end
  return samples
end

-- Asks the Prometheus of config, the report section of options.config
-- (prometheus, its URL; token_env, the name of the variable holding a
-- bearer token; timeout_ms, nil for 30 s; the TLS fields ca_cert, ca_path,
-- client_cert, client_key, tls_server_name), for the counters over window
-- (validated by sources.prometheus.window).
-- Returns the samples of each answer of prometheus.ANSWERS ({jobs =
-- samples, nodes = samples, …}), or nil and one message that names
-- Prometheus, its address and the cause.
function M.query(core, config, window)
  local endpoint, why = http.endpoint(config.prometheus)
  if not endpoint then
    return nil, "prometheus " .. why
  end
  local request = {
    timeout_ms = config.timeout_ms or M.TIMEOUT_MS, max_bytes = M.MAX_BYTES,
    ca_file = config.ca_cert, ca_path = config.ca_path, client_cert = config.client_cert,
    client_key = config.client_key, tls_server_name = config.tls_server_name,
    token_header = "Authorization", token_prefix = "Bearer ", token_env = config.token_env,
  }
  local answers, queries = {}, prometheus.queries(window)
  for _, name in ipairs(prometheus.ANSWERS) do
    local samples, problem = ask(core, endpoint, request, queries[name])
    if not samples then
      return nil, problem
    end
    answers[name] = samples
    -- An answer's text and its decoded tree (many times its size) are
    -- garbage once its samples are taken: collected before the next
    -- answer arrives, not piled up with it (peak RSS 52 → 42 MiB at
    -- 20,000 series; bench/README.md, "report").
    collectgarbage("collect")
  end
  return answers
end

return M
