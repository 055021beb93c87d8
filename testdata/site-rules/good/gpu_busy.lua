-- A new code: a GPU busier than the site's busy_pct.
return {
  code = "gpu-busy",
  level = "WARN",
  doc = "site: a GPU at or over busy_pct utilisation",
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.utilizationPct and gpu.utilizationPct >= policy.busy_pct then -- nil: not reported (MIG)
        emit { gpu = gpu, message = string.format("busy: %d%% util (busy_pct %d)", gpu.utilizationPct, policy.busy_pct) }
      end
    end
  end,
}
