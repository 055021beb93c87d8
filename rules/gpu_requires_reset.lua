-- The driver answers [GPU requires reset] for the GPU: it is in a fault
-- state and serves nothing until it is reset.
return {
  code = "gpu-requires-reset",
  level = "BAD",
  health = true,
  doc = "the driver reports [GPU requires reset]",
  order = 2,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.health and gpu.health.requiresReset then
        emit { gpu = gpu, message = "the driver reports [GPU requires reset] — stop its allocations, then reset the GPU (nvidia-smi -r) or reboot the node" .. gl.tenancy(gpu) }
      end
    end
  end,
}
