-- A Nomad task on a GPU that Nomad did not allocate to it: it escaped its
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
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        if tenant.kind == "nomad" and not tenant.reserved and tenant.allocVisible then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format(
              "Nomad task %s (alloc %s%s) uses this GPU but was not allocated it — check NVIDIA_VISIBLE_DEVICES and the job's device stanza",
              gl.job_task(tenant), gl.alloc8(tenant.allocId), gl.container_words(tenant)),
          }
        end
      end
    end
  end,
}
