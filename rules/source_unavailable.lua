-- A source gpuledger could not read, a tenant that could not be identified
-- (a container no engine could tell about, processes /proc could not
-- place, processes of a GPU in MIG mode the driver placed on no slice), and a Nomad task whose allocation Nomad did not return (the token
-- cannot read-job its namespace): either way the ledger cannot vouch for
-- what it shows, so say so rather than guess.

-- The first of the ledger's source errors (ledger.sourceErrors, each with
-- its source, the container or GPU it concerns and its message) that
-- matches(err), else nil.
local function source_error(ledger, matches)
  for _, err in ipairs(ledger.sourceErrors or {}) do
    if matches(err) then
      return err
    end
  end
end

-- The message of source `name` ("docker", "podman", "proc") when it
-- failed (its first error), else nil.
local function failure(ledger, name)
  if not (ledger.sources and ledger.sources[name] == "failed") then
    return nil
  end
  local err = source_error(ledger, function(e) return e.source == name end)
  return err and err.message or (name .. " failed")
end

-- Why no engine could identify a container: the ledger's error that names
-- its id (its inspect failed or was unreadable); a runtime gpuledger does
-- not ask (containerd), or Podman's when Podman was not asked; else each
-- engine's failure and which engines were read and do not know it.
local function container_cause(ledger, tenant)
  local err = source_error(ledger, function(e) return e.containerId == tenant.containerId end)
  if err then
    return err.message
  end
  local sources = ledger.sources or {}
  if tenant.runtime == "containerd" then
    return "its cgroup names containerd, and gpuledger asks only Docker and Podman"
  elseif tenant.runtime == "libpod" and (sources.podman or "off") == "off" then
    return "its cgroup names Podman, which was not asked (--podman)"
  end
  local causes, unknowing = {}, {}
  for _, engine in ipairs { "docker", "podman" } do
    local failed = failure(ledger, engine)
    if failed then
      causes[#causes + 1] = failed
    elseif ledger.sources and ledger.sources[engine] == "read" then
      unknowing[#unknowing + 1] = engine
    end
  end
  if #unknowing > 0 or #causes == 0 then
    causes[#causes + 1] = "not known to " .. (#unknowing > 0 and table.concat(unknowing, " or ") or "any engine")
  end
  return table.concat(causes, "; ")
end

-- Why the driver placed processes of a GPU in MIG mode on no slice: the
-- MIG source's error where -L or -q could not be read, else that -q
-- names no slice for them.
local function unplaced_cause(ledger)
  local err = ledger.sources and ledger.sources.mig == "failed" and source_error(ledger, function(e) return e.source == "mig" end)
  if err then
    return err.message
  end
  return "nvidia-smi -q places them on no GPU and compute instance it lists"
end

-- What the finding says of a tenant that could not be identified.
local function unidentified_message(ledger, tenant)
  if tenant.containerId then
    return string.format(
      "container %s holds this GPU (pids %s, %d MiB), but no engine could identify it (%s) — whether Nomad manages it cannot be told",
      tenant.containerId, gl.list(tenant.pids), tenant.usedMemoryMiB, container_cause(ledger, tenant))
  end
  return string.format(
    "processes %s (pids %s, %d MiB) hold this GPU, but /proc could not tell whose they are (%s) — whether Nomad manages them cannot be told",
    gl.list(tenant.processes), gl.list(tenant.pids), tenant.usedMemoryMiB,
    failure(ledger, "proc")
      or "no record of these pids: gone, their cgroup unreadable, or gpuledger not in the host's PID namespace")
end

return {
  code = "source-unavailable",
  level = "ERROR",
  doc = "a source could not be read, a GPU's tenant could not be identified, or Nomad hid a task's allocation from the token",
  order = 20,
  rank = 10,
  evaluate = function(ledger, _, emit)
    for _, err in ipairs(ledger.errors or {}) do
      emit { message = err }
    end
    for _, unit in ipairs(gl.units(ledger)) do
      local gpu = unit.gpu
      for _, tenant in ipairs(unit.tenants) do
        if tenant.verdict == "unplaced" then
          emit {
            gpu = gpu,
            tenant = tenant,
            message = string.format(
              "processes %s (pids %s, %d MiB) use this GPU in MIG mode, but the driver places them on no MIG slice (%s) — which slice they hold, and whether it is reserved for them, cannot be told",
              gl.list(tenant.processes), gl.list(tenant.pids), tenant.usedMemoryMiB, unplaced_cause(ledger)),
          }
        elseif tenant.verdict == "unnamed" then
          emit {
            gpu = gpu,
            mig = unit.mig,
            tenant = tenant,
            message = string.format(
              "a Nomad task running %s (pids %s) holds this GPU, but its cgroup does not name its allocation (Nomad 1.3–1.6 on cgroup v1) — whether this GPU is reserved for it cannot be told",
              gl.list(tenant.processes), gl.list(tenant.pids)),
          }
        elseif tenant.verdict == "unidentified" then
          emit { gpu = gpu, mig = unit.mig, tenant = tenant, message = unidentified_message(ledger, tenant) }
        end
      end
    end
    if not ledger.nomadRead then
      return
    end
    for _, unit in ipairs(gl.units(ledger)) do
      for _, tenant in ipairs(unit.tenants) do
        if tenant.verdict == "hidden" then
          emit {
            gpu = unit.gpu,
            mig = unit.mig,
            tenant = tenant,
            message = string.format(
              "Nomad did not return allocation %s of %s%s: %s read-job on namespace %s — whether this GPU is reserved for it cannot be told",
              gl.alloc8(tenant.allocId), gl.who(tenant),
              tenant.containerId and string.format(" (container %s)", tenant.container or "") or "",
              ledger.nomadTokenUnset
                and string.format("it was asked without a token (%s is not set); one needs", ledger.nomadTokenUnset)
                or "the token needs",
              gl.quoted_namespace(tenant.namespace)),
          }
        end
      end
    end
  end,
}
