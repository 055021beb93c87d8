-- rules/row_remap_uncorrectable.lua, as embedded in the core: rows remapped for uncorrectable errors.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"

describe("row-remap-uncorrectable", function()
  it("one row fires", function()
    assert.equal("1 rows remapped for uncorrectable errors — watch the count and plan a diagnostic" .. FREE,
      one("row-remap-uncorrectable", { gpu { health = { remappedRowsUncorrectable = 1 } } }).message)
  end)

  it("none does not", function()
    none("row-remap-uncorrectable", { gpu { health = { remappedRowsUncorrectable = 0 } } })
  end)

  it("a pending remap or a failure says more, elsewhere", function()
    none("row-remap-uncorrectable", { gpu { health = { remappedRowsUncorrectable = 1, remappedRowsPending = true } } })
    none("row-remap-uncorrectable", { gpu { health = { remappedRowsUncorrectable = 1, remappedRowsFailure = true } } })
  end)
end)
