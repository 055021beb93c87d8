-- The hardware cut the GPU's clocks by half or more (thermal or power):
-- jobs run slowly, and a card that stays there is failing its cooling or
-- its power.
return {
  code = "hw-slowdown",
  level = "WARN",
  health = true,
  doc = "hardware slowdown active (clocks_event_reasons.hw_slowdown)",
  order = 16,
  ["for"] = "10m", -- a moment's slowdown is not yet a problem
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.health and gpu.health.hwSlowdown == true then
        emit { gpu = gpu, message = "hardware slowdown active (clocks cut by half or more) — check the cooling and airflow, and the power feed" .. gl.tenancy(gpu) }
      end
    end
  end,
}
