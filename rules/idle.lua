-- Nobody holds the GPU (or MIG slice) and nobody reserved it: free capacity (OK).
return {
  code = "idle",
  level = "OK",
  doc = "nobody holds or reserved a GPU (off with --no-idle)",
  order = 10,
  rank = 80,
  evaluate = function(ledger, policy, emit)
    if not policy.idle or ledger.processesRead == false or (ledger.sources and ledger.sources.nomad == "failed") then
      return -- a GPU is not called idle for want of an answer
    end
    for _, unit in ipairs(gl.units(ledger)) do
      local gpu = unit.gpu
      if #unit.tenants == 0 and #unit.reservations == 0 and not gpu.missing then -- a lost GPU is not free capacity
        emit {
          gpu = gpu,
          mig = unit.mig,
          message = string.format("%s idle: no tenant, no reservation, %d MiB free%s",
            unit.mig and ("MIG " .. unit.mig.profile) or gpu.model, unit.memoryTotalMiB - unit.memoryUsedMiB,
            unit.mig and "" or gl.since_suffix(ledger, gpu)),
        }
      end
    end
  end,
}
