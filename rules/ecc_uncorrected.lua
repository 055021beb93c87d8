-- Uncorrected ECC errors since the driver loaded: data on this GPU was
-- corrupted (threshold ecc_uncorrected_max, default 0).
return {
  code = "ecc-uncorrected",
  level = "BAD",
  health = true,
  doc = "uncorrected (volatile) ECC errors since the driver loaded, above ecc_uncorrected_max",
  order = 8,
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      local count = gpu.health and gpu.health.eccUncorrectedVolatile
      if count and count > policy.ecc_uncorrected_max then
        emit { gpu = gpu, message = string.format("%d uncorrected ECC error(s) since the driver loaded — drain the GPU and reset it; check for a pending row remap and Xid 48, 94 or 95", count) .. gl.tenancy(gpu) }
      end
    end
  end,
}
