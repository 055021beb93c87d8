-- A Nomad task on a GPU (or MIG slice) that Nomad did not allocate to it: it escaped its
-- reservation (NVIDIA_VISIBLE_DEVICES or the device stanza is wrong).
return {
  code = "unreserved-tenant",
  level = "BAD",
  doc = "a Nomad task uses a GPU that Nomad did not allocate to it",
  order = 20,
  rank = 20,
  evaluate = function(ledger, _, emit)
    if not ledger.nomadRead then
      return -- without Nomad's answer no task is judged on reservations
    end
    for _, unit in ipairs(gl.units(ledger)) do
      for _, tenant in ipairs(unit.tenants) do
        if tenant.verdict == "unreserved" then
          emit {
            gpu = unit.gpu,
            mig = unit.mig,
            tenant = tenant,
            message = string.format(
              "Nomad task %s (alloc %s%s) uses this %s but was not allocated it — check NVIDIA_VISIBLE_DEVICES and the job's device stanza",
              gl.job_task(tenant), gl.alloc8(tenant.allocId), gl.container_words(tenant), unit.noun),
          }
        end
      end
    end
  end,
}
