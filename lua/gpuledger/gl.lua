-- gl: the helper library every rule sees, so rules say what they mean and
-- word their messages alike (SPEC §3.3: labels, short alloc ids, Go-style
-- lists, "for 6h12m" suffixes).
local cards = require "gpuledger.cards"
local clock = require "gpuledger.clock"
local ledger_mod = require "gpuledger.ledger"

local M = {}

-- "gpu0 GPU-fef8089b": the GPU's index and the first 12 characters of its uuid.
function M.label(gpu)
  return string.format("gpu%d %s", gpu.index, (gpu.uuid or ""):sub(1, 12))
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
-- not tell about) its processes' names joined by ",".
function M.who(tenant)
  if tenant.kind == "nomad" and tenant.jobName then
    return M.job_task(tenant)
  elseif tenant.container then
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

-- A tenant's name in a list of tenants, one word: its container's name;
-- job/task (or the task) of a Nomad task without a container; the unit of
-- a service, the user (or uid) of a session, the process of a bare process;
-- else its kind.
function M.tenant_name(tenant)
  if tenant.container and tenant.container ~= "" then
    return tenant.container
  elseif tenant.kind == "nomad" and not tenant.containerId then
    return tenant.jobName and M.job_task(tenant) or tenant.taskName or table.concat(tenant.processes, ",")
  elseif tenant.owner == "service" then
    return tenant.service
  elseif tenant.owner == "user" then
    return tenant.user or ("uid:" .. tenant.uid)
  elseif tenant.owner == "process" then
    return table.concat(tenant.processes, ",")
  end
  return tenant.kind
end

-- What may be said of a tenant being on its GPU (the ledger's judgement,
-- also tenant.verdict): "unmanaged", "unreserved", "hidden", "unknown" or nil.
M.tenant_verdict = ledger_mod.tenant_verdict

-- "job/task" of a Nomad tenant or reservation (jobName or jobId, taskName or task).
function M.job_task(t)
  return string.format("%s/%s", t.jobName or t.jobId or "", t.taskName or t.task or "")
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

return M
