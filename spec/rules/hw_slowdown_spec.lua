-- rules/hw_slowdown.lua, as embedded in the core: clocks_event_reasons.hw_slowdown.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("hw-slowdown", function()
  it("Active fires", function()
    assert.matches("^hardware slowdown active", one("hw-slowdown", { gpu { health = { hwSlowdown = true } } }).message)
  end)

  it("Not Active does not, nor the software power cap", function()
    none("hw-slowdown", { gpu { health = { hwSlowdown = false, swPowerCap = true } } })
  end)
end)
