-- A container Nomad does not manage, or a process outside any container,
-- holding a GPU: Nomad may place a job on a card that is not free. A tenant
-- that could not be identified (verdict "unidentified") is not one:
-- source-unavailable says so, since missing data proves nothing.

-- What the finding says of an unmanaged tenant: the container, or whom to
-- talk to (a service, a user, a process's uid), else the host processes.
local function message(tenant)
  if tenant.kind == "docker" then
    return string.format("container %s (%s) holds this GPU outside Nomad — %d MiB, pids %s",
      tenant.container or tenant.containerId or "", tenant.image or "unknown image",
      tenant.usedMemoryMiB, gl.list(tenant.pids))
  elseif tenant.owner then
    local processes = tenant.owner == "process" and "" or ("processes " .. gl.list(tenant.processes) .. ", ")
    return string.format("%s holds this GPU outside any container and Nomad — %s%d MiB, pids %s",
      gl.who(tenant), processes, tenant.usedMemoryMiB, gl.list(tenant.pids))
  end
  return string.format("host process %s holds this GPU outside any container — %d MiB, pids %s",
    gl.list(tenant.processes), tenant.usedMemoryMiB, gl.list(tenant.pids))
end

return {
  code = "unmanaged-tenant",
  level = function(policy)
    return policy.allow_unmanaged and "WARN" or "BAD"
  end,
  doc = "a container outside Nomad or a host process holds a GPU (not one that could not be identified)",
  order = 20,
  rank = 30,
  ["for"] = "15m", -- a container started by hand for a quick test is not yet an alert
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        if tenant.verdict == "unmanaged" then
          emit { gpu = gpu, tenant = tenant, message = message(tenant) }
        end
      end
    end
  end,
}
