-- Links to Nomad's web UI for --nomad-ui-url (the address the UI is
-- served at, Nomad's HTTP address): an allocation (/ui/allocations/<id>),
-- a job (/ui/jobs/<job>@<namespace>, as the UI names a job since Nomad
-- 1.7) and a client node (/ui/clients/<id>); and, without the flag, the
-- command that shows an allocation.
local text = require "gpuledger.text"

local M = {}

-- Checks a --nomad-ui-url: "" (no links) or an http(s) URL. Returns the
-- base without trailing slashes, or nil and why.
function M.base(url)
  local base = text.http_base(url)
  if not base then
    return nil, string.format("--nomad-ui-url %q: want http(s)://host[:port][/path] of Nomad's web UI", url)
  end
  return base
end

-- The URL of allocation id under base (M.base's); nil when base is "".
function M.alloc(base, id)
  return base and base ~= "" and (base .. "/ui/allocations/" .. text.urlencode(id)) or nil
end

-- The URL of job in namespace ("" is "default") under base; nil when base is "".
function M.job(base, namespace, job)
  if not base or base == "" then
    return nil
  end
  namespace = (namespace or "") ~= "" and namespace or "default"
  return base .. "/ui/jobs/" .. text.urlencode(job) .. "@" .. text.urlencode(namespace)
end

-- The URL of client node id under base; nil when base is "".
function M.client(base, id)
  return base and base ~= "" and (base .. "/ui/clients/" .. text.urlencode(id)) or nil
end

-- The command that shows allocation id of namespace, to copy where there
-- is no UI to link to.
function M.alloc_command(namespace, id)
  local flag = (namespace or "") ~= "" and namespace ~= "default" and ("-namespace=" .. namespace .. " ") or ""
  return "nomad alloc status " .. flag .. id
end

return M
