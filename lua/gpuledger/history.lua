-- The history (docs/contract.md#history): per GPU, its state and since when,
-- and counters of seconds per state; per Nomad job, seconds it held its GPUs
-- and seconds it left them reserved and idle, and the same per MIG slice;
-- per tenant on a GPU without a reservation (an unreserved Nomad task, a
-- container or process outside Nomad), the GPU-seconds it used. Pure:
-- observe() and annotate() take the ledger (whose `at` is the time), so
-- specs feed literal ledgers. serve observes every refresh and saves the
-- file; ls and check only load and annotate. The file is pretty JSON
-- (1-space indent):
--   {"schema":1,"gpus":{uuid: {node,index,state,since,seen,seconds{state: s},uses,unreserved}},
--    "jobs":{"ns/job": {namespace,job,held,idle,seen}},
--    "slices":{key: {index,uuid,migUuid,profile,namespace,job,held,idle,seen}},
--    "tenants":{key: {kind,use,namespace,job,task,container,tenant,seconds,seen}}}
-- plus, on a GPU, "interrupted": the time of a read that could not vouch
-- for it, until the next good read starts its clock again.
local clock = require "gpuledger.clock"
local gl = require "gpuledger.gl"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"
local cut = require("gpuledger.text").cut

local M = {}

M.SCHEMA = 1
M.RETAIN = 7 * 86400
M.MAX_BYTES = 64 * 1024 * 1024
M.MAX_GPUS = 4096 -- records kept; past them, those seen longest ago go
M.MAX_JOBS = 16384
M.MAX_SLICES = 16384
M.MAX_TENANTS = 16384

-- An empty history.
function M.new()
  return { schema = M.SCHEMA, gpus = {}, jobs = {}, slices = {}, tenants = {} }
end

-- A count of seconds from the file: a number from 0 to the retention
-- period's worth of many years, else 0 (a forged or broken counter counts
-- nothing).
local function number_or_zero(v)
  return type(v) == "number" and v >= 0 and v < 100 * 365 * 86400 and v or 0
end

-- A text field of the file, or default when it is none.
local function text_or(v, default)
  return type(v) == "string" and v or default
end

-- The sections of the file: the name, what one record is called, the
-- field of M holding the most records kept.
local SECTIONS = {
  { "gpus", "gpu", "MAX_GPUS" }, { "jobs", "job", "MAX_JOBS" }, { "slices", "slice", "MAX_SLICES" },
  { "tenants", "tenant", "MAX_TENANTS" },
}

-- The uses of a GPU record (the jobs reserving it, or one of its MIG
-- slices) and its tenants without a reservation, from the file.
local function record_lists(record)
  local uses = json.array()
  for _, use in ipairs(type(record.uses) == "table" and record.uses or {}) do
    if type(use) == "table" and type(use.job) == "string" then
      local share = type(use.share) == "number" and use.share > 0 and use.share <= 1 and use.share or nil
      uses[#uses + 1] = {
        namespace = text_or(use.namespace, "default"), job = use.job, held = use.held == true, share = share,
        slice = text_or(use.slice, nil), profile = text_or(use.profile, nil),
      }
    end
  end
  local unreserved = json.array()
  for _, item in ipairs(type(record.unreserved) == "table" and record.unreserved or {}) do
    if type(item) == "table" and type(item.key) == "string" then
      local share = type(item.share) == "number" and item.share > 0 and item.share <= 1 and item.share or 1
      unreserved[#unreserved + 1] = { key = item.key, share = share }
    end
  end
  return uses, unreserved
end

-- Whether v is what the file holds as a JSON object: a table without
-- items (the decoder gives [] and {} alike, and an object no integer keys).
local function is_object(v)
  return type(v) == "table" and #v == 0
end

-- Checks and normalises a decoded file (null arrays, missing tables, the
-- files of older releases, which lack the later sections). Returns the
-- history, or nil and why: not an object, a schema other than this
-- release's (a newer release's file is not read as this one's, then
-- written over), or a section that is no object of records.
local function normalise(doc)
  if not is_object(doc) then
    return nil, "not a history object"
  end
  if doc.schema ~= M.SCHEMA then
    return nil, string.format("schema %s, want %d (a history of another release, or no history)",
      doc.schema == nil and "missing" or cut(json.encode(doc.schema), 64), M.SCHEMA)
  end
  local h, sections = M.new(), {}
  for _, section in ipairs(SECTIONS) do
    local records, count = doc[section[1]] or {}, 0
    if not is_object(records) then
      return nil, string.format("%s is %s, want an object of %s records", section[1],
        type(records) == "table" and "an array" or "a " .. type(records), section[2])
    end
    for key, record in pairs(records) do
      if type(record) ~= "table" or not clock.parse_time(record.seen) then
        return nil, string.format("%s %s: want an object with seen", section[2], tostring(key))
      end
      count = count + 1
    end
    if count > M[section[3]] then
      return nil, string.format("%d %s records, more than the %d a history keeps", count, section[2], M[section[3]])
    end
    sections[section[1]] = records
  end
  for uuid, record in pairs(sections.gpus) do
    if type(record.state) ~= "string" then
      return nil, string.format("gpu %s: want an object with a state", tostring(uuid))
    end
    if not clock.parse_time(record.since) then
      return nil, string.format("gpu %s: since and seen must be RFC 3339 times", tostring(uuid))
    end
    local seconds = {}
    for state, s in pairs(type(record.seconds) == "table" and record.seconds or {}) do
      seconds[state] = number_or_zero(s)
    end
    local uses, unreserved = record_lists(record)
    h.gpus[uuid] = {
      node = text_or(record.node, ""),
      index = math.tointeger(record.index) or 0,
      state = record.state,
      since = record.since,
      seen = record.seen,
      seconds = seconds,
      uses = uses,
      unreserved = unreserved,
      interrupted = clock.parse_time(record.interrupted) and record.interrupted or nil,
    }
  end
  for key, job in pairs(sections.jobs) do
    h.jobs[key] = {
      namespace = text_or(job.namespace, "default"), job = text_or(job.job, key),
      held = number_or_zero(job.held), idle = number_or_zero(job.idle), seen = job.seen,
    }
  end
  for key, slice in pairs(sections.slices) do
    h.slices[key] = {
      index = math.tointeger(slice.index) or 0, uuid = text_or(slice.uuid, ""), migUuid = text_or(slice.migUuid, ""),
      profile = text_or(slice.profile, ""), namespace = text_or(slice.namespace, "default"),
      job = text_or(slice.job, ""), held = number_or_zero(slice.held), idle = number_or_zero(slice.idle),
      seen = slice.seen,
    }
  end
  for key, tenant in pairs(sections.tenants) do
    h.tenants[key] = {
      kind = text_or(tenant.kind, ""), use = text_or(tenant.use, ""), namespace = text_or(tenant.namespace, ""),
      job = text_or(tenant.job, ""), task = text_or(tenant.task, ""), container = text_or(tenant.container, ""),
      tenant = text_or(tenant.tenant, ""), seconds = number_or_zero(tenant.seconds), seen = tenant.seen,
    }
  end
  return h
end

-- Decodes the text of a history file. Returns the history, or nil and why.
function M.decode(text)
  local doc, why = json.decode(text)
  if doc == nil then
    return nil, why
  end
  return normalise(doc)
end

-- The file's text: pretty JSON, 1-space indent, schema 1.
function M.encode(h)
  local doc = { schema = M.SCHEMA, gpus = {}, jobs = {}, slices = h.slices, tenants = h.tenants }
  for uuid, record in pairs(h.gpus) do
    local seconds = {}
    for state, s in pairs(record.seconds) do
      seconds[state] = s
    end
    doc.gpus[uuid] = {
      node = record.node, index = record.index, state = record.state, since = record.since,
      seen = record.seen, seconds = seconds, uses = json.array(record.uses),
      unreserved = json.array(record.unreserved), interrupted = record.interrupted,
    }
  end
  for key, job in pairs(h.jobs) do
    doc.jobs[key] = { namespace = job.namespace, job = job.job, held = job.held, idle = job.idle, seen = job.seen }
  end
  return json.encode(doc, " ") .. "\n"
end

-- Reads the history file at path with core. A missing file is an empty
-- history. Returns the history, or nil and why (unreadable, not JSON, not
-- a history, or refused: a file another user could have written, or no
-- regular file); third, true when a file is there that cannot be used
-- (unreadable, too big, not JSON, not a history), so that serve keeps it
-- aside rather than writing over it.
function M.load(core, path)
  local private, refused = core.check_private_file(path)
  if not private then
    return nil, refused
  end
  local kind, stat_error, errno = core.stat(path)
  if not kind then
    if errno == "ENOENT" then
      return M.new()
    end
    return nil, stat_error
  end
  local content, why = core.read_file(path, M.MAX_BYTES)
  if not content then
    return nil, why, true
  end
  local h, err = M.decode(content)
  if not h then
    return nil, string.format("%s: %s", path, err), true
  end
  return h
end

-- Writes the history to path atomically with core.write_atomic. Returns
-- true, or nil and why.
function M.save(core, path, h)
  return core.write_atomic(path, M.encode(h))
end

-- Removes the temp files a writer killed mid-write left next to path
-- ("<base>.XXXXXX.tmp", atomic_file.c).
local function remove_stale_temps(core, path)
  local dir, base = path:match("^(.*)/([^/]+)$")
  if not dir then
    dir, base = ".", path
  elseif dir == "" then
    dir = "/"
  end
  local pattern = "^" .. base:gsub("%W", "%%%0") .. "%.%w%w%w%w%w%w%.tmp$"
  for _, name in ipairs(core.listdir(dir) or {}) do
    if name:match(pattern) then
      os.remove(dir .. "/" .. name)
    end
  end
end

-- The history serve keeps in the file at path, before its first refresh:
-- the file's, or a fresh one when it cannot be used (a file that cannot be
-- read or is bad is kept aside first, not written over: nothing is lost
-- silently); the temp files a killed writer left beside it are removed.
-- Returns the history; when it starts fresh, why (a line for stderr); and
-- true when the file could not be kept aside, so that M.save_over must
-- keep it aside before anything is written over it.
function M.open(core, path)
  local loaded, why, bad_file = M.load(core, path)
  local warning, stuck
  if bad_file then
    local aside, aside_error = core.keep_aside(path)
    stuck = not aside
    warning = string.format("history %s: %s; %s; starting a fresh history", path, why,
      aside and ("kept aside as " .. aside)
        or ("could not keep it aside (" .. tostring(aside_error) .. "), so it is not written over until it can be"))
  elseif not loaded then
    warning = string.format("history %s: %s; starting a fresh history", path, why)
  end
  remove_stale_temps(core, path)
  return loaded or M.new(), warning, stuck
end

-- Saves h to path as M.save does, after keeping aside first the file M.open
-- could not use nor keep aside, when stuck. Returns why it was not saved,
-- or where the file was kept aside (a line for stderr), or nil when it was
-- saved without a word; and whether the file is still stuck there (it
-- could not be kept aside again, and nothing was written over it).
function M.save_over(core, path, h, stuck)
  local aside, why
  if stuck and core.stat(path) then
    aside, why = core.keep_aside(path)
    if not aside then
      return string.format("%s: not saved: the file there could not be used, and could not be kept aside: %s",
        path, why), true
    end
  end
  local _, not_saved = M.save(core, path, h)
  return not_saved or (aside and string.format("%s: the file that could not be used is kept aside as %s", path, aside))
end

-- A GPU's compute slices: 4 on an A30, 7 on the other MIG-capable GPUs
-- (A100, H100, H200, B200).
local function compute_slices(model)
  return (model or ""):find("A30", 1, true) and 4 or 7
end

-- The share of its GPU a MIG slice of profile is, by its compute slices
-- ("3g.40gb": 3; "2c.4g.40gb", two compute instances' worth of a 4g GPU
-- instance: 2) out of the GPU's; 1 when the profile says neither.
function M.slice_share(profile, model)
  local slices = tonumber((profile or ""):match("^(%d+)c%.") or (profile or ""):match("^(%d+)g%."))
  return slices and math.min(1, slices / compute_slices(model)) or 1
end

-- The units of tenancy of an entry: the GPU itself, then each of its MIG
-- slices with its share of the GPU (M.slice_share).
local function units_of(entry)
  local units = { { tenants = entry.tenants, reservations = entry.reservations } }
  for _, slice in ipairs(entry.migDevices or {}) do
    units[#units + 1] = {
      tenants = slice.tenants, reservations = slice.reservations, slice = slice.uuid, profile = slice.profile,
      share = M.slice_share(slice.profile, entry.model),
    }
  end
  return units
end

-- The jobs reserving an entry now: one per unit and ns/job, empty
-- namespace "default", held when a tenant with one of the job's
-- allocations is reserved; on a MIG slice, with the slice (its uuid and
-- profile) and its share of the GPU, so that a job's GPU-seconds count a
-- slice as its fraction of a GPU.
local function entry_uses(entry)
  local uses = json.array()
  for _, unit in ipairs(units_of(entry)) do
    local reserved_allocs = {}
    for _, tenant in ipairs(unit.tenants or {}) do
      if tenant.reserved and tenant.allocId then
        reserved_allocs[tenant.allocId] = true
      end
    end
    local by_key = {}
    for _, reservation in ipairs(unit.reservations or {}) do
      local namespace = (reservation.namespace or "") ~= "" and reservation.namespace or "default"
      local key = namespace .. "/" .. (reservation.jobId or "")
      local use = by_key[key]
      if not use then
        use = {
          namespace = namespace, job = reservation.jobId or "", held = false, share = unit.share,
          slice = unit.slice, profile = unit.profile,
        }
        by_key[key] = use
        uses[#uses + 1] = use
      end
      if reserved_allocs[reservation.allocId] then
        use.held = true
      end
    end
  end
  return uses
end

-- The key of a job's record on a MIG slice (use of entry_uses).
local function slice_key(use)
  return use.slice .. " " .. use.namespace .. "/" .. use.job
end

-- What the history keeps of a tenant on a GPU without a reservation (its
-- verdict, use: "unreserved" or "unmanaged"): its kind, a Nomad task's
-- namespace, job and task (whatever its allocation), a container's name,
-- and its name as every output gives it (gl.who: never a process's
-- arguments), and the record's key.
local function tenant_record(tenant, use)
  local nomad = tenant.kind == "nomad"
  local record = {
    kind = tenant.kind or "", use = use,
    namespace = nomad and ((tenant.namespace or "") ~= "" and tenant.namespace or "default") or "",
    job = tenant.jobName or "", task = tenant.taskName or "",
    container = not nomad and tenant.container or "", tenant = gl.who(tenant), seconds = 0,
  }
  return table.concat({ record.use, record.kind, record.namespace, record.tenant }, " "), record
end

-- The tenants using an entry without a reservation now (the verdicts
-- "unreserved" and "unmanaged" of ledger.tenant_verdict), each once, with
-- the share of the GPU it is on (1, or its MIG slice's): {key, share}
-- each, and their records by key.
local function entry_unreserved(ledger, entry)
  local list, records = json.array(), {}
  for _, unit in ipairs(units_of(entry)) do
    for _, tenant in ipairs(unit.tenants or {}) do
      local use = ledger_mod.tenant_verdict(ledger, tenant)
      if use == "unreserved" or use == "unmanaged" then
        local key, record = tenant_record(tenant, use)
        if not records[key] then
          records[key] = record
          list[#list + 1] = { key = key, share = unit.share or 1 }
        end
      end
    end
  end
  return list, records
end

local function has_errors(ledger)
  return ledger.errors ~= nil and #ledger.errors > 0
end

-- A reader of times (clock.parse_time, nil for text that is none) that
-- reads each text once: most records were seen at the same refresh.
local function time_reader()
  local time_of = {}
  return function(text)
    local time = time_of[text or ""]
    if time == nil then
      time = clock.parse_time(text) or false
      time_of[text or ""] = time
    end
    return time or nil
  end
end

-- Forgets the records (by key) seen longer than RETAIN before `at` (time
-- of time_reader), and, past `most` records, those seen longest ago.
local function forget(records, at, most, time)
  local kept = {}
  for key, record in pairs(records) do
    local seen = time(record.seen) or at
    if at - seen > M.RETAIN then
      records[key] = nil
    else
      kept[#kept + 1] = { key = key, seen = seen }
    end
  end
  if #kept > most then
    table.sort(kept, function(a, b)
      return a.seen > b.seen
    end)
    for i = most + 1, #kept do
      records[kept[i].key] = nil
    end
  end
end

-- Accrues dt seconds of a GPU's record to what it was at its last read:
-- each job reserving it (held or idle, a MIG slice's share of dt, on the
-- slice too) and each tenant using it without a reservation.
local function accrue(h, record, dt)
  record.seconds[record.state] = (record.seconds[record.state] or 0) + dt
  for _, use in ipairs(record.uses) do
    local seconds = dt * (use.share or 1) -- a MIG slice counts its share of the GPU
    local field = use.held and "held" or "idle"
    local job = h.jobs[use.namespace .. "/" .. use.job]
    if job then
      job[field] = job[field] + seconds
    end
    local slice = use.slice and h.slices[slice_key(use)]
    if slice then
      slice[field] = slice[field] + seconds
    end
  end
  for _, item in ipairs(record.unreserved or {}) do
    local tenant = h.tenants[item.key]
    if tenant then
      tenant.seconds = tenant.seconds + dt * item.share
    end
  end
end

-- Records one refresh's ledger, with max_gap seconds (3 × interval) as the
-- longest silence that still counts as continuous. A ledger with an error
-- is not an observation: it accrues nothing and ends the continuity of
-- every GPU, so the next good read starts a new `since`. Otherwise each
-- interval since a GPU's last good read (when continuous) accrues to the
-- state, and the jobs' held or idle use, seen at its start. GPUs and jobs
-- unseen for longer than RETAIN are forgotten.
function M.observe(h, ledger, max_gap)
  local time = time_reader()
  local at = time(ledger.at)
  if not at then
    return
  end
  if has_errors(ledger) then
    for _, record in pairs(h.gpus) do
      record.interrupted = record.interrupted or ledger.at
    end
    return
  end
  for _, entry in ipairs(ledger.entries or {}) do
    if entry.uuid == "" then
      goto next_entry -- a lost GPU known only by its bus id: nothing to key it by
    end
    local state = entry.state or ledger_mod.classify(entry)
    local record = h.gpus[entry.uuid]
    if not record then
      record = { state = state, since = ledger.at, seen = ledger.at, seconds = {}, uses = json.array() }
      h.gpus[entry.uuid] = record
    end
    local dt = at - (time(record.seen) or at)
    local since_past = (time(record.since) or at) <= at -- a record from the future is not continued
    local continuous = not record.interrupted and since_past and dt >= 0 and dt <= max_gap
    if continuous and dt > 0 then
      accrue(h, record, dt)
    end
    if state ~= record.state or not continuous then
      record.state = state
      record.since = ledger.at
    end
    record.node = ledger.node
    record.index = entry.index
    record.seen = ledger.at
    record.interrupted = nil
    record.uses = entry_uses(entry)
    for _, use in ipairs(record.uses) do
      local key = use.namespace .. "/" .. use.job
      h.jobs[key] = h.jobs[key] or { namespace = use.namespace, job = use.job, held = 0, idle = 0 }
      h.jobs[key].seen = ledger.at
      if use.slice then
        key = slice_key(use)
        h.slices[key] = h.slices[key] or {
          index = entry.index, uuid = entry.uuid, migUuid = use.slice, profile = use.profile or "",
          namespace = use.namespace, job = use.job, held = 0, idle = 0,
        }
        h.slices[key].index = entry.index
        h.slices[key].seen = ledger.at
      end
    end
    local unreserved, tenants = entry_unreserved(ledger, entry)
    record.unreserved = unreserved
    for key, tenant in pairs(tenants) do
      h.tenants[key] = h.tenants[key] or tenant
      h.tenants[key].seen = ledger.at
    end
    ::next_entry::
  end
  forget(h.gpus, at, M.MAX_GPUS, time)
  forget(h.jobs, at, M.MAX_JOBS, time)
  forget(h.slices, at, M.MAX_SLICES, time)
  forget(h.tenants, at, M.MAX_TENANTS, time)
end

-- Sets entry.stateSince on each GPU of the ledger whose state the history
-- vouches for: same state, no interruption since, last good read within
-- max_gap of the ledger's time.
function M.annotate(h, ledger, max_gap)
  local time = time_reader()
  local at = time(ledger.at)
  if not at then
    return
  end
  for _, entry in ipairs(ledger.entries or {}) do
    local record = h.gpus[entry.uuid]
    local seen = record and time(record.seen)
    local since = record and time(record.since)
    local believable = seen and since and since <= seen and seen <= at -- a time to come is not believed
    if believable and not record.interrupted and record.state == entry.state and at - seen <= max_gap then
      entry.stateSince = record.since
    else
      entry.stateSince = nil
    end
  end
end

-- The GPU records sorted by index then uuid: { {uuid=, record=}, … }.
function M.sorted_gpus(h)
  local list = {}
  for uuid, record in pairs(h.gpus) do
    list[#list + 1] = { uuid = uuid, record = record }
  end
  table.sort(list, function(a, b)
    if a.record.index ~= b.record.index then
      return a.record.index < b.record.index
    end
    return a.uuid < b.uuid
  end)
  return list
end

-- The records of a section (h.slices, h.tenants) sorted by their keys.
function M.sorted(records)
  local keys, list = {}, {}
  for key in pairs(records) do
    keys[#keys + 1] = key
  end
  table.sort(keys)
  for i, key in ipairs(keys) do
    list[i] = records[key]
  end
  return list
end

-- The job records sorted by namespace then job.
function M.sorted_jobs(h)
  local list = {}
  for _, job in pairs(h.jobs) do
    list[#list + 1] = job
  end
  table.sort(list, function(a, b)
    if a.namespace ~= b.namespace then
      return a.namespace < b.namespace
    end
    return a.job < b.job
  end)
  return list
end

return M
