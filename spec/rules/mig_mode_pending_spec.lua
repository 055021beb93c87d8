-- rules/mig_mode_pending.lua, as embedded in the core: a MIG mode waiting for a GPU reset.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("mig-mode-pending", function()
  it("pending differs from current: fires, saying what it becomes", function()
    assert.matches("^MIG mode becomes Enabled at the next GPU reset", one("mig-mode-pending", { gpu { health = { migMode = false, migModePending = true } } }).message)
  end)

  it("the same, or half reported, does not", function()
    none("mig-mode-pending", { gpu { health = { migMode = true, migModePending = true } } })
    none("mig-mode-pending", { gpu { health = { migMode = false } } })
  end)
end)
