-- rules/reserved_idle.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none, contains = H.rule_one, H.rule_none, H.contains

describe("reserved-idle", function()
  it("is not claimed when nvidia-smi's process list could not be read", function()
    none("reserved-idle", { gpu { reservations = { H.reservation {} } } }, nil, nil, { processesRead = false })
  end)

  it("names the FIRST reservation, alloc cut to 8 characters", function()
    local f = one("reserved-idle", { gpu { reservations = {
      H.reservation { jobId = "worker", task = "w", allocId = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e" },
      H.reservation { jobId = "other", task = "o", allocId = "ffffffff-0000-0000-0000-000000000000" },
    } } })
    assert.equal("WARN", f.level)
    assert.equal("reserved by worker/w (alloc 4d1e6a9b) but no process or container holds it", f.message)
  end)

  it("says for 6h12m", function()
    local f = one("reserved-idle", { gpu { reservations = { H.reservation() }, stateSince = H.ago(6 * 3600 + 12 * 60 + 30) } })
    contains("holds it, for 6h12m", f.message)
  end)

  it("says for 2d2h", function()
    local f = one("reserved-idle", { gpu { reservations = { H.reservation() }, stateSince = H.ago(50 * 3600 + 30 * 60) } })
    contains(", for 2d2h", f.message)
  end)

  it("says nothing of time without stateSince", function()
    local f = one("reserved-idle", { gpu { reservations = { H.reservation() } } })
    assert.is_nil(f.message:find("for ", 1, true))
  end)

  it("a GPU with a tenant is not reserved-idle", function()
    none("reserved-idle", { gpu { reservations = { H.reservation() }, tenants = { H.nomad_tenant() } } })
  end)
end)
