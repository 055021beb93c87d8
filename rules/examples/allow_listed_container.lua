-- Example site rule: the default unmanaged-tenant rule, except that the
-- containers named in allowed_containers (a list in the site's
-- thresholds.lua, e.g. { "dcgm-exporter" }) are not reported: a monitoring
-- agent the site runs outside Nomad on purpose.
--
-- Install: copy to /etc/gpuledger/rules.d/unmanaged_tenant.lua -- the name
-- of the default it replaces. (Under its own name it would define
-- unmanaged-tenant a second time, which is a rule-error.)
local function allowed(policy, name)
  for _, allowed_name in ipairs(policy.allowed_containers or {}) do
    if name == allowed_name then
      return true
    end
  end
  return false
end

return {
  code = "unmanaged-tenant",
  level = function(policy)
    return policy.allow_unmanaged and "WARN" or "BAD"
  end,
  doc = "a container outside Nomad (not in allowed_containers) or a host process holds a GPU",
  order = 20,
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, tenant in ipairs(gpu.tenants) do
        -- the verdict, not the kind: a container no engine could identify is
        -- "unidentified" (source-unavailable reports it), not unmanaged
        local unmanaged = tenant.verdict == "unmanaged"
        if unmanaged and tenant.kind == "docker" and not allowed(policy, tenant.container) then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format("container %s (%s) holds this GPU outside Nomad — %d MiB, pids %s",
              tenant.container or tenant.containerId or "", tenant.image or "unknown image",
              tenant.usedMemoryMiB, gl.list(tenant.pids)),
          }
        elseif unmanaged and tenant.kind == "host" then
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
