-- The one impure part of `report`: the instant queries (docs/contract.md#report) sent
-- to Prometheus through core.http_get (TLS like the Nomad client, a bearer
-- token from the variable a flag names, never seen by Lua).
local http = require "gpuledger.collect.http"
local prometheus = require "gpuledger.sources.prometheus"

local M = {}

M.TIMEOUT_MS = 30000

-- The largest answer read: a cluster of 100,000 jobs answers the per-job
-- query in about 22 MB. It is held whole while its series are read one by
-- one (bench/README.md, "report"); a larger one is dropped as it arrives.
M.MAX_BYTES = 64 * 1024 * 1024

-- Asks one query and gives each sample of its answer to add(sample) as it
-- is read (prometheus.read). Returns true, or nil and the message of
-- M.query (noting a request sent without its token: http.without_token).
local function ask(core, config, endpoint, request, query, add)
  local status, body, content_type = http.get(core, "prometheus", endpoint, prometheus.query_path(query),
    request, prometheus.QUERY_PATH)
  if not status then
    return nil, http.without_token(core, body, config)
  end
  local series, problem = prometheus.read(core, status, body, content_type, add)
  if not series then
    return nil, http.without_token(core,
      string.format("prometheus %s: query %s: %s", endpoint.address, query, problem), config, status)
  end
  return true
end

-- Asks the Prometheus of config, the report section of options.config
-- (prometheus, its URL; token_env, the name of the variable holding a
-- bearer token; timeout_ms, nil for 30 s; the TLS fields ca_cert, ca_path,
-- client_cert, client_key, tls_server_name), for the counters over window
-- (validated by sources.prometheus.window), giving each sample of each
-- answer of prometheus.ANSWERS to add(answer, sample) ("jobs", {metric =
-- …, value = seconds}) as it is read. Returns true, or nil and one message
-- that names Prometheus, its address and the cause.
function M.query(core, config, window, add)
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
  local queries = prometheus.queries(window)
  for _, name in ipairs(prometheus.ANSWERS) do
    local asked, problem = ask(core, config, endpoint, request, queries[name], function(sample)
      add(name, sample)
    end)
    if not asked then
      return nil, problem
    end
    -- An answer's text is garbage once its series are read: collected
    -- before the next answer arrives, not piled up with it.
    collectgarbage("collect")
  end
  return true
end

return M
