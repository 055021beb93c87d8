-- Rows are waiting to be remapped: the repair takes effect only at the
-- next GPU reset, and until then the bad rows are still in use.
return {
  code = "row-remap-pending",
  level = "BAD",
  health = true,
  doc = "remapped_rows.pending is Yes: a GPU reset is needed to finish a memory repair",
  order = 6,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local health = gpu.health
      if health and health.remappedRowsPending == true then
        emit { gpu = gpu, message = string.format("pending row remapping (%d rows remapped for uncorrectable errors, %d for correctable) — drain the GPU, then reset it (nvidia-smi -r) or reboot the node",
          health.remappedRowsUncorrectable or 0, health.remappedRowsCorrectable or 0) .. gl.tenancy(gpu) }
      end
    end
  end,
}
