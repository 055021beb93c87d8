-- Nomad reserved the GPU (or MIG slice) and nothing holds it: a card paid
-- for and unused.
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
    for _, unit in ipairs(gl.units(ledger)) do
      if #unit.tenants == 0 and #unit.reservations > 0 then
        local first = unit.reservations[1]
        emit {
          gpu = unit.gpu,
          mig = unit.mig,
          reservation = first,
          message = string.format("reserved by %s (alloc %s) but no process or container holds it%s",
            gl.job_task(first), gl.alloc8(first.allocId), unit.mig and "" or gl.since_suffix(ledger, unit.gpu)),
        }
      end
    end
  end,
}
