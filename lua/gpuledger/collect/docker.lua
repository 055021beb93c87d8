-- Docker and Podman (docs/sources.md#docker-and-podman), the impure half: lists and inspects the
-- running containers of an engine for the snapshot (gpuledger.sources.docker
-- reads them), the list and the inspects within one deadline, the inspects
-- at once.
local http = require "gpuledger.collect.http"
local json = require "gpuledger.json"
local parse = require "gpuledger.sources.docker"
local shape = require "gpuledger.sources.shape"

local M = {}

M.DEADLINE_MS = 5000 -- for the list and every inspect of one collect together

-- A container id as engines and cgroups spell it (hex), or nil.
local function container_id(value)
  return type(value) == "string" and value:match("^%w+$") and value or nil
end

-- Inspects the containers ids on an engine at once, by deadline_ms
-- (core.monotonic_ms). Returns the reduced inspects, in order: a container
-- the engine does not know (404: it vanished, or is another engine's) is
-- left out; one it could not be asked about or answered badly for is
-- {Id=id, Error=<why, naming the engine, address and request>}, so that
-- the ledger never takes it for a container the engine does not know.
local function inspect_all(core, engine, endpoint, ids, deadline_ms)
  local requests, paths, results = {}, {}, {}
  local opts, late = http.until_deadline(core, deadline_ms)
  for i, id in ipairs(ids) do
    paths[i] = "/containers/" .. id .. "/json"
    requests[i] = http.request(endpoint, paths[i], opts)
    results[i] = { error = late } -- unless asked
  end
  if opts and #requests > 0 then
    results = core.http_get_many(requests, { deadline_ms = opts.timeout_ms })
  end
  local containers = json.array()
  for i, result in ipairs(results) do
    local inspect, err, status = http.json_answer(engine, endpoint, paths[i], result)
    if type(inspect) == "table" and type(inspect.Id) == "string" then
      containers[#containers + 1] = parse.reduce(inspect)
    elseif status ~= 404 then
      containers[#containers + 1] = { Id = ids[i], Error = err
        or http.asked(engine, endpoint, paths[i]) .. ": want a JSON object with an Id" }
    end
  end
  return containers
end

-- Lists the running containers of an engine ("docker" or "podman") at
-- address and inspects each, with the containers of GPU processes it did not
-- list (wanted: full ids from /proc; started between the list and now),
-- all within M.DEADLINE_MS. Returns the snapshot source
-- {ok=true, endpoint, containers} or {ok=false, endpoint, error} (a list
-- that is no JSON array among the causes). A listed item that is no
-- object (a null too) is a container {Error} naming it, after the others.
function M.collect(core, engine, address, wanted)
  local deadline_ms = core.monotonic_ms() + M.DEADLINE_MS
  local endpoint, why = http.endpoint(address)
  if not endpoint then
    return { ok = false, endpoint = address, error = engine .. " " .. why }
  end
  local list, err = http.get_json(core, engine, endpoint, "/containers/json", http.until_deadline(core, deadline_ms))
  if list == nil then
    return { ok = false, endpoint = address, error = err }
  end
  local listing = http.asked(engine, endpoint, "/containers/json")
  err = shape.not_a_list(listing, list)
  if err then
    return { ok = false, endpoint = address, error = err }
  end
  local ids, listed = {}, {}
  local function add(id)
    if id and not listed[id] then
      listed[id] = true
      ids[#ids + 1] = id
    end
  end
  local summaries, whys = shape.items(list, { Id = "string" }, "")
  for _, summary in ipairs(summaries) do
    add(container_id(summary.Id))
  end
  for _, id in ipairs(wanted or {}) do
    add(container_id(id))
  end
  local containers = inspect_all(core, engine, endpoint, ids, deadline_ms)
  for _, item_why in ipairs(whys) do
    containers[#containers + 1] = { Error = shape.unexpected(listing, item_why) }
  end
  return { ok = true, endpoint = address, containers = containers }
end

return M
