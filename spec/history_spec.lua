-- The history (docs/contract.md#history: a refresh in which
-- a source failed accrues nothing and restarts the clock).
local H = require "helper"
local history = require "gpuledger.history"
local json = require "gpuledger.json"

local MAX_GAP = 45

-- A one-GPU ledger at H.AT + t seconds in `state` (held: a reserved Nomad
-- tenant; reserved-idle: the reservation only; free: nothing).
local function at(t, state, fields)
  fields = fields or {}
  local reservations, tenants = {}, {}
  if state == "held" or state == "reserved-idle" then
    reservations = { H.reservation { jobId = fields.job or "worker", namespace = fields.namespace } }
  end
  if state == "held" then
    tenants = { H.nomad_tenant() }
  elseif state == "unaccounted" then
    tenants = { H.docker_tenant() }
  end
  local stamp = require("gpuledger.clock").format_time(require("gpuledger.clock").parse_time(H.AT) + t)
  return H.ledger({ H.gpu { index = 0, reservations = reservations, tenants = tenants } },
    { at = stamp, errors = fields.errors, node = fields.node })
end

-- Observes the ledgers in order on h (a new history by default).
local function observe_all(ledgers, h)
  h = h or history.new()
  for _, l in ipairs(ledgers) do
    history.observe(h, l, MAX_GAP)
  end
  return h
end

local function since_of(h, l)
  history.annotate(h, l, MAX_GAP)
  return l.entries[1].stateSince
end

local function record(h)
  return h.gpus[H.UUID0]
end

describe("history.observe and annotate", function()
  it("keeps the first since while the state stays the same", function()
    local h = observe_all { at(0, "held"), at(15, "held"), at(30, "held") }
    assert.equal(H.AT, since_of(h, at(30, "held")))
  end)

  it("starts a new since when the state changes", function()
    local h = observe_all { at(0, "held"), at(15, "held"), at(30, "reserved-idle") }
    assert.equal(at(30, "x").at, record(h).since)
    assert.equal(at(30, "x").at, since_of(h, at(30, "reserved-idle")))
  end)

  it("starts a new since after a silence longer than the max gap", function()
    local h = observe_all { at(0, "held"), at(15, "held"), at(15 + 46, "held") }
    assert.equal(at(61, "x").at, record(h).since)
  end)

  it("does not annotate long after the last good read", function()
    local h = observe_all { at(0, "held"), at(15, "held") }
    assert.is_nil(since_of(h, at(15 + 46, "held")))
    assert.is_not_nil(since_of(h, at(15 + 45, "held")))
  end)

  it("does not annotate a GPU whose state differs from the record", function()
    local h = observe_all { at(0, "held") }
    assert.is_nil(since_of(h, at(10, "free")))
  end)

  it("restarts the clock across a partial read between two held reads", function()
    local h = observe_all {
      at(0, "held"), at(15, "held"), at(30, "held", { errors = { "docker: connection refused" } }), at(45, "held"),
    }
    assert.equal(at(45, "x").at, record(h).since)
    assert.equal(15, record(h).seconds.held) -- 0→15 only; nothing across the partial read
  end)

  it("vouches for nothing on the partial read itself, nor in the file after it", function()
    local h = observe_all { at(0, "held"), at(15, "held") }
    local partial = at(30, "held", { errors = { "nomad: HTTP 500" } })
    history.observe(h, partial, MAX_GAP)
    assert.is_nil(since_of(h, partial))
    local reloaded = assert(history.decode(history.encode(h)))
    assert.is_nil(since_of(reloaded, at(31, "held")))
  end)

  it("accrues nothing for a partial read after a long gap, then counts from the next good read", function()
    local h = observe_all {
      at(0, "held"), at(600, "held"), at(615, "held", { errors = { "nvidia-smi query-gpu: exit status 9" } }),
      at(630, "held"), at(645, "held"),
    }
    assert.equal(15, record(h).seconds.held) -- only 630→645
    assert.equal(at(630, "x").at, record(h).since)
  end)

  it("accrues to the state seen at the start of each interval: held, held, free, free", function()
    local h = observe_all { at(0, "held"), at(15, "held"), at(30, "free"), at(45, "free") }
    assert.equal(30, record(h).seconds.held)
    assert.equal(15, record(h).seconds.free)
    assert.is_nil(record(h).seconds.unaccounted)
  end)

  it("accrues a job's held and idle time: held, held, idle, idle", function()
    local h = observe_all { at(0, "held"), at(15, "held"), at(30, "reserved-idle"), at(45, "reserved-idle") }
    local job = h.jobs["video/worker"]
    assert.equal(30, job.held)
    assert.equal(15, job.idle)
    assert.equal("video", job.namespace)
    assert.equal("worker", job.job)
  end)

  it("counts a job whose reservation has no namespace under default", function()
    local h = observe_all { at(0, "reserved-idle", { namespace = "" }), at(15, "reserved-idle", { namespace = "" }) }
    assert.equal(15, h.jobs["default/worker"].idle)
  end)

  it("does not count backwards when the clock goes back", function()
    local h = observe_all { at(100, "held"), at(50, "held") }
    assert.is_nil(record(h).seconds.held)
    assert.equal(at(50, "x").at, record(h).since)
  end)

  it("forgets GPUs and jobs unseen for more than 7 days", function()
    local other = H.gpu { index = 1, reservations = { H.reservation { jobId = "train", deviceIds = { H.UUID1 } } } }
    local h = observe_all { H.ledger({ other }, { at = H.AT }), at(1, "held") }
    assert.is_not_nil(h.gpus[H.UUID1])
    assert.is_not_nil(h.jobs["video/train"])
    observe_all({ at(7 * 86400 + 2, "held") }, h)
    assert.is_nil(h.gpus[H.UUID1])
    assert.is_nil(h.jobs["video/train"])
    assert.is_not_nil(h.gpus[H.UUID0])
  end)

  it("takes the state from the join when an entry carries none", function()
    local l = at(0, "held")
    l.entries[1].state = nil
    local h = observe_all { l }
    assert.equal("held", record(h).state)
  end)
end)

describe("history of tenants without a reservation", function()
  -- GPU 0 at H.AT + t: a reserved task (not counted), an unreserved one, a
  -- container and a root process outside Nomad, and a task whose allocation
  -- Nomad hid (not counted: whether it was reserved cannot be told); the
  -- container is on GPU 1 too.
  local function busy_at(t, fields)
    local clock = require "gpuledger.clock"
    local tenants = {
      H.nomad_tenant(),
      H.nomad_tenant { jobName = "encode", taskName = "enc", namespace = "", allocId = "9eab414d", reserved = false },
      H.docker_tenant(),
      H.host_tenant { owner = "process", user = "root", uid = 0 },
      H.nomad_tenant { jobName = "train", allocId = "5c7d1e2f", reserved = false, allocVisible = false },
    }
    return H.ledger({
      H.gpu { index = 0, reservations = { H.reservation() }, tenants = tenants },
      H.gpu { index = 1, tenants = { H.docker_tenant() } },
    }, { at = clock.format_time(clock.parse_time(H.AT) + t), errors = fields and fields.errors })
  end

  it("counts the GPU-seconds of each, once per GPU it is on, named as every output names it", function()
    local h = observe_all { busy_at(0), busy_at(15), busy_at(30) }
    assert.same({
      ["unreserved nomad default encode/enc"] = {
        kind = "nomad", use = "unreserved", namespace = "default", job = "encode", task = "enc", container = "",
        tenant = "encode/enc", seconds = 30, seen = busy_at(30).at,
      },
      ["unmanaged docker  ffmpeg-manual"] = {
        kind = "docker", use = "unmanaged", namespace = "", job = "", task = "", container = "ffmpeg-manual",
        tenant = "ffmpeg-manual", seconds = 60, seen = busy_at(30).at,
      },
      ["unmanaged host  process python3 of root (uid 0)"] = {
        kind = "host", use = "unmanaged", namespace = "", job = "", task = "", container = "",
        tenant = "process python3 of root (uid 0)", seconds = 30, seen = busy_at(30).at,
      },
    }, h.tenants)
    assert.equal(30, h.jobs["video/worker"].held) -- the reserved task counts as before
  end)

  it("counts nothing across a read in which a source failed", function()
    local h = observe_all { busy_at(0), busy_at(15, { errors = { "docker: refused" } }), busy_at(30) }
    assert.equal(0, h.tenants["unmanaged docker  ffmpeg-manual"].seconds)
  end)

  it("round-trips through the file, and forgets a tenant unseen for 7 days", function()
    local h = observe_all { busy_at(0), busy_at(15) }
    local loaded = assert(history.decode(history.encode(h)))
    assert.same(h, loaded)
    observe_all({ busy_at(30) }, loaded)
    assert.equal(60, loaded.tenants["unmanaged docker  ffmpeg-manual"].seconds)
    observe_all({ at(7 * 86400 + 31, "free") }, loaded)
    assert.same({}, loaded.tenants)
  end)
end)

describe("history file", function()
  local dir
  before_each(function()
    dir = H.tempdir()
  end)
  after_each(function()
    H.remove(dir)
  end)

  local function read(path)
    local f = assert(io.open(path))
    local s = f:read("a")
    f:close()
    return s
  end

  it("round-trips through save and load, counters continuing after", function()
    local path = dir .. "/data/history.json"
    local h = observe_all { at(0, "held"), at(15, "held"), at(30, "reserved-idle") }
    assert.is_true(history.save(H.core, path, h))
    local text = read(path)
    assert.truthy(text:find(H.UUID0, 1, true))
    assert.falsy(text:find('"pid', 1, true))
    assert.truthy(text:find('\n "schema": 1', 1, true)) -- pretty, 1-space indent
    local loaded = assert(history.load(H.core, path))
    assert.same(h, loaded)
    observe_all({ at(45, "reserved-idle") }, loaded)
    assert.equal(30, loaded.jobs["video/worker"].held)
    assert.equal(15, loaded.jobs["video/worker"].idle)
    assert.equal(30, record(loaded).seconds.held)
    assert.equal(15, record(loaded).seconds["reserved-idle"])
  end)

  it("leaves no temp file behind", function()
    local path = dir .. "/history.json"
    assert.is_true(history.save(H.core, path, observe_all { at(0, "held") }))
    assert.same({ "history.json" }, H.core.listdir(dir))
  end)

  it("writes the documented shape", function()
    local path = dir .. "/history.json"
    history.save(H.core, path, observe_all { at(0, "held"), at(15, "held") })
    local doc = assert(json.decode(read(path)))
    assert.equal(1, doc.schema)
    local r = doc.gpus[H.UUID0]
    assert.same({ "index", "node", "seconds", "seen", "since", "state", "unreserved", "uses" }, (function()
      local keys = {}
      for k in pairs(r) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      return keys
    end)())
    assert.same({ { namespace = "video", job = "worker", held = true } }, r.uses)
    assert.same({ namespace = "video", job = "worker", held = 15, idle = 0, seen = at(15, "x").at }, doc.jobs["video/worker"])
  end)

  it("treats a missing file as an empty history", function()
    local h = assert(history.load(H.core, dir .. "/none.json"))
    assert.same(history.new(), h)
  end)

  it("refuses a file that is not JSON, or not a history", function()
    local path = dir .. "/history.json"
    H.write(path, "{not json")
    local h, why = history.load(H.core, path)
    assert.is_nil(h)
    assert.truthy(why:find(path, 1, true))
    H.write(path, '[1, 2]')
    assert.is_nil((history.load(H.core, path)))
    H.write(path, '{"schema": 1, "gpus": {"GPU-x": {"state": "held", "since": "yesterday", "seen": "now"}}}')
    assert.is_nil((history.load(H.core, path)))
  end)

  it("refuses a file of another schema, or whose sections are no objects, and says which", function()
    local path = dir .. "/history.json"
    for doc, want in pairs {
      ['{}'] = "schema missing, want 1",
      ['{"schema": 2, "gpus": {}}'] = "schema 2, want 1",
      ['{"schema": "1"}'] = 'schema "1", want 1',
      ['{"schema": 1, "gpus": "x"}'] = "gpus is a string, want an object of gpu records",
      ['{"schema": 1, "jobs": 7}'] = "jobs is a number, want an object of job records",
      ['{"schema": 1, "tenants": [{"seen": "2026-11-29T07:00:00Z"}]}'] = "tenants is an array, want an object of tenant records",
    } do
      H.write(path, doc)
      local h, why, bad_file = history.load(H.core, path)
      assert.is_nil(h, doc)
      assert.equal(path .. ": " .. want, why:sub(1, #path + 2 + #want), doc)
      assert.is_true(bad_file, doc) -- serve keeps it aside rather than writing over it
    end
    H.write(path, '{"schema": 1, "gpus": {}, "jobs": [], "slices": null}')
    assert.same(history.new(), assert(history.load(H.core, path)))
  end)

  it("open: the file's history, a fresh one without a word for a missing file", function()
    local path = dir .. "/history.json"
    local h, fresh_because = history.open(H.core, path)
    assert.same(history.new(), h)
    assert.is_nil(fresh_because)
    assert.is_true(history.save(H.core, path, observe_all { at(0, "held") }))
    h, fresh_because = history.open(H.core, path)
    assert.equal("held", record(h).state)
    assert.is_nil(fresh_because)
  end)

  it("open: a bad file is kept aside, not written over, and the history starts fresh saying so", function()
    local path = dir .. "/history.json"
    H.write(path, "{not json")
    local h, fresh_because = history.open(H.core, path)
    assert.same(history.new(), h)
    assert.matches("^history " .. path:gsub("%p", "%%%0") .. ": .*; kept aside as .*%.corrupt%-.*; starting a fresh history$",
      fresh_because)
    local names = H.core.listdir(dir)
    assert.equal(1, #names)
    assert.matches("^history%.json%.corrupt%-", names[1])
    assert.equal("{not json", read(dir .. "/" .. names[1]))
  end)

  it("open: a file that cannot be read is kept aside too, never written over", function()
    local path = dir .. "/history.json"
    H.write(path, "{}")
    local unreadable = setmetatable({ read_file = function(p)
      return nil, p .. ": Permission denied", "EACCES"
    end }, { __index = H.core })
    local h, fresh_because, stuck = history.open(unreadable, path)
    assert.same(history.new(), h)
    assert.matches(": Permission denied; kept aside as .*%.corrupt%-.*; starting a fresh history$", fresh_because)
    assert.is_false(stuck)
    local names = H.core.listdir(dir)
    assert.equal(1, #names)
    assert.equal("{}", read(dir .. "/" .. names[1]))
  end)

  it("open and save_over: a bad file that cannot be kept aside is never written over", function()
    local path = dir .. "/history.json"
    H.write(path, "{not json")
    local cause = path .. ": keep aside: Permission denied"
    local no_aside = setmetatable({ keep_aside = function()
      return nil, cause
    end }, { __index = H.core })
    local h, fresh_because, stuck = history.open(no_aside, path)
    assert.truthy(fresh_because:find("could not keep it aside (" .. cause .. "), so it is not written over", 1, true))
    assert.is_true(stuck)
    local why, still = history.save_over(no_aside, path, h, stuck)
    assert.equal(path .. ": not saved: the file there could not be used, and could not be kept aside: " .. cause, why)
    assert.is_true(still)
    assert.equal("{not json", read(path))
    -- once it can be kept aside, it is, and the history is saved
    why, still = history.save_over(H.core, path, h, still)
    assert.matches("^" .. path:gsub("%p", "%%%0") .. ": the file that could not be used is kept aside as .*%.corrupt%-", why)
    assert.is_falsy(still)
    assert.same(history.new(), assert(history.load(H.core, path)))
    assert.equal(2, #H.core.listdir(dir))
    -- then saves are plain again
    assert.same({}, { history.save_over(H.core, path, h, still) })
  end)

  it("open: removes the temp files a killed writer left beside the file, and only those", function()
    local path = dir .. "/history.json"
    H.write(dir .. "/history.json.AbC123.tmp", "half")
    H.write(dir .. "/other.json.AbC123.tmp", "not ours")
    H.write(dir .. "/history.json.toolong1.tmp", "not a temp name")
    history.open(H.core, path)
    local names = H.core.listdir(dir)
    table.sort(names)
    assert.same({ "history.json.toolong1.tmp", "other.json.AbC123.tmp" }, names)
  end)

  it("refuses a history in a directory other users can write, and keeps a bad one aside", function()
    local shared = dir .. "/shared"
    assert(os.execute("mkdir -m 1777 " .. shared))
    local path = shared .. "/history.json"
    H.write(path, "{}")
    local h, why = history.load(H.core, path)
    assert.is_nil(h)
    assert.equal(path .. ": refused: the directory " .. shared .. " is writable by other users (mode 1777)", why)
    local ok, refused = history.save(H.core, path, history.new())
    assert.is_nil(ok)
    assert.truthy(refused:find("refused", 1, true))
    assert(os.execute("chmod 0700 " .. shared))
    assert(history.save(H.core, path, history.new()))
    local aside = assert(H.core.keep_aside(path))
    assert.truthy(aside:find(path .. ".corrupt-", 1, true) == 1)
    assert.same(history.new(), assert(history.load(H.core, path)))
  end)

  it("does not believe a record dated in the future (one was seen dated 2099)", function()
    local h = observe_all { at(0, "held") }
    local r = record(h)
    r.seen, r.since = "2099-01-01T00:00:00Z", "2099-01-01T00:00:00Z"
    assert.is_nil(since_of(h, at(15, "held")))
    history.observe(h, at(15, "held"), MAX_GAP)
    assert.equal(at(15, "held").at, record(h).since)
    r = record(h)
    r.since = "2099-01-01T00:00:00Z" -- since to come, seen now
    assert.is_nil(since_of(h, at(15, "held")))
    history.observe(h, at(30, "held"), MAX_GAP)
    assert.equal(at(30, "held").at, record(h).since)
  end)

  it("counts nothing of a negative or absurd counter in the file", function()
    local h = assert(history.decode([[{"schema":1,"gpus":{"GPU-a":{"state":"free","since":"2026-11-29T07:00:00Z",
      "seen":"2026-11-29T08:00:00Z","seconds":{"free":-5,"held":1e300}}},"jobs":{}}]]))
    assert.same({ free = 0, held = 0 }, h.gpus["GPU-a"].seconds)
  end)

  it("bounds the number of records: a file with too many is refused as a bad file, observing forgets the oldest", function()
    local saved = history.MAX_GPUS
    history.MAX_GPUS = 2
    local gpus = {}
    for i = 1, 3 do
      gpus[#gpus + 1] = string.format('"GPU-%d":{"state":"free","since":"2026-11-29T07:00:00Z","seen":"2026-11-29T07:0%d:00Z"}', i, i)
    end
    local text = '{"schema":1,"gpus":{' .. table.concat(gpus, ",") .. '},"jobs":{}}'
    local h, why = history.decode(text)
    assert.is_nil(h)
    assert.equal("3 gpu records, more than the 2 a history keeps", why)
    local path = dir .. "/many.json"
    H.write(path, text)
    local _, _, bad_file = history.load(H.core, path)
    assert.is_true(bad_file)
    h = history.new()
    for i = 1, 3 do
      h.gpus["GPU-" .. i] = { state = "free", since = H.ago(100 - i), seen = H.ago(100 - i), seconds = {}, uses = {} }
    end
    history.observe(h, H.ledger {}, MAX_GAP)
    history.MAX_GPUS = saved
    assert.is_nil(h.gpus["GPU-1"])
    assert.truthy(h.gpus["GPU-2"] and h.gpus["GPU-3"])
  end)

  it("reads older releases' files, null arrays included", function()
    local h = assert(history.decode([[{"schema":1,"gpus":{"GPU-a":{"node":"n","index":0,"state":"free",
      "since":"2026-11-29T07:00:00Z","seen":"2026-11-29T08:00:00Z","seconds":{"free":30},"uses":null}},"jobs":null}]]))
    assert.equal(30, h.gpus["GPU-a"].seconds.free)
    assert.same({}, h.gpus["GPU-a"].uses)
    assert.same({}, h.jobs)
  end)

  it("reports a directory it cannot write to", function()
    local blocked = dir .. "/file"
    H.write(blocked, "x")
    local ok, why = history.save(H.core, blocked .. "/history.json", history.new())
    assert.is_nil(ok)
    assert.truthy(why:find("history.json", 1, true))
  end)

  it("annotates ls and check from the file, and turns a corrupt one into a source error", function()
    local judge = require "gpuledger.judge"
    local path = dir .. "/history.json"
    local function judged(l)
      local loaded, why = history.load(H.core, path)
      return judge.judge(H.core, l, nil, nil, { record = loaded, error = why, max_gap = MAX_GAP }).ledger
    end
    history.save(H.core, path, observe_all { at(0, "held"), at(15, "held") })
    local l = judged(at(20, "held"))
    assert.equal(H.AT, l.entries[1].stateSince)
    assert.is_nil(l.errors)
    H.write(path, "{not json")
    l = judged(at(20, "held"))
    assert.is_nil(l.entries[1].stateSince)
    assert.equal(1, #l.errors)
    assert.truthy(l.errors[1]:find("^history: "))
  end)
end)

describe("history of a GPU in MIG mode", function()
  -- An H100 in MIG mode at H.AT + t: worker holds its 3g.40gb slice, infer reserved the 2c.4g.40gb one.
  local function mig_at(t)
    local clock = require "gpuledger.clock"
    local held = H.reservation { jobId = "worker" }
    local idle = H.reservation { jobId = "infer", allocId = "bbbbbbbb-2222" }
    return H.ledger({ H.gpu { index = 0, model = "NVIDIA H100 80GB HBM3", state = "held", migDevices = {
      { uuid = "MIG-a", index = 0, profile = "3g.40gb", state = "held", reservations = json.array { held },
        tenants = json.array { H.nomad_tenant() } },
      { uuid = "MIG-b", index = 1, profile = "2c.4g.40gb", state = "reserved-idle", reservations = json.array { idle },
        tenants = json.array() },
    } } }, { at = clock.format_time(clock.parse_time(H.AT) + t) })
  end

  it("counts a slice's seconds for its job as its share of the GPU's compute slices", function()
    local h = observe_all { mig_at(0), mig_at(35) }
    assert.near(35 * 3 / 7, h.jobs["video/worker"].held, 1e-9)
    assert.near(35 * 2 / 7, h.jobs["video/infer"].idle, 1e-9)
    assert.equal(0, h.jobs["video/worker"].idle)
  end)

  it("counts each job's GPU-seconds per slice too, as the slice's share", function()
    local h = observe_all { mig_at(0), mig_at(35) }
    assert.same({
      index = 0, uuid = H.UUID0, migUuid = "MIG-a", profile = "3g.40gb", namespace = "video", job = "worker",
      held = 35 * 3 / 7, idle = 0, seen = mig_at(35).at,
    }, h.slices["MIG-a video/worker"])
    assert.near(35 * 2 / 7, h.slices["MIG-b video/infer"].idle, 1e-9)
    assert.equal(0, h.slices["MIG-b video/infer"].held)
  end)

  it("counts a tenant without a reservation on a slice as the slice's share", function()
    local function on_slice(t)
      local l = mig_at(t)
      l.entries[1].migDevices[2].tenants = json.array { H.docker_tenant() }
      return l
    end
    local h = observe_all { on_slice(0), on_slice(14) }
    assert.near(14 * 2 / 7, h.tenants["unmanaged docker  ffmpeg-manual"].seconds, 1e-9)
  end)

  it("reads a slice's share from its profile", function()
    assert.near(1 / 7, history.slice_share("1g.10gb", "NVIDIA H100 80GB HBM3"), 1e-9)
    assert.near(2 / 4, history.slice_share("2g.12gb", "NVIDIA A30"), 1e-9)
    assert.equal(1, history.slice_share("odd", "NVIDIA H100 80GB HBM3"))
  end)
end)
