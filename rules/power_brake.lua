-- An external power-brake signal (from the PSU or the chassis) slows the
-- GPU down.
return {
  code = "power-brake",
  level = "WARN",
  health = true,
  doc = "hardware power brake active (clocks_event_reasons.hw_power_brake_slowdown)",
  order = 17,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.health and gpu.health.powerBrake == true then
        emit { gpu = gpu, message = "hardware power brake active (an external power-brake signal) — check the power supply and the power feed" .. gl.tenancy(gpu) }
      end
    end
  end,
}
