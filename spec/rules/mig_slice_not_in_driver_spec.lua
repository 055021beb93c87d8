-- rules/mig_slice_not_in_driver.lua, as embedded in the core: a slice Nomad lists that the driver does not.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

local UNKNOWN = { { uuid = "MIG-00000009-0000-0000-0000-000000000009", name = "NVIDIA H100 80GB HBM3 MIG 1g.10gb" } }
local READ = { sources = { mig = "read" } }

describe("mig-slice-not-in-driver", function()
  it("fires for each slice Nomad lists on the GPU that the driver does not, naming it", function()
    local found = one("mig-slice-not-in-driver", { gpu { migDevices = {}, nomadSlicesUnknown = UNKNOWN } }, nil, nil, READ)
    assert.equal("BAD", found.level)
    assert.matches("^Nomad lists MIG slice MIG%-00000009%-0000%-0000%-0000%-000000000009 %(NVIDIA H100 80GB HBM3 MIG 1g.10gb%) on this GPU",
      found.message)
  end)

  it("does not fire where Nomad lists only the driver's slices, or the driver's could not be read", function()
    none("mig-slice-not-in-driver", { gpu { migDevices = {} } }, nil, nil, READ)
    none("mig-slice-not-in-driver", { gpu { migDevices = {}, nomadSlicesUnknown = UNKNOWN } }, nil, nil,
      { sources = { mig = "failed" } })
  end)
end)
