-- rules/held.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("held", function()
  it("every tenant a reserved Nomad task: OK held with the count and util", function()
    local f = one("held", { gpu { utilizationPct = 87, reservations = { H.reservation() },
      tenants = { H.nomad_tenant(), H.nomad_tenant { container = "b" } } } })
    assert.equal("OK", f.level)
    assert.equal("2 tenant(s), all reserved by Nomad, 87% util", f.message)
  end)

  it("a GPU with any other tenant is not held", function()
    none("held", { gpu { reservations = { H.reservation() }, tenants = { H.nomad_tenant(), H.host_tenant() } } })
  end)
end)
