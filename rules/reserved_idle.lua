-- Nomad reserved the GPU and nothing holds it: a card paid for and unused.
return {
  code = "reserved-idle",
  level = "WARN",
  doc = "Nomad reserved a GPU and no process or container holds it",
  order = 10,
  rank = 50,
  evaluate = function(ledger, _, emit)
    if ledger.processesRead == false then
      return -- without the process list, nothing is known to be idle
    end
    for _, gpu in ipairs(ledger.entries) do
      if #gpu.tenants == 0 and #gpu.reservations > 0 then
        local first = gpu.reservations[1]
        emit {
          gpu = gpu,
          reservation = first,
          message = string.format("reserved by %s (alloc %s) but no process or container holds it%s",
            gl.job_task(first), gl.alloc8(first.allocId), gl.since_suffix(ledger, gpu)),
        }
      end
    end
  end,
}
