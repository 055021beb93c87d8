-- Persistence mode off: the driver tears the GPU's state down whenever no
-- process holds it, so every job pays the start-up again (GPUd calls it
-- unhealthy).
return {
  code = "persistence-off",
  level = "WARN",
  health = true,
  doc = "persistence mode is disabled",
  order = 19,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.health and gpu.health.persistenceMode == false then
        emit { gpu = gpu, message = "persistence mode is off — run nvidia-persistenced" .. gl.tenancy(gpu) }
      end
    end
  end,
}
