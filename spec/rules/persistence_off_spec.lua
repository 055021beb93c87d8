-- rules/persistence_off.lua, as embedded in the core: persistence mode off.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("persistence-off", function()
  it("Disabled fires", function()
    assert.matches("^persistence mode is off — run nvidia%-persistenced", one("persistence-off", { gpu { health = { persistenceMode = false } } }).message)
  end)

  it("Enabled, or not reported, does not", function()
    none("persistence-off", { gpu { health = { persistenceMode = true } } })
    none("persistence-off", { gpu { health = {} } })
  end)
end)
