-- A MIG mode change waits for a GPU reset: until then the layout Nomad
-- fingerprinted stays as it is.
return {
  code = "mig-mode-pending",
  level = "WARN",
  health = true,
  doc = "the MIG mode changes at the next GPU reset",
  order = 20,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local h = gpu.health
      if h and h.migMode ~= nil and h.migModePending ~= nil and h.migMode ~= h.migModePending then
        emit { gpu = gpu, message = string.format("MIG mode becomes %s at the next GPU reset — reset the GPU when it is idle",
          h.migModePending and "Enabled" or "Disabled") .. gl.tenancy(gpu) }
      end
    end
  end,
}
