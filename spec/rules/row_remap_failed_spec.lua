-- rules/row_remap_failed.lua, as embedded in the core: remapped_rows.failure.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("row-remap-failed", function()
  it("Yes fires", function()
    assert.matches("^row remapping failed — take the GPU out of service", one("row-remap-failed", { gpu { health = { remappedRowsFailure = true } } }).message)
  end)

  it("No does not, even with a remap pending", function()
    none("row-remap-failed", { gpu { health = { remappedRowsFailure = false, remappedRowsPending = true } } })
  end)
end)
