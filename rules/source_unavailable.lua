-- A source gpuledger could not read, and a Nomad task whose allocation Nomad
-- did not return (the token cannot read-job its namespace): either way the
-- ledger cannot vouch for what it shows, so say so rather than guess.
return {
  code = "source-unavailable",
  level = "ERROR",
  doc = "a source could not be read, or Nomad hid a task's allocation from the token",
  order = 20,
  evaluate = function(ledger, _, emit)
    for _, err in ipairs(ledger.errors or {}) do
      emit { message = err }
    end
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        if tenant.verdict == "unnamed" then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format(
              "a Nomad task running %s (pids %s) holds this GPU, but its cgroup does not name its allocation (Nomad 1.3–1.6 on cgroup v1) — whether this GPU is reserved for it cannot be told",
              gl.list(tenant.processes), gl.list(tenant.pids)),
          }
        end
      end
    end
    if not ledger.nomadRead then
      return
    end
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        if tenant.kind == "nomad" and tenant.allocId and not tenant.reserved and not tenant.allocVisible then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format(
              "Nomad did not return allocation %s of %s%s: the token needs read-job on namespace %s — whether this GPU is reserved for it cannot be told",
              gl.alloc8(tenant.allocId), tenant.jobName and ("task " .. gl.job_task(tenant)) or gl.who(tenant),
              tenant.containerId and string.format(" (container %s)", tenant.container or "") or "",
              gl.quoted_namespace(tenant.namespace)),
          }
        end
      end
    end
  end,
}
