-- A container Nomad does not manage, or a process outside any container,
-- holding a GPU: Nomad may place a job on a card that is not free.
return {
  code = "unmanaged-tenant",
  level = function(policy)
    return policy.allow_unmanaged and "WARN" or "BAD"
  end,
  doc = "a container outside Nomad or a host process holds a GPU",
  order = 20,
  ["for"] = "15m", -- a container started by hand for a quick test is not yet an alert
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        if tenant.kind == "docker" then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format("container %s (%s) holds this GPU outside Nomad — %d MiB, pids %s",
              tenant.container or tenant.containerId or "", tenant.image or "unknown image",
              tenant.usedMemoryMiB, gl.list(tenant.pids)),
          }
        elseif tenant.kind == "host" and tenant.owner then -- whom to talk to: a service, a user, a process's uid
          local processes = tenant.owner == "process" and "" or ("processes " .. gl.list(tenant.processes) .. ", ")
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format("%s holds this GPU outside any container and Nomad — %s%d MiB, pids %s",
              gl.who(tenant), processes, tenant.usedMemoryMiB, gl.list(tenant.pids)),
          }
        elseif tenant.kind == "host" then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format("host process %s holds this GPU outside any container — %d MiB, pids %s",
              gl.list(tenant.processes), tenant.usedMemoryMiB, gl.list(tenant.pids)),
          }
        end
      end
    end
  end,
}
