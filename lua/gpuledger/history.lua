-- The history (docs/contract.md#history): per GPU, its state and since when,
-- and counters of seconds per state; per Nomad job, seconds it held its GPUs
-- and seconds it left them reserved and idle. Pure: observe() and annotate()
-- take the ledger (whose `at` is the time), so specs feed literal ledgers.
-- serve observes every refresh and saves the file; ls and check only load
-- and annotate. The file is pretty JSON (1-space indent):
--   {"schema":1,"gpus":{uuid: {node,index,state,since,seen,seconds{state: s},uses}},
--    "jobs":{"ns/job": {namespace,job,held,idle,seen}}}
-- plus, on a GPU, "interrupted": the time of a read that could not vouch
-- for it, until the next good read starts its clock again.
local clock = require "gpuledger.clock"
local json = require "gpuledger.json"
local ledger_mod = require "gpuledger.ledger"

local M = {}

M.SCHEMA = 1
M.RETAIN = 7 * 86400
M.MAX_BYTES = 64 * 1024 * 1024
M.MAX_GPUS = 4096 -- records kept; past them, those seen longest ago go
M.MAX_JOBS = 16384

-- An empty history.
function M.new()
  return { schema = M.SCHEMA, gpus = {}, jobs = {} }
end

-- A count of seconds from the file: a number from 0 to the retention
-- period's worth of many years, else 0 (a forged or broken counter counts
-- nothing).
local function number_or_zero(v)
  return type(v) == "number" and v >= 0 and v < 100 * 365 * 86400 and v or 0
end

-- Checks and normalises a decoded file (null arrays, missing tables, the
-- files of older releases). Returns the history, or nil and why.
local function normalise(doc)
  if type(doc) ~= "table" or json.is_array(doc) or (#doc > 0) then
    return nil, "not a history object"
  end
  local h = M.new()
  local gpus, jobs = type(doc.gpus) == "table" and doc.gpus or {}, type(doc.jobs) == "table" and doc.jobs or {}
  for _, kind in ipairs { { "gpu", gpus, M.MAX_GPUS }, { "job", jobs, M.MAX_JOBS } } do
    local count = 0
    for _ in pairs(kind[2]) do
      count = count + 1
    end
    if count > kind[3] then
      return nil, string.format("%d %s records, more than the %d a history keeps", count, kind[1], kind[3])
    end
  end
  for uuid, record in pairs(gpus) do
    if type(record) ~= "table" or type(record.state) ~= "string" then
      return nil, string.format("gpu %s: want an object with a state", tostring(uuid))
    end
    if not clock.parse_time(record.since) or not clock.parse_time(record.seen) then
      return nil, string.format("gpu %s: since and seen must be RFC 3339 times", tostring(uuid))
    end
    local seconds = {}
    for state, s in pairs(type(record.seconds) == "table" and record.seconds or {}) do
      seconds[state] = number_or_zero(s)
    end
    local uses = json.array()
    for _, use in ipairs(type(record.uses) == "table" and record.uses or {}) do
      if type(use) == "table" and type(use.job) == "string" then
        local share = type(use.share) == "number" and use.share > 0 and use.share <= 1 and use.share or nil
        uses[#uses + 1] = { namespace = use.namespace or "default", job = use.job, held = use.held == true, share = share }
      end
    end
    h.gpus[uuid] = {
      node = type(record.node) == "string" and record.node or "",
      index = math.tointeger(record.index) or 0,
      state = record.state,
      since = record.since,
      seen = record.seen,
      seconds = seconds,
      uses = uses,
      interrupted = clock.parse_time(record.interrupted) and record.interrupted or nil,
    }
  end
  for key, job in pairs(jobs) do
    if type(job) ~= "table" or not clock.parse_time(job.seen) then
      return nil, string.format("job %s: want an object with seen", tostring(key))
    end
    h.jobs[key] = {
      namespace = type(job.namespace) == "string" and job.namespace or "default",
      job = type(job.job) == "string" and job.job or key,
      held = number_or_zero(job.held),
      idle = number_or_zero(job.idle),
      seen = job.seen,
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
  local doc = { schema = M.SCHEMA, gpus = {}, jobs = {} }
  for uuid, record in pairs(h.gpus) do
    local seconds = {}
    for state, s in pairs(record.seconds) do
      seconds[state] = s
    end
    doc.gpus[uuid] = {
      node = record.node, index = record.index, state = record.state, since = record.since,
      seen = record.seen, seconds = seconds, uses = json.array(record.uses),
      interrupted = record.interrupted,
    }
  end
  for key, job in pairs(h.jobs) do
    doc.jobs[key] = { namespace = job.namespace, job = job.job, held = job.held, idle = job.idle, seen = job.seen }
  end
  return json.encode(doc, " ") .. "\n"
end

-- Reads the history file at path with core. A missing file is an empty
-- history. Returns the history, or nil and why (unreadable, not JSON, not
-- a history, or refused: a file another user could have written); third,
-- true when the file itself is bad (too big, not JSON, not a history), so
-- that serve keeps it aside rather than writing over it.
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
  local text, why, read_errno = core.read_file(path, M.MAX_BYTES)
  if not text then
    return nil, why, read_errno == "EFBIG"
  end
  local h, err = M.decode(text)
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
-- the file's, or a fresh one when it cannot be read (a bad file is kept
-- aside first, not written over: nothing is lost silently); the temp files
-- a killed writer left beside it are removed. Returns the history and, when
-- it starts fresh, why (a line for stderr).
function M.open(core, path)
  local loaded, why, bad_file = M.load(core, path)
  local warning
  if bad_file then
    local aside, aside_error = core.keep_aside(path)
    warning = string.format("history %s: %s; %s; starting a fresh history", path, why,
      aside and ("kept aside as " .. aside) or ("could not keep it aside: " .. tostring(aside_error)))
  elseif not loaded then
    warning = string.format("history %s: %s; starting a fresh history", path, why)
  end
  remove_stale_temps(core, path)
  return loaded or M.new(), warning
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

-- The jobs reserving a GPU, or a MIG slice, as entry_uses says.
local function unit_uses(entry)
  local reserved_allocs = {}
  for _, tenant in ipairs(entry.tenants or {}) do
    if tenant.reserved and tenant.allocId then
      reserved_allocs[tenant.allocId] = true
    end
  end
  local uses, by_key = json.array(), {}
  for _, reservation in ipairs(entry.reservations or {}) do
    local namespace = (reservation.namespace or "") ~= "" and reservation.namespace or "default"
    local key = namespace .. "/" .. (reservation.jobId or "")
    local use = by_key[key]
    if not use then
      use = { namespace = namespace, job = reservation.jobId or "", held = false }
      by_key[key] = use
      uses[#uses + 1] = use
    end
    if reserved_allocs[reservation.allocId] then
      use.held = true
    end
  end
  return uses
end

-- The jobs reserving an entry now: one per ns/job, empty namespace
-- "default", held when a tenant with one of the job's allocations is
-- reserved; on a GPU in MIG mode, those of each slice, each with the
-- slice's share of the GPU (M.slice_share), so that a job's GPU-seconds
-- count a slice as its fraction of a GPU.
local function entry_uses(entry)
  if entry.migDevices then
    local uses = json.array()
    for _, unit in ipairs { { tenants = entry.tenants, reservations = entry.reservations }, table.unpack(entry.migDevices) } do
      for _, use in ipairs(unit_uses(unit)) do
        use.share = unit.profile and M.slice_share(unit.profile, entry.model) or nil
        uses[#uses + 1] = use
      end
    end
    return uses
  end
  return unit_uses(entry)
end

local function has_errors(ledger)
  return ledger.errors ~= nil and #ledger.errors > 0
end

-- Forgets the records (by key) seen longer than RETAIN before `at`, and,
-- past `most` records, those seen longest ago.
local function forget(records, at, most)
  local kept = {}
  for key, record in pairs(records) do
    local seen = clock.parse_time(record.seen) or at
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

-- Records one refresh's ledger, with max_gap seconds (3 × interval) as the
-- longest silence that still counts as continuous. A ledger with an error
-- is not an observation: it accrues nothing and ends the continuity of
-- every GPU, so the next good read starts a new `since`. Otherwise each
-- interval since a GPU's last good read (when continuous) accrues to the
-- state, and the jobs' held or idle use, seen at its start. GPUs and jobs
-- unseen for longer than RETAIN are forgotten.
function M.observe(h, ledger, max_gap)
  local at = clock.parse_time(ledger.at)
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
    local dt = at - (clock.parse_time(record.seen) or at)
    local since_past = (clock.parse_time(record.since) or at) <= at -- a record from the future is not continued
    local continuous = not record.interrupted and since_past and dt >= 0 and dt <= max_gap
    if continuous and dt > 0 then
      record.seconds[record.state] = (record.seconds[record.state] or 0) + dt
      for _, use in ipairs(record.uses) do
        local job = h.jobs[use.namespace .. "/" .. use.job]
        if job then
          local seconds = dt * (use.share or 1) -- a MIG slice counts its share of the GPU
          if use.held then
            job.held = job.held + seconds
          else
            job.idle = job.idle + seconds
          end
        end
      end
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
      local job = h.jobs[key]
      if not job then
        job = { namespace = use.namespace, job = use.job, held = 0, idle = 0 }
        h.jobs[key] = job
      end
      job.seen = ledger.at
    end
    ::next_entry::
  end
  forget(h.gpus, at, M.MAX_GPUS)
  forget(h.jobs, at, M.MAX_JOBS)
end

-- Sets entry.stateSince on each GPU of the ledger whose state the history
-- vouches for: same state, no interruption since, last good read within
-- max_gap of the ledger's time.
function M.annotate(h, ledger, max_gap)
  local at = clock.parse_time(ledger.at)
  if not at then
    return
  end
  for _, entry in ipairs(ledger.entries or {}) do
    local record = h.gpus[entry.uuid]
    local seen = record and clock.parse_time(record.seen)
    local since = record and clock.parse_time(record.since)
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
