-- A container Nomad does not manage, or a process outside any container,
-- holding a GPU or a MIG slice: Nomad may place a job on a card that is not free. A tenant
-- that could not be identified (verdict "unidentified") is not one:
-- source-unavailable says so, since missing data proves nothing.

-- What the finding says of an unmanaged tenant: the container, or whom to
-- talk to (a service, a user, a process's uid), else the host processes.
local function message(tenant, noun)
  if tenant.kind == "docker" then
    return string.format("container %s (%s) holds this %s outside Nomad — %d MiB, pids %s",
      tenant.container or tenant.containerId or "", tenant.image or "unknown image", noun,
      tenant.usedMemoryMiB, gl.list(tenant.pids))
  elseif tenant.owner then
    local processes = tenant.owner == "process" and "" or ("processes " .. gl.list(tenant.processes) .. ", ")
    return string.format("%s holds this %s outside any container and Nomad — %s%d MiB, pids %s",
      gl.who(tenant), noun, processes, tenant.usedMemoryMiB, gl.list(tenant.pids))
  end
  return string.format("host process %s holds this %s outside any container — %d MiB, pids %s",
    gl.list(tenant.processes), noun, tenant.usedMemoryMiB, gl.list(tenant.pids))
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
    for _, unit in ipairs(gl.units(ledger)) do
      for _, tenant in ipairs(unit.tenants) do
        if tenant.verdict == "unmanaged" then
          emit { gpu = unit.gpu, mig = unit.mig, tenant = tenant, message = message(tenant, unit.noun) }
        end
      end
    end
  end,
}
