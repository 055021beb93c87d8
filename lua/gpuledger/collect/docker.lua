-- Docker and Podman (SPEC §2.3), the impure half: lists and inspects the
-- running containers of an engine for the snapshot (gpuledger.sources.docker
-- reads them).
local http = require "gpuledger.collect.http"
local json = require "gpuledger.json"
local parse = require "gpuledger.sources.docker"

local M = {}

-- Inspects one container on an engine. Returns its reduced inspect; nil
-- when the engine does not know it (404: it vanished); {Id, Unreadable}
-- with the cause when the inspect failed otherwise or its answer is not a
-- container, which the ledger reports.
function M.inspect(core, engine, endpoint, id)
  local inspect, err, status = http.get_json(core, engine, endpoint, "/containers/" .. id .. "/json")
  if status == 404 then
    return nil
  elseif inspect == nil then
    return { Id = id, Unreadable = err }
  elseif type(inspect) ~= "table" or type(inspect.Id) ~= "string" then
    return { Id = id, Unreadable = string.format("%s %s: GET /containers/%s/json: want a container", engine, endpoint.address, id) }
  end
  return parse.reduce(inspect)
end

-- Lists the running containers of an engine ("docker" or "podman") at
-- address and inspects each; a container that vanishes between the list and
-- its inspect is skipped. Returns the snapshot source {ok=true, endpoint,
-- containers} or {ok=false, endpoint, error}.
function M.collect(core, engine, address)
  local endpoint, why = http.endpoint(address)
  if not endpoint then
    return { ok = false, endpoint = address, error = engine .. " " .. why }
  end
  local list, err = http.get_json(core, engine, endpoint, "/containers/json")
  if list == nil then
    return { ok = false, endpoint = address, error = err }
  end
  if type(list) ~= "table" then
    return { ok = false, endpoint = address, error = string.format("%s %s: GET /containers/json: want a JSON array", engine, address) }
  end
  local containers = json.array()
  for _, summary in ipairs(list) do
    local id = type(summary) == "table" and summary.Id
    if type(id) == "string" and id:match("^[%w]+$") then
      containers[#containers + 1] = M.inspect(core, engine, endpoint, id)
    end
  end
  return { ok = true, endpoint = address, containers = containers }
end

return M
