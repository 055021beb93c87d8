-- Pre-Ampere cards retire bad memory pages at the next reboot; until then
-- the pages can still be handed out.
return {
  code = "retired-pages-pending",
  level = "BAD",
  health = true,
  doc = "retired_pages.pending is Yes: pages are retired only at the next reboot",
  order = 7,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local health = gpu.health
      if health and health.retiredPagesPending == true then
        emit { gpu = gpu, message = string.format("memory pages pending retirement (%d single-bit, %d double-bit pages retired so far) — drain the node and reboot it to retire them",
          health.retiredPagesSbe or 0, health.retiredPagesDbe or 0) .. gl.tenancy(gpu) }
      end
    end
  end,
}
