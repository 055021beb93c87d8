local H = require "helper"
local units = require "gpuledger.units"

describe("gpuledger.units", function()
  it("gives a new list at each call, the same one only while the ledger is shared", function()
    local ledger = H.ledger { H.gpu { index = 0 }, H.gpu { index = 1 } }
    local first = units.of(ledger)
    assert.equal(2, #first)
    assert.are_not.equal(first, units.of(ledger))
    units.share(ledger, true)
    local shared = units.of(ledger)
    assert.are.same(first, shared)
    assert.equal(shared, units.of(ledger))
    units.share(ledger, false)
    assert.are_not.equal(shared, units.of(ledger))
  end)

end)
