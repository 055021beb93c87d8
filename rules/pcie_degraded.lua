-- The PCIe link runs narrower than it can, or slower while the GPU is busy
-- (an idle GPU lowers its link generation on purpose).
return {
  code = "pcie-degraded",
  level = "WARN",
  health = true,
  doc = "PCIe link narrower than its maximum, or a lower generation while busy",
  order = 18,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local h = gpu.health or {}
      local said = {}
      if h.pcieWidthCurrent and h.pcieWidthMax and h.pcieWidthCurrent < h.pcieWidthMax then
        said[#said + 1] = string.format("x%d of x%d", h.pcieWidthCurrent, h.pcieWidthMax)
      end
      if h.pcieGenCurrent and h.pcieGenMax and h.pcieGenCurrent < h.pcieGenMax and (gpu.utilizationPct or 0) > 0 then
        said[#said + 1] = string.format("gen%d of gen%d at %d%% util", h.pcieGenCurrent, h.pcieGenMax, gpu.utilizationPct)
      end
      if #said > 0 then
        emit { gpu = gpu, message = string.format("PCIe link degraded: %s — reseat the card, check the riser or slot and the BIOS link settings", table.concat(said, ", ")) .. gl.tenancy(gpu) }
      end
    end
  end,
}
