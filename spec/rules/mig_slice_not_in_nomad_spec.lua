-- rules/mig_slice_not_in_nomad.lua, as embedded in the core: a slice of the driver Nomad does not list.
local H = require "helper"
local json = require "gpuledger.json"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

local function slice(fields)
  return H.merge({ uuid = "MIG-00000001-0000-0000-0000-000000000001", index = 1, profile = "2g.20gb",
    memoryUsedMiB = 0, memoryTotalMiB = 20096, state = "free", reservations = json.array(), tenants = json.array() }, fields)
end

local READ = { sources = { nomad_devices = "read" } }

describe("mig-slice-not-in-nomad", function()
  it("fires on a slice Nomad's device list does not name while it names others, naming the slice", function()
    local listed = slice { uuid = "MIG-00000000-0000-0000-0000-000000000000", index = 0, nomadDevice = { healthy = true } }
    local found = one("mig-slice-not-in-nomad", { gpu { migDevices = { listed, slice() } } }, nil, nil, READ)
    assert.equal("WARN", found.level)
    assert.equal("gpu0/mig1 MIG-00000001 2g.20gb", found.gpu)
    assert.equal("MIG-00000001-0000-0000-0000-000000000001", found.migUuid)
  end)

  it("does not fire on a slice Nomad lists, when Nomad lists no slice of the GPU, or when its list was not read", function()
    none("mig-slice-not-in-nomad", { gpu { migDevices = { slice { nomadDevice = { healthy = true } } } } }, nil, nil, READ)
    none("mig-slice-not-in-nomad", { gpu { migDevices = { slice() } } })
    none("mig-slice-not-in-nomad", { gpu { migDevices = { slice() } } }, nil, nil, READ) -- Nomad lists no slice of it
  end)
end)
