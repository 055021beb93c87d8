-- gl: the helper library every rule sees, so rules say what they mean and
-- word their messages alike (docs/contract.md#findings: labels, short alloc ids, Go-style
-- lists, "for 6h12m" suffixes).
local cards = require "gpuledger.cards"
local clock = require "gpuledger.clock"
local ledger_mod = require "gpuledger.ledger"
local units = require "gpuledger.units"

local M = {}

-- "gpu0 GPU-fef8089b": the GPU's index and the first 12 characters of its
-- uuid; "gpu? 00000000:AF:00.0" for a GPU nvidia-smi no longer lists (index
-- -1) whose uuid is not known.
function M.label(gpu)
  local uuid = (gpu.uuid or ""):sub(1, 12)
  if gpu.index < 0 then
    return string.format("gpu? %s", uuid ~= "" and uuid or gpu.busId)
  end
  return string.format("gpu%d %s", gpu.index, uuid)
end

-- "gpu0/mig1 MIG-00000001 2g.20gb": a MIG slice of gpu, by its GPU's index,
-- its device index, the first 12 characters of its UUID and its profile.
function M.slice_label(gpu, slice)
  return string.format("gpu%s/mig%d %s %s", M.index_text(gpu), slice.index, slice.uuid:sub(1, 12), slice.profile)
end

-- The units of tenancy of a ledger, in order: each GPU outside MIG mode;
-- for a GPU in MIG mode each of its slices, and the GPU itself where it has
-- tenants or reservations of its own (processes the driver placed on no
-- slice, a reservation of the whole GPU). Each is {gpu, mig (the slice, or
-- nil), tenants, reservations, state, memoryUsedMiB, memoryTotalMiB, noun}:
-- a rule judges a unit as it would a GPU and emits {gpu = unit.gpu, mig =
-- unit.mig, …}; noun is "GPU" or "MIG slice", for its messages.
M.units = units.of

-- A GPU's index as shown in tables and metric labels: "?" for a GPU
-- nvidia-smi no longer lists (index -1).
function M.index_text(gpu)
  return gpu.index < 0 and "?" or tostring(gpu.index)
end

-- The first 8 characters of an allocation id.
function M.alloc8(alloc_id)
  return (alloc_id or ""):sub(1, 8)
end

-- Go's rendering of a list: [a b c].
function M.list(items)
  local parts = {}
  for i = 1, #items do
    parts[i] = tostring(items[i])
  end
  return "[" .. table.concat(parts, " ") .. "]"
end

-- The short human form of a span in seconds: <1m, 45m, 6h12m, 2d1h.
M.human = clock.human

-- Seconds since `at` (RFC 3339) as of the ledger's time, or nil if unknown.
function M.seconds_since(ledger, at)
  local now, since = clock.parse_time(ledger.at), clock.parse_time(at)
  if not now or not since then
    return nil
  end
  return math.max(0, now - since)
end

-- How long the GPU has been in its state, in seconds, or nil when the
-- history does not know.
function M.state_seconds(ledger, gpu)
  return gpu.stateSince and M.seconds_since(ledger, gpu.stateSince)
end

-- ", for 6h12m" when the GPU's state has a known start, else "".
function M.since_suffix(ledger, gpu)
  local seconds = M.state_seconds(ledger, gpu)
  return seconds and (", for " .. clock.human(seconds)) or ""
end

-- "alice (uid 1000)", or "(uid 4321)" when the passwd file does not name the uid.
local function user_words(tenant)
  if tenant.user then
    return string.format("%s (uid %d)", tenant.user, tenant.uid)
  end
  return string.format("(uid %d)", tenant.uid)
end

-- Who a tenant is, in words that say whom to talk to: "job/task" of a Nomad
-- task (or "task <name>" when its job is unknown), its container's name or
-- short id, "service ollama.service", "user alice (uid 1000)", "process
-- python3 of root (uid 0)", "process a.out (uid 4321)", "unnamed task
-- [ffmpeg]" when its cgroup does not name it; else (a process /proc could
-- not tell about) its processes' names joined by ",". The one name of a
-- tenant: findings, `ls` and the page all call it this.
function M.who(tenant)
  if tenant.kind == "nomad" and tenant.jobName then
    return M.job_task(tenant)
  elseif tenant.container and tenant.container ~= "" then
    return tenant.container
  elseif tenant.containerId then
    return tenant.containerId
  elseif tenant.kind == "nomad" and tenant.taskName then
    return "task " .. tenant.taskName
  elseif tenant.owner == "service" then
    return "service " .. tenant.service
  elseif tenant.owner == "user" then
    return "user " .. user_words(tenant)
  elseif tenant.owner == "process" and tenant.user then
    return string.format("process %s of %s", tenant.processes[1] or "", user_words(tenant))
  elseif tenant.owner == "process" then
    return string.format("process %s %s", tenant.processes[1] or "", user_words(tenant))
  elseif tenant.kind == "nomad" then
    return "unnamed task " .. M.list(tenant.processes)
  end
  return table.concat(tenant.processes, ",")
end

-- What may be said of a tenant being on its GPU (the ledger's judgement,
-- also tenant.verdict): "unidentified", "unmanaged", "unreserved", "hidden",
-- "unknown", "unnamed" or nil.
M.tenant_verdict = ledger_mod.tenant_verdict

-- "job/task" of a Nomad tenant or reservation (jobName or jobId, taskName or task).
function M.job_task(t)
  return (t.jobName or t.jobId or "") .. "/" .. (t.taskName or t.task or "")
end

-- ", container <name>" for a tenant in a container, "" for a Nomad task
-- that runs without one (exec, raw_exec, java, exec2).
function M.container_words(tenant)
  return tenant.containerId and (", container " .. (tenant.container or "")) or ""
end

-- What is known of the card named model (gpuledger.cards).
M.card = cards.lookup

-- The namespace as messages quote it: "video", or "its namespace" when empty.
function M.quoted_namespace(namespace)
  if namespace == nil or namespace == "" then
    return "its namespace"
  end
  return string.format("%q", namespace)
end

-- Whether a GPU is in MIG mode: its slices were read, or the driver says
-- so. The driver measures no utilisation then (it reads [N/A]).
function M.mig_mode(gpu)
  return gpu.migDevices ~= nil or (gpu.health ~= nil and gpu.health.migMode == true)
end

-- The tenancy a health finding ends with (docs/health.md#findings): who is on a
-- failing card, or that Nomad will hand it to the next job.
-- " — reserved by train/trainer (alloc 1f2e3d4c), 2 tenants",
-- " — not reserved, held by [ffmpeg-manual host]: Nomad may place the next job here",
-- " — not reserved: Nomad will place the next job here".
local function tenancy_words(gpu)
  if gpu.migDevices and #gpu.migDevices > 0 then
    return M.slices_tenancy(gpu)
  end
  local tenants = #gpu.tenants
  local first = gpu.reservations[1]
  if first then
    local more = #gpu.reservations > 1 and string.format(" and %d more", #gpu.reservations - 1) or ""
    local count = tenants == 0 and "no tenant" or (tenants == 1 and "1 tenant" or string.format("%d tenants", tenants))
    return string.format(" — reserved by %s (alloc %s)%s, %s", M.job_task(first), M.alloc8(first.allocId), more, count)
  elseif tenants > 0 then
    local names = {}
    for i, tenant in ipairs(gpu.tenants) do
      names[i] = M.who(tenant)
    end
    return string.format(" — not reserved, held by %s: Nomad may place the next job here", M.list(names))
  end
  return " — not reserved: Nomad will place the next job here"
end

-- The tenancy a health finding ends with (tenancy_words), worded once per
-- GPU while the program's own rules judge its ledger
-- (units.share): it ends every health finding on the GPU.
function M.tenancy(gpu)
  local words = units.words(gpu)
  if not words then
    return tenancy_words(gpu)
  end
  words.tenancy = words.tenancy or tenancy_words(gpu)
  return words.tenancy
end

-- The tenancy of every slice of a GPU in MIG mode, for a health finding:
-- " — mig0 3g.40gb reserved by train/trainer (alloc aaaaaaaa), 1 tenant;
-- mig1 2g.20gb not reserved: Nomad will place the next job here".
function M.slices_tenancy(gpu)
  local parts = {}
  for _, slice in ipairs(gpu.migDevices) do
    local words = M.tenancy(slice):gsub("^ — ", "")
    parts[#parts + 1] = string.format("mig%d %s %s", slice.index, slice.profile, words)
  end
  if #gpu.tenants > 0 then
    parts[#parts + 1] = M.tenancy({ tenants = gpu.tenants, reservations = gpu.reservations }):gsub("^ — ", "on no slice: ")
  end
  return " — " .. table.concat(parts, "; ")
end

-- The Xid groups of a GPU (gpu.xids) whose catalogue class is one of
-- classes ({reset = true, …}).
function M.xids_of_class(gpu, classes)
  local found = {}
  for _, group in ipairs(gpu.xids or {}) do
    if classes[group.class] then
      found[#found + 1] = group
    end
  end
  return found
end

-- One Xid group for a message: "Xid 119 (GSP RPC timeout) ×3 this boot,
-- last 2026-11-29T07:00:12Z, process nvidia-smi"; given its gpu, also each
-- MIG slice its lines place it on, with its tenants ("on gpu0/mig0
-- MIG-00000000 3g.40gb (train/trainer)").
function M.xid_text(group, gpu)
  local parts = { string.format("Xid %d (%s)", group.xid, group.meaning) }
  if group.count > 1 then
    parts[1] = parts[1] .. string.format(" ×%d", group.count)
  end
  parts[1] = parts[1] .. " this boot"
  if group.last then
    parts[#parts + 1] = "last " .. group.last:gsub("%.%d+Z$", "Z")
  end
  if group.processes and #group.processes > 0 then
    parts[#parts + 1] = "process " .. table.concat(group.processes, ", ")
  end
  for _, uuid in ipairs(gpu and group.migSlices or {}) do -- the MIG slice its lines place it on, and who is there
    for _, slice in ipairs(gpu.migDevices or {}) do
      if slice.uuid == uuid then
        local names = {}
        for i, tenant in ipairs(slice.tenants) do
          names[i] = M.who(tenant)
        end
        parts[#parts + 1] = string.format("on %s (%s)", M.slice_label(gpu, slice),
          #names > 0 and table.concat(names, ", ") or "no tenant")
      end
    end
  end
  return table.concat(parts, ", ")
end

return M
