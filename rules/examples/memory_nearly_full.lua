-- Example site rule: a GPU whose memory is nearly full. The next task that
-- lands on it, or the tenant's next allocation, fails with out-of-memory.
--
-- Install: copy to /etc/gpuledger/rules.d/memory_nearly_full.lua.
-- Threshold: memory_full_ratio (rules/thresholds.lua, 0.95; a site's
-- thresholds.lua may set its own), the share of memoryTotalMiB in use at
-- which it fires, and at which the page's memory bar turns red.
return {
  code = "memory-nearly-full",
  level = "WARN",
  doc = "a GPU's memory is nearly full (memory_full_ratio, default 0.95)",
  order = 45,
  evaluate = function(ledger, policy, emit)
    local ratio = policy.memory_full_ratio
    for _, gpu in ipairs(ledger.entries) do
      local total, used = gpu.memoryTotalMiB, gpu.memoryUsedMiB
      if total and total > 0 and used / total >= ratio then -- nil: a GPU nvidia-smi no longer lists
        emit {
          gpu = gpu,
          message = string.format("%d of %d MiB in use (%.0f%%, at or over %.0f%%)",
            used, total, 100 * used / total, 100 * ratio),
        }
      end
    end
  end,
}
