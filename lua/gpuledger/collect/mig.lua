-- MIG slices, the impure half: asks nvidia-smi -L and -q only when some GPU
-- is in MIG mode (both cost more than the CSV queries: -q takes hundreds of
-- milliseconds on a real driver), and keeps what sources/mig.lua reads of
-- them: per GPU in MIG mode its slices and its processes' instance ids (no
-- process name, no serial).
local json = require "gpuledger.json"
local nvidia = require "gpuledger.collect.nvidia"
local parse = require "gpuledger.sources.mig"
local shape = require "gpuledger.sources.shape"

local M = {}

-- The UUIDs of the GPUs in MIG mode: from the health source's answer where it
-- was read (a driver whose health query has no mig.mode.current knows no
-- MIG), else from a query of its own. Returns the list, or nil (and an
-- error when the query failed for another reason than a driver that does
-- not know the field).
local function enabled_gpus(core, binary, health, deadline_ms)
  if health and health.ok then
    return parse.enabled(health.health) or {}
  end
  local answer, err, status = nvidia.query(core, binary, "mig-mode", "--query-gpu", parse.MODE_FIELDS, deadline_ms)
  if not answer then
    return nil, status ~= 2 and err or nil -- 2: the driver does not know the field, so has no MIG
  end
  return parse.enabled(answer) or {}
end

-- Collects the snapshot's "mig" source with core (core.spawn) from binary
-- by deadline_ms (nvidia-smi's deadline, which this shares with the other
-- queries), health being the snapshot's health source (or nil). Returns nil
-- when no GPU is in MIG mode (nothing is asked then but, without the health
-- source, the mode); else {ok=true, binary, enabled, gpus} (sources/mig.lua's
-- join), or {ok=false, binary, enabled?, error} naming the query that failed.
function M.collect(core, binary, health, deadline_ms)
  local enabled, err = enabled_gpus(core, binary, health, deadline_ms)
  if err then
    return { ok = false, binary = binary, error = err }
  elseif not enabled or #enabled == 0 then
    return nil
  end
  local source = { ok = false, binary = binary, enabled = json.array(enabled) }
  local texts = {}
  for _, flag in ipairs { "-L", "-q" } do
    local out, why = nvidia.run(core, binary, flag, { flag }, deadline_ms)
    if not out then
      source.error = why
      return source
    end
    texts[flag] = out
  end
  local list, list_why = parse.parse_list(texts["-L"])
  local query, query_why = parse.parse_query(texts["-q"])
  if not (list and query) then
    source.error = shape.unexpected("nvidia-smi " .. (list and "-q" or "-L"), list_why or query_why)
    return source
  end
  source.ok = true
  source.gpus = json.array(parse.join(list, query, enabled))
  for _, gpu in ipairs(source.gpus) do
    gpu.devices, gpu.processes = json.array(gpu.devices), json.array(gpu.processes)
  end
  return source
end

return M
