-- Replaces the default hot rule (same file name): BAD, and judged by the
-- site's temp_max alone.
return {
  code = "hot",
  level = "BAD",
  doc = "site: a GPU at or over temp_max",
  order = 50,
  ["for"] = "10m",
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.temperatureC and gpu.temperatureC >= policy.temp_max then -- nil: a lost GPU, not measured
        emit { gpu = gpu, message = string.format("site hot: %d °C, at or over %d °C", gpu.temperatureC, policy.temp_max) }
      end
    end
  end,
}
