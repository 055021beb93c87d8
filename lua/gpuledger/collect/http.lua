-- What the HTTP sources (Docker, Podman, Nomad, Prometheus) share: reading an endpoint
-- ("unix:///run/docker.sock", "http://host:port", "tcp://host:port"), one
-- GET of a JSON answer through core.http_get, and errors that name the
-- source, the address, the request and the cause.
local json = require "gpuledger.json"
local text = require "gpuledger.text"

local M = {}

M.TIMEOUT_MS = 5000
M.MAX_BYTES = 8 * 1024 * 1024

-- Splits an endpoint. Returns {address=, base=, unix_socket=} or nil, why.
function M.endpoint(address)
  local socket = address:match("^unix://(/.+)$")
  if socket then
    return { address = address, base = "http://localhost", unix_socket = socket }
  end
  local rest = address:match("^tcp://(.+)$")
  local base = rest and ("http://" .. rest) or address
  if not base:match("^https?://[^/]+") then
    return nil, string.format("%s: want unix:///path, http://host:port or https://host:port", address)
  end
  return { address = address, base = (base:gsub("/+$", "")) }
end

-- The gist of an error answer: Docker's and Podman's {"message": …} or
-- Nomad's plain text, on one short printable line.
function M.error_text(body)
  local decoded = json.decode(body or "")
  local said = type(decoded) == "table" and type(decoded.message) == "string" and decoded.message or body or ""
  return text.one_line(said, 200)
end

-- The HTTP client names a TLS option it cannot use by its field
-- ("ca_path /x: no .pem or .crt file"); people set it with a flag.
local TLS_FLAGS = {
  ca_file = "ca-cert", ca_path = "ca-path", client_cert = "client-cert",
  client_key = "client-key", tls_server_name = "tls-server-name",
}

-- A cause from core.http_get with TLS option names turned into the flags of
-- `source` ("--nomad-ca-path /x: …").
local function with_flag_names(cause, source)
  local function flag(field)
    return "--" .. source .. "-" .. TLS_FLAGS[field]
  end
  local a, b = cause:match("^(%l+_%l+) and (%l+_%l+) go together")
  if a and TLS_FLAGS[a] and TLS_FLAGS[b] then
    return string.format("%s and %s go together", flag(a), flag(b))
  end
  return (cause:gsub("^(%l[%l_]*)( )", function(field, space)
    return TLS_FLAGS[field] and (flag(field) .. space) or nil
  end))
end

-- The request core.http_get and core.http_get_many take for a GET of path
-- from endpoint: url, the endpoint's socket, M.TIMEOUT_MS and M.MAX_BYTES,
-- and opts over them (TLS, token, timeout_ms, max_bytes).
function M.request(endpoint, path, opts)
  local request = { url = endpoint.base .. path, unix_socket = endpoint.unix_socket,
                    timeout_ms = M.TIMEOUT_MS, max_bytes = M.MAX_BYTES }
  for key, value in pairs(opts or {}) do
    request[key] = value
  end
  return request
end

-- The options that end a request by deadline_ms (core.monotonic_ms): its
-- timeout is what is left of it. Once it has passed: nil and the cause to
-- give instead of an answer (the request is not sent).
function M.until_deadline(core, deadline_ms)
  local left_ms = math.floor(deadline_ms - core.monotonic_ms())
  if left_ms < 1 then
    return nil, "not asked: its deadline had passed"
  end
  return { timeout_ms = left_ms }
end

-- The answers whose body is never shown, by the reason phrase shown
-- instead: a server that refuses credentials may echo them in any form.
local REFUSED = { [401] = "Unauthorized", [403] = "Forbidden" }

-- The name of the variable settings.token_env names when a request with it
-- goes without a token (the variable is not set, or empty), else nil
-- (it is set, or none is named). core.env_is_set tells, so that the
-- token's value never enters Lua.
function M.missing_token(core, settings)
  local name = settings.token_env
  if name ~= "" and not core.env_is_set(name) then
    return name
  end
  return nil
end

-- The note that ends the message of a request sent without a token because
-- the variable name is not set.
function M.token_note(name)
  return string.format(" (sent without a token: %s is not set)", name)
end

-- err, the error of a request whose token comes from the variable
-- settings.token_env names, with M.token_note when it went without one
-- and either the variable was named by its flag (settings.token_named) or
-- the answer's status is a refusal (401, 403), which an unset default
-- variable most likely explains.
function M.without_token(core, err, settings, status)
  local missing = (settings.token_named or REFUSED[status]) and M.missing_token(core, settings)
  return missing and err .. M.token_note(missing) or err
end

-- Who answered a GET of path from endpoint, as the errors about its answer
-- begin: "<source> <address>: GET <path>".
function M.asked(source, endpoint, path)
  return string.format("%s %s: GET %s", source, endpoint.address, path)
end

-- Reads the result of a GET of shown_path from endpoint (core.http_get_many's
-- {status, body, content_type} or {error}). Returns the status, body and
-- content type (a 401's or 403's body is its reason phrase, never what the
-- server said), or nil and a message "<source> <address>: GET <shown path>:
-- <cause>".
function M.answer(source, endpoint, shown_path, result)
  if result.error then
    return nil, M.asked(source, endpoint, shown_path) .. ": " .. with_flag_names(result.error, source)
  end
  return result.status, REFUSED[result.status] or result.body, result.content_type
end

-- Reads the result of a GET of path as JSON, as M.answer. Returns the
-- value (any JSON value but null: false too, so a caller tells a failure
-- by the message), or nil, a message "<source> <address>: GET <path>:
-- <cause>" and the HTTP status (if one came).
function M.json_answer(source, endpoint, path, result)
  local status, body = M.answer(source, endpoint, path, result)
  if not status then
    return nil, body
  end
  local prefix = M.asked(source, endpoint, path)
  if status ~= 200 then
    local said = M.error_text(body)
    return nil, string.format("%s: HTTP %d%s", prefix, status, said ~= "" and (" (" .. said .. ")") or ""), status
  end
  local value, why = json.decode(body)
  if value == nil then
    return nil, string.format("%s: the answer is not JSON: %s", prefix, why), status
  end
  return value, nil, status
end

-- One GET through core.http_get, as a result of core.http_get_many.
local function get_one(core, request)
  local status, body, content_type = core.http_get(request.url, request)
  if not status then
    return { error = body }
  end
  return { status = status, body = body, content_type = content_type }
end

-- GETs path from endpoint (M.request) and reads the answer (M.answer;
-- shown_path, default path, is what an error names).
function M.get(core, source, endpoint, path, opts, shown_path)
  return M.answer(source, endpoint, shown_path or path, get_one(core, M.request(endpoint, path, opts)))
end

-- GETs path from endpoint and decodes the JSON answer (M.json_answer).
function M.get_json(core, source, endpoint, path, opts)
  return M.json_answer(source, endpoint, path, get_one(core, M.request(endpoint, path, opts)))
end

return M
