-- A card that supports ECC runs without it: memory errors go unnoticed.
return {
  code = "ecc-disabled",
  level = "WARN",
  health = true,
  doc = "ECC is supported but disabled",
  order = 13,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local health = gpu.health
      if health and health.eccMode == false then
        local pending = health.eccModePending == true and " (it is enabled from the next reset on)" or ""
        emit { gpu = gpu, message = "ECC is disabled" .. pending .. " — enable it (nvidia-smi -e 1), then reset the GPU or reboot the node" .. gl.tenancy(gpu) }
      end
    end
  end,
}
