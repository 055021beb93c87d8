-- Many retired pages (pre-Ampere cards): the card is running out of spare
-- memory (threshold retired_pages_max).
return {
  code = "retired-pages-high",
  level = "WARN",
  health = true,
  doc = "retired pages (single- and double-bit) at or above retired_pages_max",
  order = 12,
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      local health = gpu.health
      local total = health and (health.retiredPagesSbe or 0) + (health.retiredPagesDbe or 0) or 0
      if total > 0 and total >= policy.retired_pages_max then
        emit { gpu = gpu, message = string.format("%d memory pages retired (%d single-bit, %d double-bit), at or above %d — plan the card's replacement",
          total, health.retiredPagesSbe or 0, health.retiredPagesDbe or 0, policy.retired_pages_max) .. gl.tenancy(gpu) }
      end
    end
  end,
}
