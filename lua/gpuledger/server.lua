-- What `serve` and `fleet serve` share (cmd/serve.lua, cmd/fleet.lua): the
-- loop of core.serve (a refresh every interval, its responses swapped in
-- whole, SIGHUP and SIGTERM/SIGINT), the answers of a failed refresh, the
-- stylesheet and the lines on stderr.
local clock = require "gpuledger.clock"
local html = require "gpuledger.render.html"
local text = require "gpuledger.text"

local M = {}

M.PLAIN = "text/plain; charset=utf-8"
local CSS = "text/css; charset=utf-8"

-- Writes "gpuledger: <message>" on stderr, made printable.
function M.warn(message)
  io.stderr:write("gpuledger: ", text.printable(message), "\n")
  io.stderr:flush()
end

-- The stylesheet response (the same for serve and fleet serve).
function M.stylesheet(core)
  return { status = 200, content_type = CSS, body = assert(core.embedded_text(html.STYLESHEET)) }
end

-- What every path answers when a refresh itself failed (a bug, or a site
-- script that raises): an honest 500 on each of paths, 503 on /healthz,
-- the stylesheet still; the failure ("<what>: <traceback>") is logged.
function M.failed_responses(core, what, message, paths)
  M.warn(what .. ": " .. message)
  local body = "gpuledger: the last refresh failed: " .. text.printable(message:match("^[^\n]*")) .. "\n"
  local responses = {}
  for _, path in ipairs(paths) do
    responses[path] = { status = 500, content_type = M.PLAIN, body = body }
  end
  responses["/healthz"] = { status = 503, content_type = M.PLAIN, body = body }
  responses["/style.css"] = M.stylesheet(core)
  return responses
end

-- The largest certificate chain or key file read.
local MAX_PEM_BYTES = 1024 * 1024

-- What core.serve needs of the web configuration file at path (nil: none):
-- {tls = {cert, key} (PEM texts) or nil, users = {{name, hash}, …}}, or nil
-- and why it cannot be served: the file unreadable or not as
-- web_config.lua reads it, a certificate or key unreadable, TLS asked of a
-- build whose HTTP server cannot speak it (the static release: put a
-- TLS-terminating proxy in front of it instead).
function M.access(core, path)
  if not path then
    return {}
  end
  local file, why = core.read_file(path, MAX_PEM_BYTES)
  if not file then
    return nil, why
  end
  local config, bad = require("gpuledger.web_config").parse(file)
  if not config then
    return nil, bad
  end
  local access = { users = config.users }
  if config.tls then
    if not core.serve_tls_supported() then
      return nil, "tls_server_config: this build's HTTP server (libmicrohttpd without GnuTLS, as in the static release) "
        .. "cannot speak TLS; serve plain HTTP behind a TLS-terminating proxy, or use the .deb build"
    end
    local cert, cert_why = core.read_file(config.tls.cert_file, MAX_PEM_BYTES)
    local key, key_why = core.read_file(config.tls.key_file, MAX_PEM_BYTES)
    if not (cert and key) then
      return nil, "tls_server_config: " .. (cert_why or key_why)
    end
    access.tls = { cert = cert, key = key }
  end
  return access
end

-- Serves what handlers.refresh() returns on listen (core.serve: listening
-- at once, every path 503 "no data yet" until the first refresh returns,
-- then one every interval seconds;
-- handlers.reload() on SIGHUP), saying "gpuledger <version> <banner[1]> on
-- <address> (<banner[2]> <interval>)" on stderr once it listens. When a
-- signal stops it, handlers.stopped() (if any) runs before the "stopped"
-- line. web: config.serve (listen, web_config). Returns the exit status: 0
-- once stopped, 1 when it could not listen, 2 for a web configuration that
-- cannot be served (M.access).
function M.serve(core, web, interval, banner, handlers)
  local listen = web.listen
  local access, problem = M.access(core, web.web_config)
  if not access then
    M.warn("--web.config.file " .. web.web_config .. ": " .. problem)
    return 2
  end
  local function listening(port)
    local shown = listen:gsub(":0$", ":" .. port)
    io.stderr:write(string.format("gpuledger %s %s on %s (%s %s)\n", core.version, banner[1], shown, banner[2],
      clock.format_duration(interval)))
    io.stderr:flush()
  end
  local ok, why = core.serve({ listen = listen, interval_ms = math.max(1, math.floor(interval * 1000 + 0.5)),
                               tls = access.tls, users = access.users },
    { refresh = handlers.refresh, reload = handlers.reload, listening = listening })
  if not ok then
    M.warn(why)
    return 1
  end
  if handlers.stopped then
    handlers.stopped()
  end
  M.warn(string.format("%s: stopped", why))
  return 0
end

return M
