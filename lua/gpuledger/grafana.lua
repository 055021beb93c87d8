-- Links to gpuledger's Grafana dashboard (deploy/grafana/gpuledger.json,
-- uid "gpuledger") for --grafana-url: a node, or one GPU of it, selected
-- through the dashboard's node and gpu variables.
local text = require "gpuledger.text"

local M = {}

M.DASHBOARD_PATH = "/d/gpuledger/gpuledger"

-- Checks a --grafana-url: "" (no links) or an http(s) URL. Returns the
-- base without trailing slashes, or nil and why.
function M.base(url)
  local base = text.http_base(url)
  if not base then
    return nil, string.format("--grafana-url %q: want http(s)://host[:port][/path] of Grafana", url)
  end
  return base
end

-- The dashboard's URL for node (and gpu, an index, when given) under base
-- (M.base's); nil when base is "".
function M.link(base, node, gpu)
  if not base or base == "" then
    return nil
  end
  local url = base .. M.DASHBOARD_PATH .. "?var-node=" .. text.urlencode(node or "")
  if gpu then
    url = url .. "&var-gpu=" .. text.urlencode(tostring(gpu))
  end
  return url
end

return M
