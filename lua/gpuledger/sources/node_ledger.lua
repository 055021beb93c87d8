-- Another node's ledger, as its `serve` answers /ledger (docs/json.md's
-- contract, schema 1, and the older nodes': schema 0 with fields missing,
-- an older release's with null arrays): the shape the fleet checks
-- it against where it enters (shape.lua), so that a field of the wrong type
-- or a number that is none (`memoryTotalMiB: 23034.5`, `index: "zero"`,
-- `1e308`) costs that node, named, and never the command. Pure.
local health = require "gpuledger.sources.health"
local shape = require "gpuledger.sources.shape"

local M = {}

-- The most one node's ledger may hold, generous for real nodes (a few
-- dozen GPUs, a few tenants each): past one, the node is an error naming
-- the list ("ledger.entries has 100000 items, want at most 128"), so that
-- one node costs the fleet no more than its share.
M.LIMITS = {
  gpus = 128, tenants = 64, reservations = 64, pids = 1024, processes = 256, device_ids = 128,
  xids = 256, errors = 256, unreadable = 64, slices = 16, -- a GPU has at most 7 MIG compute slices
}
local LIMITS = M.LIMITS

local WHOLE = shape.MAX_WHOLE
local COUNT = shape.whole(0, WHOLE)
local INTEGER = shape.whole(-WHOLE, WHOLE)
local AMOUNT = shape.number(0, WHOLE)

-- A health field's JSON type by how sources/health.lua reads its cell.
local HEALTH_KIND = {
  text = "string", enabled = "boolean", yes = "boolean", active = "boolean", count = COUNT, watts = AMOUNT,
}

local HEALTH = { requiresReset = "boolean", lost = "boolean", unreadable = { list = "string", max = LIMITS.unreadable } }
for _, field in ipairs(health.FIELDS) do
  HEALTH[field.key] = HEALTH_KIND[field.kind]
end
HEALTH.index, HEALTH.uuid, HEALTH.busId = nil, nil, nil -- identity, not health: never in a ledger's health

local XID = {
  xid = COUNT, count = COUNT, first = "string", last = "string", message = "string",
  processes = { list = "string", max = LIMITS.processes }, fatal = "boolean", class = "string", meaning = "string",
  action = "string", migSlices = { list = "string", max = LIMITS.slices },
}

local RESERVATION = {
  allocId = "string", jobId = "string", taskGroup = "string", task = "string", namespace = "string",
  clientStatus = "string", deviceIds = { list = "string", max = LIMITS.device_ids },
}

local TENANT = {
  kind = "string", container = "string", containerId = "string", runtime = "string", image = "string",
  allocId = "string", jobName = "string", taskName = "string", namespace = "string",
  owner = "string", service = "string", uid = COUNT, user = "string",
  pids = { list = COUNT, max = LIMITS.pids }, processes = { list = "string", max = LIMITS.processes },
  usedMemoryMiB = COUNT,
  reserved = "boolean", allocVisible = "boolean", allocFromName = "boolean", unidentified = "boolean",
  unplaced = "boolean",
}

-- A MIG slice of a GPU in MIG mode: a unit of tenancy as a GPU is.
local SLICE = {
  uuid = "string", index = COUNT, profile = "string", gpuInstanceId = COUNT, computeInstanceId = COUNT,
  memoryUsedMiB = COUNT, memoryTotalMiB = COUNT, state = "string",
  reservations = { list = RESERVATION, max = LIMITS.reservations }, tenants = { list = TENANT, max = LIMITS.tenants },
  nomadDevice = { healthy = "boolean", healthDescription = "string" },
}

local ENTRY = {
  index = INTEGER, uuid = "string", model = "string", busId = "string",
  memoryUsedMiB = COUNT, memoryTotalMiB = COUNT, utilizationPct = COUNT, memoryUtilizationPct = COUNT,
  temperatureC = INTEGER, powerW = AMOUNT, encoderSessions = COUNT, encoderAverageFps = AMOUNT,
  thermalMarginC = INTEGER, thermalSlowdown = "boolean",
  reservations = { list = RESERVATION, max = LIMITS.reservations }, tenants = { list = TENANT, max = LIMITS.tenants },
  state = "string", stateSince = "string", health = HEALTH, xids = { list = XID, max = LIMITS.xids },
  nomadDevice = { healthy = "boolean", healthDescription = "string" }, missing = "boolean",
  migDevices = { list = SLICE, max = LIMITS.slices },
  nomadSlicesUnknown = { list = { uuid = "string", name = "string" }, max = LIMITS.slices },
}

-- The shape of a /ledger answer, JSON nulls read as absent (json.decode);
-- the fleet checks it with shape.check(decoded, M.SHAPE, "ledger"). Every
-- ledger, of any release, names its node and when it was read: an object
-- without them (`{}`, a proxy's or another service's JSON) is no ledger,
-- not a node of no GPU. entries may be absent: an older release wrote a
-- node of no GPU's as null.
M.SHAPE = {
  schema = COUNT, node = shape.required "string", at = shape.required "string",
  entries = { list = ENTRY, max = LIMITS.gpus },
  nomadRead = "boolean", nomadTokenUnset = "string", processesRead = "boolean", nvidiaInstalled = "boolean",
  driverVersion = "string", cudaVersion = "string",
  nomadNode = { id = "string", name = "string", class = "string", pool = "string", datacenter = "string" },
  errors = { list = "string", max = LIMITS.errors },
  sourceErrors = {
    list = { source = "string", asked = "string", containerId = "string", gpu = "string", message = "string" },
    max = LIMITS.errors,
  },
  sources = { map = "string" },
}

return M
