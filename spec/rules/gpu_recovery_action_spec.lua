-- rules/gpu_recovery_action.lua, as embedded in the core: the driver's gpu_recovery_action.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("gpu-recovery-action", function()
  it("anything but None fires, quoting it", function()
    assert.matches("^the driver asks for recovery: Node Reboot", one("gpu-recovery-action", { gpu { health = { recoveryAction = "Node Reboot" } } }).message)
  end)

  it("None, or not reported, does not", function()
    none("gpu-recovery-action", { gpu { health = { recoveryAction = "None" } } })
    none("gpu-recovery-action", { gpu { health = {} } })
  end)
end)
