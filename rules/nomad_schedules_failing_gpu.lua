-- Nomad's NVIDIA plugin reports every device healthy (it never asks the
-- driver), so Nomad keeps placing jobs on a card the driver says is
-- failing: the lever is the operator's.

local FATAL = { reset = true, reboot = true } -- the catalogue's classes of these Xids

-- Adds reason to the list why when yes.
local function add(why, yes, reason)
  if yes then
    why[#why + 1] = reason
  end
end

local function failing(gpu, policy)
  local health, why = gpu.health or {}, {}
  add(why, gpu.missing or health.lost, "the driver has lost it")
  add(why, health.requiresReset, "it requires a reset")
  add(why, health.recoveryAction and health.recoveryAction ~= "None", "the driver asks for recovery")
  add(why, health.remappedRowsFailure == true, "its row remapping failed")
  add(why, health.remappedRowsPending == true, "its row remapping is pending")
  add(why, health.retiredPagesPending == true, "pages are pending retirement")
  add(why, (health.eccUncorrectedVolatile or 0) > policy.ecc_uncorrected_max, "it has uncorrected ECC errors")
  add(why, #gl.xids_of_class(gpu, FATAL) > 0, "a fatal Xid was logged this boot")
  return why
end

return {
  code = "nomad-schedules-failing-gpu",
  level = "BAD",
  health = true,
  doc = "Nomad fingerprints a GPU as healthy that the driver says is failing",
  order = 9,
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      local why = gpu.nomadDevice and gpu.nomadDevice.healthy and failing(gpu, policy) or {}
      if #why > 0 then
        emit { gpu = gpu, message = string.format("Nomad fingerprints this GPU as healthy while %s — Nomad keeps placing jobs on it: drain the node, or list the GPU in the nvidia plugin's ignored_gpu_ids",
          table.concat(why, ", ")) .. gl.tenancy(gpu) }
      end
    end
  end,
}
