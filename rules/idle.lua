-- Nobody holds the GPU and nobody reserved it: free capacity (OK).
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
    for _, gpu in ipairs(ledger.entries) do
      if #gpu.tenants == 0 and #gpu.reservations == 0 and not gpu.missing then -- a lost GPU is not free capacity
        emit {
          gpu = gpu,
          message = string.format("%s idle: no tenant, no reservation, %d MiB free%s",
            gpu.model, gpu.memoryTotalMiB - gpu.memoryUsedMiB, gl.since_suffix(ledger, gpu)),
        }
      end
    end
  end,
}
