-- The units of tenancy of a ledger (gl.units, what the rules judge as they
-- would a GPU), and what the program's own rules share while they judge a
-- ledger: the one list of its units (seven of them walk the units, and
-- making the list for each was a tenth of judging a node), and the words gl
-- makes of each of its GPUs (a GPU's tenancy ends the message of every
-- health finding on it).
local ledger_mod = require "gpuledger.ledger"

local M = {}

local SHARED = setmetatable({}, { __mode = "k" }) -- ledger → its units (false: not made yet), M.share
local WORDS = setmetatable({}, { __mode = "k" }) -- a GPU of a shared ledger → the words made of it, M.words

-- The units of ledger, in order: each GPU outside MIG mode; for a GPU in
-- MIG mode each of its slices, and the GPU itself where it has tenants or
-- reservations of its own (processes the driver placed on no slice, a
-- reservation of the whole GPU). Each is {gpu, mig (the slice, or nil),
-- tenants, reservations, state, memoryUsedMiB, memoryTotalMiB, noun}. A
-- new list, except while ledger is shared (M.share): then the one list.
function M.of(ledger)
  if SHARED[ledger] then
    return SHARED[ledger]
  end
  local units = {}
  for _, gpu in ipairs(ledger.entries) do
    local slices = gpu.migDevices
    if not slices or #gpu.tenants > 0 or #gpu.reservations > 0 then
      units[#units + 1] = {
        gpu = gpu, tenants = gpu.tenants, reservations = gpu.reservations, noun = "GPU",
        state = slices and ledger_mod.classify(gpu) or gpu.state,
        memoryUsedMiB = gpu.memoryUsedMiB, memoryTotalMiB = gpu.memoryTotalMiB,
      }
    end
    for _, slice in ipairs(slices or {}) do
      units[#units + 1] = {
        gpu = gpu, mig = slice, tenants = slice.tenants, reservations = slice.reservations, noun = "MIG slice",
        state = slice.state, memoryUsedMiB = slice.memoryUsedMiB, memoryTotalMiB = slice.memoryTotalMiB,
      }
    end
  end
  if SHARED[ledger] == false then
    SHARED[ledger] = units
  end
  return units
end

-- From M.share(ledger, true) to M.share(ledger, false), M.of(ledger) gives
-- every caller the same list, made at the first call, and M.words(gpu) the
-- same table for each GPU of the ledger: findings.run shares them among the
-- program's own rules, which only read the ledger. A site rule reads a
-- read-only view of the ledger, never shared: it gets a list of its own, to
-- do with as it likes, and gl words its views anew.
function M.share(ledger, shared)
  if shared then
    SHARED[ledger] = false -- made at the first call
  else
    SHARED[ledger] = nil
  end
  for _, gpu in ipairs(ledger.entries) do
    WORDS[gpu] = shared and {} or nil
  end
end

-- The table where gl keeps what it has worded of gpu (its tenancy) while
-- gpu's ledger is shared (M.share), else nil.
function M.words(gpu)
  return WORDS[gpu]
end

return M
