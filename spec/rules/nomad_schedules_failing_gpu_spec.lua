-- rules/nomad_schedules_failing_gpu.lua, as embedded in the core: Nomad calling healthy a GPU the driver says is failing.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local xid = H.xid

describe("nomad-schedules-failing-gpu", function()
  local healthy = { healthy = true, healthDescription = "" }

  it("Nomad healthy and a pending remap and a fatal Xid fires, naming both", function()
    assert.matches("^Nomad fingerprints this GPU as healthy while its row remapping is pending, a fatal Xid was logged this boot —",
      one("nomad-schedules-failing-gpu", { gpu { nomadDevice = healthy, health = { remappedRowsPending = true }, xids = { xid(79, "reboot") } } }).message)
  end)

  it("a GPU gone from nvidia-smi that Nomad still lists fires", function()
    one("nomad-schedules-failing-gpu", { gpu { nomadDevice = healthy, index = -1, missing = true } })
  end)

  it("Nomad already calling it unhealthy does not", function()
    none("nomad-schedules-failing-gpu", { gpu { nomadDevice = { healthy = false, healthDescription = "x" }, health = { remappedRowsPending = true } } })
  end)

  it("Nomad's view not read does not", function()
    none("nomad-schedules-failing-gpu", { gpu { health = { remappedRowsPending = true } } })
  end)

  it("WARN health alone is not failing", function()
    none("nomad-schedules-failing-gpu", { gpu { nomadDevice = healthy, health = { persistenceMode = false, remappedRowsUncorrectable = 1 } } })
  end)
end)
