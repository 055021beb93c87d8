-- Example site rule: a GPU whose memory is nearly full. The next task that
-- lands on it, or the tenant's next allocation, fails with out-of-memory.
--
-- Install: copy to /etc/gpuledger/rules.d/memory_nearly_full.lua.
-- Threshold: memory_full_ratio in the site's thresholds.lua, the share of
-- memoryTotalMiB in use at which it fires (default 0.95).
return {
  code = "memory-nearly-full",
  level = "WARN",
  doc = "a GPU's memory is nearly full (memory_full_ratio, default 0.95)",
  order = 45,
  evaluate = function(ledger, policy, emit)
    local ratio = policy.memory_full_ratio or 0.95
    for _, gpu in ipairs(ledger.entries) do
      local total, used = gpu.memoryTotalMiB, gpu.memoryUsedMiB
      if total > 0 and used / total >= ratio then
        emit {
          gpu = gpu,
          message = string.format("%d of %d MiB in use (%.0f%%, at or over %.0f%%)",
            used, total, 100 * used / total, 100 * ratio),
        }
      end
    end
  end,
}
