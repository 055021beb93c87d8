-- The driver has a MIG slice that Nomad's device list does not, while Nomad
-- lists other slices of the GPU: Nomad cannot place a job on it (the layout
-- changed after Nomad fingerprinted).
return {
  code = "mig-slice-not-in-nomad",
  level = "WARN",
  doc = "the driver has a MIG slice that Nomad does not list (Nomad cannot schedule it)",
  order = 40,
  evaluate = function(ledger, _, emit)
    if not (ledger.sources and ledger.sources.nomad_devices == "read") then
      return -- without Nomad's device list nothing is known to be missing from it
    end
    for _, gpu in ipairs(ledger.entries) do
      local listed = #(gpu.nomadSlicesUnknown or {}) -- the slices Nomad lists on this GPU
      for _, slice in ipairs(gpu.migDevices or {}) do
        listed = listed + (slice.nomadDevice and 1 or 0)
      end
      for _, slice in ipairs(listed > 0 and gpu.migDevices or {}) do -- none listed: no plugin schedules it
        if not slice.nomadDevice then
          emit {
            gpu = gpu,
            mig = slice,
            message = "Nomad does not list this MIG slice, so it cannot place a job on it — restart the Nomad client so its NVIDIA plugin fingerprints the slices again",
          }
        end
      end
    end
  end,
}
