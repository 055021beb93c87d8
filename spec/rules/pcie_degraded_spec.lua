-- rules/pcie_degraded.lua, as embedded in the core: the PCIe link below its maximum.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("pcie-degraded", function()
  it("a narrower link fires, idle or not", function()
    assert.matches("^PCIe link degraded: x8 of x16 —", one("pcie-degraded", { gpu { health = { pcieWidthCurrent = 8, pcieWidthMax = 16 } } }).message)
  end)

  it("the full width does not", function()
    none("pcie-degraded", { gpu { health = { pcieWidthCurrent = 16, pcieWidthMax = 16 } } })
  end)

  it("a lower generation while idle does not (the GPU lowers it on purpose)", function()
    none("pcie-degraded", { gpu { health = { pcieGenCurrent = 1, pcieGenMax = 4 }, utilizationPct = 0 } })
  end)

  it("a lower generation at 1% util fires", function()
    assert.matches("^PCIe link degraded: gen3 of gen4 at 1%% util",
      one("pcie-degraded", { gpu { health = { pcieGenCurrent = 3, pcieGenMax = 4 }, utilizationPct = 1 } }).message)
  end)
end)
