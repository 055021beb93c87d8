-- Consul (docs/sources.md#consul-fleet-discovery): where the agent is, and the gpuledger nodes its
-- health API lists as passing, from the decoded answer of
-- /v1/health/service/<service>?passing=true. Pure.
local text = require "gpuledger.text"

local M = {}

M.DEFAULT_ADDRESS = "127.0.0.1:8500"

-- The base URL of the Consul agent: "" is 127.0.0.1:8500; an address
-- without a scheme is http, or https when CONSUL_HTTP_SSL is true (ssl).
-- Returns it, or nil and why for a scheme other than http or https.
function M.base_url(address, ssl)
  address = address ~= "" and address or M.DEFAULT_ADDRESS
  local scheme = address:match("^(%a[%w+.-]*)://")
  if not scheme then
    return (ssl and "https://" or "http://") .. address:gsub("/+$", "")
  end
  if scheme ~= "http" and scheme ~= "https" then
    return nil, string.format("%s: want host:port, http://host:port or https://host:port", address)
  end
  return (address:gsub("/+$", ""))
end

-- True for the values Consul's CLI reads as true in CONSUL_HTTP_SSL.
function M.is_true(value)
  return value == "1" or value == "t" or value == "T" or value == "true" or value == "TRUE" or value == "True"
end

-- A path segment escaped as Go's url.PathEscape does: only the unreserved
-- characters stay, as in a query (text.urlencode).
M.path_escape = text.urlencode

-- host:port with an IPv6 host in brackets.
function M.host_port(host, port)
  if host:find(":", 1, true) and not host:match("^%[") then
    host = "[" .. host .. "]"
  end
  return host .. ":" .. tostring(port)
end

local function sorted_by_node(targets)
  table.sort(targets, function(a, b)
    if a.node ~= b.node then
      return a.node < b.node
    end
    return a.url < b.url
  end)
  return targets
end
M.sorted_by_node = sorted_by_node

-- The targets {node, url} of a health answer, sorted by node name: the node
-- is Node.Node, the host Service.Address or else Node.Address. Entries
-- without a host or a port are skipped.
function M.targets(entries)
  local targets = {}
  for _, entry in ipairs(type(entries) == "table" and entries or {}) do
    local node = type(entry) == "table" and type(entry.Node) == "table" and entry.Node or {}
    local service = type(entry) == "table" and type(entry.Service) == "table" and entry.Service or {}
    local host = type(service.Address) == "string" and service.Address ~= "" and service.Address or node.Address
    local port = math.tointeger(service.Port)
    if type(host) == "string" and host ~= "" and port and port > 0 then
      local name = type(node.Node) == "string" and node.Node ~= "" and node.Node or host
      targets[#targets + 1] = { node = name, url = "http://" .. M.host_port(host, port) }
    end
  end
  return sorted_by_node(targets)
end

return M
