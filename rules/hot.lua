-- A GPU at its thermal limit, judged by the driver first: its slowdown flag,
-- then its margin to the card's own slowdown temperature; only when the
-- driver reports neither, a fixed --temp-max.
return {
  code = "hot",
  level = "WARN",
  doc = "a GPU is thermally slowing down, near its slowdown temperature, or past --temp-max",
  order = 50,
  rank = 70,
  ["for"] = "10m", -- a card that crosses its limit for a moment is not yet a problem
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      local message
      if gpu.temperatureC == nil then -- not measured: a GPU nvidia-smi no longer lists (gpu-lost says so)
        message = nil
      elseif gpu.thermalSlowdown == true then
        message = string.format("thermal slowdown active at %d °C, %.0f W — the card is clocking itself down",
          gpu.temperatureC, gpu.powerW)
      elseif gpu.thermalMarginC ~= nil then
        if gpu.thermalMarginC <= policy.thermal_margin_min then
          message = string.format("%d °C, %d °C from the card's own slowdown temperature, %.0f W",
            gpu.temperatureC, gpu.thermalMarginC, gpu.powerW)
        end
      elseif gpu.thermalSlowdown == nil and policy.temp_max > 0 and gpu.temperatureC >= policy.temp_max then
        message = string.format("%d °C (--temp-max %d; the driver reports no thermal margin), %.0f W",
          gpu.temperatureC, policy.temp_max, gpu.powerW)
      end
      if message then
        emit { gpu = gpu, message = message }
      end
    end
  end,
}
