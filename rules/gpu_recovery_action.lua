-- The driver's own verdict (gpu_recovery_action, R550 and later): anything
-- but None is an action it asks for.
return {
  code = "gpu-recovery-action",
  level = "BAD",
  health = true,
  doc = "the driver asks for a recovery action (gpu_recovery_action is not None)",
  order = 3,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local action = gpu.health and gpu.health.recoveryAction
      if action and action ~= "None" then
        emit { gpu = gpu, message = string.format("the driver asks for recovery: %s — do what it asks (a GPU reset: nvidia-smi -r once the GPU is idle; a node reboot: drain the node and reboot it)", action) .. gl.tenancy(gpu) }
      end
    end
  end,
}
