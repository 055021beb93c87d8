-- MIG slices, the impure half: asks nvidia-smi -L and -q (at the same time) only when some
-- GPU is in MIG mode (both cost more than the CSV queries: -q takes hundreds of milliseconds
-- on a real driver), and keeps what sources/mig.lua reads of them: per GPU in MIG mode its
-- slices and its processes' instance ids (no process name, no serial).
local json = require "gpuledger.json"
local nvidia = require "gpuledger.sources.nvidia"
local parse = require "gpuledger.sources.mig"
local run = require "gpuledger.collect.nvidia_run"
local shape = require "gpuledger.sources.shape"

local M = {}

local ASKS = { { key = "-L", args = { "-L" } }, { key = "-q", args = { "-q" } } }

-- Collects the snapshot's "mig" source with core (core.spawn_all) from
-- binary by deadline_ms (nvidia-smi's deadline, which this shares with the
-- other queries), mode being the MIG mode's answer (sources/mig.lua's
-- MODE_FIELDS, {fields, rows} or {error=}; nil for a driver that does not
-- list the field, so has no MIG). Returns nil when no GPU is in MIG mode
-- (nothing is asked then); else {ok=true, binary, enabled, gpus}
-- (sources/mig.lua's join), or {ok=false, binary, enabled?, error} naming
-- the query that failed and binary ("nvidia-smi -L: <binary>: …").
function M.collect(core, binary, mode, deadline_ms)
  if mode and mode.error then
    return { ok = false, binary = binary, error = mode.error }
  end
  local enabled = parse.enabled(mode)
  if not enabled or #enabled == 0 then
    return nil
  end
  local source = { ok = false, binary = binary, enabled = json.array(enabled) }
  local results = run.run_all(core, binary, ASKS, deadline_ms)
  for _, ask in ipairs(ASKS) do
    local why = run.failure(binary, ask.key, results[ask.key])
    if why then
      source.error = why
      return source
    end
  end
  local list, list_why = parse.parse_list(results["-L"].out)
  local query, query_why = parse.parse_query(results["-q"].out)
  if not (list and query) then
    source.error = shape.unexpected(nvidia.asked(list and "-q" or "-L", binary), list_why or query_why)
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
