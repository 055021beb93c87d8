-- rules/idle.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("idle", function()
  it("a GPU nobody holds or reserved is OK idle, with the free MiB", function()
    local f = one("idle", { gpu { model = "Tesla T4", memoryUsedMiB = 0, memoryTotalMiB = 15360 } })
    assert.equal("OK", f.level)
    assert.equal("Tesla T4 idle: no tenant, no reservation, 15360 MiB free", f.message)
  end)

  it("is not claimed when nvidia-smi's process list could not be read", function()
    none("idle", { gpu {} }, nil, nil, { processesRead = false })
  end)

  it("is not claimed when Nomad failed (a reservation may exist)", function()
    none("idle", { gpu {} }, nil, nil, { sources = { nomad = "failed" } })
  end)

  it("says for how long when the state's start is known", function()
    local f = one("idle", { gpu { memoryTotalMiB = 100, memoryUsedMiB = 1, stateSince = H.ago(45 * 60) } })
    assert.equal("NVIDIA L4 idle: no tenant, no reservation, 99 MiB free, for 45m", f.message)
  end)

  it("--no-idle suppresses it", function()
    none("idle", { gpu {} }, { idle = false })
  end)

  it("a reserved or held GPU is not idle", function()
    none("idle", { gpu { reservations = { H.reservation() } } })
    none("idle", { gpu { tenants = { H.host_tenant() } } })
  end)
  it("a GPU nvidia-smi no longer lists is not idle", function()
    none("idle", { gpu { index = -1, missing = true } })
  end)
end)
