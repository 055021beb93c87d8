-- rules/power_brake.lua, as embedded in the core: clocks_event_reasons.hw_power_brake_slowdown.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("power-brake", function()
  it("Active fires", function()
    assert.matches("^hardware power brake active", one("power-brake", { gpu { health = { powerBrake = true } } }).message)
  end)

  it("Not Active does not", function()
    none("power-brake", { gpu { health = { powerBrake = false } } })
  end)
end)
