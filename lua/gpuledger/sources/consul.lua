-- Consul (docs/sources.md#consul-fleet-discovery): where the agent is, and the gpuledger nodes its
-- health API lists as passing, from the decoded answer of
-- /v1/health/service/<service>?passing=true. Pure.
local shape = require "gpuledger.sources.shape"
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

-- The longest host name DNS allows.
local HOST_MAX = 253

-- True for an IPv4 address in dotted decimal.
local function is_ipv4(host)
  local octets = { host:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$") }
  for _, octet in ipairs(octets) do
    if #octet > 3 or tonumber(octet) > 255 then
      return false
    end
  end
  return #octets == 4
end

-- True for an IPv6 address (RFC 4291's text forms: eight groups, "::" for
-- a run of zero groups once, an IPv4 address as the last two), no zone.
local function is_ipv6(host)
  local groups, v4 = host, host:match(":(%d+%.[%d.]+)$")
  if v4 then
    if not is_ipv4(v4) then
      return false
    end
    groups = host:sub(1, #host - #v4) .. "0:0"
  end
  local head, tail = groups:match("^(.-)::(.*)$")
  local count = 0
  for _, part in ipairs(head and { head, tail } or { groups }) do
    if part ~= "" then
      for group in (part .. ":"):gmatch("(.-):") do
        if not group:match("^%x%x?%x?%x?$") then
          return false
        end
        count = count + 1
      end
    end
  end
  return head and count < 8 or count == 8
end

-- True when host is a host a registration (or a --targets entry) may name:
-- a DNS name (labels of letters, digits, "-" and "_"), an IPv4 address, or
-- an IPv6 address, bracketed or not. Nothing else reaches a URL: not a path,
-- a query, a user, a port or a zone.
function M.is_host(host)
  local v6 = host:match("^%[(.*)%]$") or (host:find(":", 1, true) and host)
  if v6 then
    return is_ipv6(v6)
  elseif #host > HOST_MAX or host:match("^[%d.]+$") then
    return is_ipv4(host)
  end
  for label in (host:gsub("%.$", "") .. "."):gmatch("(.-)%.") do
    if label == "" or #label > 63 or label:find("[^%w_-]") then
      return false
    end
  end
  return true
end

-- The target {node (cut to text.NAME_MAX), url} of a registration ({node, unnamed, host, port, host_at,
-- port_at}: unnamed when node is only the address, the target then named
-- host:port; the paths of host and port in the answer, "[3].Service.Address")
-- read from a discovery (from: {source, address}, "consul http://…" and
-- where it was asked); or, when the host is no host or the port no port
-- (1–65535), a target {node, url = from.address, error, same} that names
-- the entry and is not read (same: what it has in common with an entry
-- just like it, for M.distinct).
function M.target(registration, from)
  local host, port = registration.host, type(registration.port) == "number" and math.tointeger(registration.port)
  local node = text.cut(registration.node, text.NAME_MAX)
  local why
  if type(host) ~= "string" or not M.is_host(host) then
    why = string.format("%s is %s, want a host name or an IP address", registration.host_at,
      type(host) == "string" and string.format("%q", text.cut(host, text.NAME_MAX)) or shape.what_is(host, "missing"))
  elseif not port or port < 1 or port > 65535 then
    local value = registration.port
    why = string.format("%s is %s, want a port from 1 to 65535", registration.port_at,
      type(value) == "number" and string.format("%.14g", value) or shape.what_is(value, "missing"))
  end
  if why then
    local same = string.format("%s\0%s\0%s", registration.node, tostring(host), tostring(registration.port))
    return { node = node, url = from.address, error = shape.unexpected(from.source, why), same = same }
  end
  local url = "http://" .. M.host_port(host, port)
  return { node = registration.unnamed and M.host_port(host, port) or node, url = url }
end

-- The targets sorted by node name (then url), each node read once: a
-- target with the url of one before it (3,000 identical registrations of
-- one node) is dropped, as is the error of an entry like one before it.
function M.distinct(targets)
  table.sort(targets, function(a, b)
    if a.node ~= b.node then
      return a.node < b.node
    end
    return a.url < b.url
  end)
  local seen, kept = {}, {}
  for _, target in ipairs(targets) do
    local key = target.same or target.url
    target.same = nil
    if not seen[key] then
      seen[key] = true
      kept[#kept + 1] = target
    end
  end
  return kept
end

-- The targets {node, url} of a health answer read from the agent at base
-- (M.distinct): the node is Node.Node, the host Service.Address or else
-- Node.Address, the port Service.Port; an entry without a host or a port
-- that is one is a target with its error (M.target). nil and why when the
-- answer is no array (shape.not_a_list).
function M.targets(entries, base)
  local targets, from = {}, { source = "consul " .. base, address = base }
  local wrong = shape.not_a_list(from.source, entries)
  if wrong then
    return nil, wrong
  end
  for i, entry in ipairs(entries) do
    local node = type(entry) == "table" and type(entry.Node) == "table" and entry.Node or {}
    local service = type(entry) == "table" and type(entry.Service) == "table" and entry.Service or {}
    local from_service = type(service.Address) == "string" and service.Address ~= ""
    local host = from_service and service.Address or node.Address
    local name = type(node.Node) == "string" and node.Node ~= "" and node.Node or type(host) == "string" and host or "consul"
    targets[#targets + 1] = M.target({
      node = name, host = host, port = service.Port,
      host_at = string.format("[%d].%s.Address", i, from_service and "Service" or "Node"),
      port_at = string.format("[%d].Service.Port", i),
    }, from)
  end
  return M.distinct(targets)
end

return M
