-- Rows remapped after uncorrectable errors, with nothing pending or failed:
-- the memory repaired itself, but the card is wearing.
return {
  code = "row-remap-uncorrectable",
  level = "WARN",
  health = true,
  doc = "rows were remapped for uncorrectable errors (none pending, none failed)",
  order = 11,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local health = gpu.health
      if health and (health.remappedRowsUncorrectable or 0) > 0 and health.remappedRowsPending ~= true
        and health.remappedRowsFailure ~= true then
        emit { gpu = gpu, message = string.format("%d rows remapped for uncorrectable errors — watch the count and plan a diagnostic", health.remappedRowsUncorrectable) .. gl.tenancy(gpu) }
      end
    end
  end,
}
