-- Nomad lists a MIG slice on this GPU that the driver does not: the MIG
-- layout changed under Nomad, which still offers the old slice, and a job
-- placed on it cannot start.
return {
  code = "mig-slice-not-in-driver",
  level = "BAD",
  doc = "Nomad lists a MIG slice the driver does not have (the MIG layout changed under Nomad)",
  order = 40,
  evaluate = function(ledger, _, emit)
    if not (ledger.sources and ledger.sources.mig == "read") then
      return -- without the driver's slices (-L or -q failed) nothing is known to be missing from them
    end
    for _, gpu in ipairs(ledger.entries) do
      for _, slice in ipairs(gpu.nomadSlicesUnknown or {}) do
        emit {
          gpu = gpu,
          message = string.format(
            "Nomad lists MIG slice %s (%s) on this GPU, which the driver does not have — the MIG layout changed under Nomad: restart the Nomad client so its NVIDIA plugin fingerprints the slices again",
            slice.uuid, slice.name or "?"),
        }
      end
    end
  end,
}
