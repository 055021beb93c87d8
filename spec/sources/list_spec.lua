-- The one list of sources: every source a snapshot may have, once, with its
-- shape; the ledger's source states, `ls` and the metrics follow it.
local H = require "helper"
local ledger_mod = require "gpuledger.ledger"
local snapshot = require "gpuledger.snapshot"
local source_list = require "gpuledger.sources.list"

describe("gpuledger.sources.list", function()
  it("names each source once, each with a shape that wants ok", function()
    local seen = {}
    for i, source in ipairs(source_list.SOURCES) do
      assert.is_nil(seen[source.name], source.name)
      seen[source.name] = true
      assert.equal(source.name, source_list.NAMES[i])
      assert.equal(source.shape, source_list.SHAPES[source.name])
      assert.is_not_nil(source.shape.ok, source.name)
    end
  end)

  it("holds every source of the demo snapshot", function()
    for name in pairs(snapshot.demo(H.core).sources) do
      assert.is_not_nil(source_list.SHAPES[name], name)
    end
  end)

  it("is what the ledger says the state of", function()
    local ledger = ledger_mod.build(snapshot.demo(H.core))
    local names = {}
    for name in pairs(ledger.sources) do
      names[#names + 1] = name
    end
    table.sort(names)
    local want = { table.unpack(source_list.NAMES) }
    table.sort(want)
    assert.same(want, names)
  end)
end)
