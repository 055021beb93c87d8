-- rules/row_remap_pending.lua, as embedded in the core: remapped_rows.pending.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"

describe("row-remap-pending", function()
  it("Yes fires, with the rows remapped so far and the tenancy", function()
    assert.equal("pending row remapping (2 rows remapped for uncorrectable errors, 0 for correctable) — drain the GPU, then reset it (nvidia-smi -r) or reboot the node" .. FREE,
      one("row-remap-pending", { gpu { health = { remappedRowsPending = true, remappedRowsUncorrectable = 2, remappedRowsCorrectable = 0 } } }).message)
  end)

  it("No does not, whatever the counts", function()
    none("row-remap-pending", { gpu { health = { remappedRowsPending = false, remappedRowsUncorrectable = 3 } } })
  end)

  it("not reported ([N/A], MIG) does not", function()
    none("row-remap-pending", { gpu { health = {} } })
  end)
end)
