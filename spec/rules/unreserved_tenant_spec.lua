-- rules/unreserved_tenant.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu, ledger = H.gpu, H.ledger
local one, none, contains = H.rule_one, H.rule_none, H.contains

describe("unreserved-tenant and source-unavailable (Nomad verdicts)", function()
  local function worker(fields)
    return H.nomad_tenant(H.merge({
      container = "worker-4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e", reserved = false,
      jobName = "worker", taskName = "w", namespace = "video",
    }, fields))
  end

  it("a visible allocation that did not reserve the GPU is BAD unreserved-tenant", function()
    local f = one("unreserved-tenant", { gpu { tenants = { worker { allocVisible = true } } } })
    assert.equal("BAD", f.level)
    assert.equal("Nomad task worker/w (alloc 4d1e6a9b, container worker-4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e) uses this GPU but was "
      .. "not allocated it — check NVIDIA_VISIBLE_DEVICES and the job's device stanza", f.message)
    none("source-unavailable", { gpu { tenants = { worker { allocVisible = true } } } })
  end)

  it("a hidden allocation is exactly one ERROR source-unavailable naming read-job, \"video\" and the alloc prefix", function()
    local found = H.run_rules(ledger { gpu { tenants = { worker { allocVisible = false } } } })
    local f = H.with_code(found, "source-unavailable")
    assert.equal(1, #f)
    f = f[1]
    assert.equal("ERROR", f.level)
    assert.equal("gpu0 GPU-fef8089b", f.gpu)
    contains("read-job", f.message)
    contains('namespace "video"', f.message)
    contains("allocation 4d1e6a9b of worker/w (container worker-4d1e6a9b", f.message)
    contains("cannot be told", f.message)
    assert.same({}, H.with_code(found, "unreserved-tenant"))
  end)

  it("a hidden allocation of a Nomad asked without a token says which variable is not set", function()
    local f = one("source-unavailable",
      { gpu { tenants = { worker { allocVisible = false } } } }, nil, nil, { nomadTokenUnset = "MY_TOKEN" })
    contains('it was asked without a token (MY_TOKEN is not set); one needs read-job on namespace "video"', f.message)
    f = one("source-unavailable", { gpu { tenants = { worker { allocVisible = false } } } })
    contains('the token needs read-job on namespace "video"', f.message)
  end)

  it("an empty namespace reads as 'its namespace'", function()
    local f = one("source-unavailable", { gpu { tenants = { worker { allocVisible = false, namespace = false } } } })
    contains("read-job on namespace its namespace", f.message)
  end)

  it("without Nomad's answer (nomadRead false) there is no reservation verdict at all", function()
    local found = H.run_rules(ledger({ gpu { tenants = { worker { allocVisible = false } } } }, { nomadRead = false }))
    assert.same({}, found)
    found = H.run_rules(ledger({ gpu { tenants = { worker { allocVisible = true } } } }, { nomadRead = false }))
    assert.same({}, found)
  end)

  it("a reserved task gets neither", function()
    none("unreserved-tenant", { gpu { reservations = { H.reservation() }, tenants = { worker { reserved = true } } } })
    none("source-unavailable", { gpu { reservations = { H.reservation() }, tenants = { worker { reserved = true, allocVisible = false } } } })
  end)
end)
