-- Shared builders for the specs: literal GPUs, tenants, reservations and
-- ledgers that read like the situation a spec tests, raw snapshot pieces for
-- the join, temporary site rule directories, and run_rules(), which judges a
-- ledger with the embedded rule set exactly as `gpuledger check` does.
local core = require "gpuledger.core"
local fleet = require "gpuledger.fleet"
local json = require "gpuledger.json"
local clock = require "gpuledger.clock"
local ledger_mod = require "gpuledger.ledger"
local ruleset = require "gpuledger.ruleset"
local judge = require "gpuledger.judge"
local luassert = require "luassert"

-- The host's setup, as the program makes it before any rule runs.
require("gpuledger.sandbox").setup()

local H = {}

H.core = core
H.AT = "2026-11-29T08:00:00Z"
H.UUID0 = "GPU-fef8089b-0c1d-4e2f-8a3b-5c6d7e8f9a01"
H.UUID1 = "GPU-ac81e44d-7b2c-4d3e-9f4a-1b2c3d4e5f60"
H.UUID2 = "GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52"
H.UUID3 = "GPU-61d0e8b3-9c2a-4f71-a5e4-0b3c6d8e2f93"
H.UUIDS = { [0] = H.UUID0, H.UUID1, H.UUID2, H.UUID3 }

-- The codes the default rules of the source tree's rules/ declare
-- (`code = "…"` in each rule file; the data files declare none), sorted:
-- what the embedded set must hold, read without the rule engine.
H.DEFAULT_CODES = {}
do
  local dir = os.getenv("GPULEDGER_SOURCE_DIR") .. "/rules"
  for _, name in ipairs(core.listdir(dir)) do
    if name:match("%.lua$") then
      local code = assert(core.read_file(dir .. "/" .. name, 1 << 20)):match('\n  code = "([%w%-]+)"')
      H.DEFAULT_CODES[#H.DEFAULT_CODES + 1] = code
    end
  end
end
table.sort(H.DEFAULT_CODES)

-- Crafted strings and the valid UTF-8 they are made (text.valid_utf8, and
-- json.encode inside a string): each byte that begins no valid character
-- (Lua's utf8.len tells them) replaced by U+FFFD, the rest kept.
do
  local R = "\u{FFFD}"
  H.UTF8_CASES = {
    ["\x80"] = R, -- a continuation byte alone
    ["\xbf\x80"] = R .. R,
    ["\xc3"] = R, -- a lead byte at the end
    ["\xe2\x82"] = R .. R, -- a character cut short
    ["\xe2\x82x"] = R .. R .. "x",
    ["\xf0\x9f\x98"] = R .. R .. R,
    ["\xc0\xaf"] = R .. R, -- overlong forms, at each length
    ["\xc1\xbf"] = R .. R,
    ["\xe0\x80\xaf"] = R .. R .. R,
    ["\xe0\x9f\xbf"] = R .. R .. R,
    ["\xf0\x8f\xbf\xbf"] = R .. R .. R .. R,
    ["\xed\xa0\x80"] = R .. R .. R, -- surrogates, first and last
    ["\xed\xbf\xbf"] = R .. R .. R,
    ["\xf4\x90\x80\x80"] = R .. R .. R .. R, -- past U+10FFFF
    ["\xf8\x88\x80\x80\x80"] = R .. R .. R .. R .. R, -- five bytes
    ["\xfe\xff"] = R .. R,
    ["a\xff<"] = "a" .. R .. "<",
    ["\xc3\xa9\xc3"] = "é" .. R,
    -- valid: each length at its bounds, kept as it is
    ["\0\x7f"] = "\0\x7f",
    ["\xc2\x80\xdf\xbf"] = "\u{80}\u{7FF}",
    ["\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"] = "\u{800}\u{D7FF}\u{E000}\u{FFFF}",
    ["\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"] = "\u{10000}\u{10FFFF}",
    ["\xef\xbf\xbd"] = R, -- U+FFFD itself
    [""] = "",
  }
end

-- Shallow merge of tables, later ones win.
local function merge(...)
  local out = {}
  for i = 1, select("#", ...) do
    for k, v in pairs(select(i, ...) or {}) do
      out[k] = v
    end
  end
  return out
end
H.merge = merge

-- RFC 3339 of H.AT minus `seconds`.
function H.ago(seconds)
  return clock.format_time(clock.parse_time(H.AT) - seconds)
end

---------------------------------------------------------------------------
-- Ledger-level literals (what ledger.build produces, what rules read).

-- The text of a file under testdata/.
function H.testdata(path)
  return assert(core.read_file(os.getenv("GPULEDGER_SOURCE_DIR") .. "/testdata/" .. path, 4 << 20))
end

-- A spawn_all for a fake core whose spawn(argv, opts) answers one
-- command: runs each command through fake.spawn, in order, and records
-- each round (the argv[2] of its commands) in fake.rounds.
function H.spawn_all_over(fake)
  fake.rounds = fake.rounds or {}
  return function(commands, opts)
    local round, results = {}, {}
    for i, argv in ipairs(commands) do
      round[i] = argv[2]
      local out, err, status = fake.spawn(argv, opts)
      results[i] = out and { out = out, err = err, status = status } or { error = err }
    end
    fake.rounds[#fake.rounds + 1] = round
    return results
  end
end

-- A fake core for the nvidia-smi collectors: its spawn answers by the key
-- key_of(argv) gives, from answers (stdout text, or {out, err, status};
-- a key with no answer fails to start), and records each key asked (calls),
-- the deadline each got (deadlines) and the last argv and options;
-- spawn_all asks spawn (H.spawn_all_over, recording rounds); its clock
-- stands at 5000 ms, and it parses CSV as the real core does.
function H.fake_nvidia_core(key_of, answers)
  local fake = { calls = {}, deadlines = {} }
  function fake.monotonic_ms()
    return 5000
  end
  function fake.spawn(argv, opts)
    local key = key_of(argv)
    fake.calls[#fake.calls + 1] = key
    fake.deadlines[#fake.deadlines + 1] = opts.deadline_ms
    fake.last_argv, fake.last_opts = argv, opts
    local answer = answers[key]
    if answer == nil then
      return nil, "exec: not supported by this fake"
    elseif type(answer) == "table" then
      return table.unpack(answer, 1, 3)
    end
    return answer, "", 0
  end
  fake.spawn_all = H.spawn_all_over(fake)
  fake.parse_csv = core.parse_csv
  return fake
end

-- One of a GPU's Xid groups as the ledger gives them (gpu.xids): seen once,
-- its meaning and action named after its code, unless fields say otherwise.
function H.xid(code, class, fields)
  return merge({ xid = code, count = 1, class = class, meaning = "meaning " .. code, action = "action " .. code,
    message = "m", processes = {} }, fields)
end

-- A GPU entry: a cool, empty NVIDIA L4 at index 0 unless fields say otherwise.
function H.gpu(fields)
  fields = fields or {}
  local index = fields.index or 0
  local gpu = merge({
    index = index,
    uuid = H.UUIDS[index] or string.format("GPU-%08x-0000-4000-8000-000000000000", index),
    model = "NVIDIA L4",
    busId = string.format("00000000:%02X:00.0", index + 1),
    memoryUsedMiB = 0,
    memoryTotalMiB = 23034,
    utilizationPct = 0,
    memoryUtilizationPct = 0,
    temperatureC = 40,
    powerW = 30.0,
    encoderSessions = 0,
    encoderAverageFps = 0.0,
  }, fields)
  gpu.reservations = json.array(fields.reservations or {})
  gpu.tenants = json.array(fields.tenants or {})
  gpu.state = fields.state or ledger_mod.classify(gpu)
  return gpu
end

-- Text fields a tenant may lack: a builder given `false` for one leaves it out.
local OPTIONAL_TEXT = { "container", "containerId", "image", "allocId", "jobName", "taskName", "namespace" }

local function tenant(kind, fields)
  local t = merge({ kind = kind, usedMemoryMiB = 0, reserved = false, allocVisible = false }, fields)
  for _, key in ipairs(OPTIONAL_TEXT) do
    if t[key] == false then
      t[key] = nil
    end
  end
  t.pids = json.array(fields and fields.pids or {})
  t.processes = json.array(fields and fields.processes or {})
  return t
end

-- A Nomad task (reserved and visible unless fields say otherwise).
function H.nomad_tenant(fields)
  return tenant("nomad", merge({
    container = "worker-4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e",
    containerId = "aaaaaaaaaaaa",
    image = "registry.example/video/worker:1",
    allocId = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e",
    jobName = "worker", taskName = "worker", namespace = "video",
    reserved = true, allocVisible = true,
    pids = { 4242 }, processes = { "ffmpeg" }, usedMemoryMiB = 1024,
  }, fields))
end

-- A container outside Nomad.
function H.docker_tenant(fields)
  return tenant("docker", merge({
    container = "ffmpeg-manual", containerId = "bbbbbbbbbbbb", image = "jrottenberg/ffmpeg:6.1",
    pids = { 5151 }, processes = { "ffmpeg" }, usedMemoryMiB = 2048,
  }, fields))
end

-- Processes outside any container.
function H.host_tenant(fields)
  return tenant("host", merge({ pids = { 6060 }, processes = { "python3" }, usedMemoryMiB = 48 }, fields))
end

-- A Nomad reservation of GPU(s).
function H.reservation(fields)
  local r = merge({
    allocId = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e", jobId = "worker", taskGroup = "worker",
    task = "w", namespace = "video", clientStatus = "running",
  }, fields)
  r.deviceIds = json.array(fields and fields.deviceIds or { H.UUID0 })
  return r
end

-- A ledger of entries (Nomad read, no errors, at H.AT unless fields say),
-- its tenants with their verdicts as ledger.build gives them.
function H.ledger(entries, fields)
  local l = merge({ schema = 1, node = "gpud", at = H.AT, nomadRead = true }, fields)
  l.entries = json.array(entries or {})
  if fields and fields.errors then
    l.errors = json.array(fields.errors)
  end
  ledger_mod.give_verdicts(l)
  return l
end

---------------------------------------------------------------------------
-- Judging.

-- The rule set of dir compiled here, as specs of the engine inspect it,
-- with the sources it came from (set.sources), which H.run_rules judges as
-- the program does.
local function loaded(dir)
  local sources = ruleset.read(core, dir)
  local set = ruleset.compile(core, sources)
  set.sources = sources
  return set
end

-- The embedded rule set (or a site directory's, see H.site_rules).
function H.rule_set(dir)
  return loaded(dir or "")
end

-- The policy of set (default: embedded) with the choices given over its
-- thresholds ({encoder_max = 8, idle = false}: as rules read them).
function H.policy(given, set)
  return judge.policy(set or H.rule_set(), given)
end

-- A deep copy of value, each GPU's healthVerdict left out (the judge gives
-- it once every rule has run).
local function without_verdicts(value)
  if type(value) ~= "table" then
    return value
  end
  local copy = {}
  for k, v in pairs(value) do
    if k ~= "healthVerdict" then
      copy[k] = without_verdicts(v)
    end
  end
  return copy
end

-- Judges ledger (or a snapshot) with the rule set (H.rule_set, H.site_rules;
-- default: embedded) as `gpuledger check` does (judge.judge: site files in
-- children), the choices given over its thresholds. Returns the findings,
-- the worst level and the whole report. Asserts that the rules left the
-- ledger as they found it: the embedded rules read the ledger itself, not a
-- read-only view (findings.run), so every rule spec checks that none writes.
function H.run_rules(ledger, given, set)
  local sources = set and set.sources or ruleset.read(core, "")
  ledger = judge.ledger_of(ledger, judge.data(core, sources)[1].xid_catalogue)
  local before = without_verdicts(ledger)
  local report = judge.judge(core, ledger, sources, given)
  luassert.same(before, without_verdicts(report.ledger), "the rules changed the ledger they judged")
  return report.findings, report.worst, report
end

-- The findings of `code` when judging a ledger of these GPUs (rule specs),
-- the choices given (as the command line's flags give them) over the
-- thresholds; second, all findings.
function H.rule_judged(code, entries, given, thresholds, ledger_fields)
  local found = H.run_rules(H.ledger(entries, ledger_fields), merge(thresholds, given))
  return H.with_code(found, code), found
end

-- The one finding of `code` (asserts there is exactly one).
function H.rule_one(code, entries, given, thresholds, ledger_fields)
  local found = H.rule_judged(code, entries, given, thresholds, ledger_fields)
  luassert.equal(1, #found, code)
  return found[1]
end

-- Asserts there is no finding of `code`.
function H.rule_none(code, entries, given, thresholds, ledger_fields)
  local found = H.rule_judged(code, entries, given, thresholds, ledger_fields)
  luassert.same({}, found)
end

-- A random string of up to 8 pieces, each picked by random (math.random's
-- interface) from the list pieces.
function H.random_string(random, pieces)
  local parts = {}
  for i = 1, random(0, 8) do
    parts[i] = pieces[random(#pieces)]
  end
  return table.concat(parts)
end

-- Whether a and b hold the same values, table by table (a table in two
-- places compared in each), and each table of one is json.array()-marked
-- when the other's is: for checking a rewrite against the rule it replaced.
function H.same_tree(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then
    return a == b
  end
  if json.is_array(a) ~= json.is_array(b) then
    return false
  end
  for k, v in next, a do
    if not H.same_tree(v, rawget(b, k)) then
      return false
    end
  end
  for k in next, b do
    if rawget(a, k) == nil then
      return false
    end
  end
  return true
end

-- Asserts needle is in haystack (plain text).
function H.contains(needle, haystack)
  luassert.truthy(haystack:find(needle, 1, true), string.format("%q not in %q", needle, haystack))
end

-- The findings of one code.
function H.with_code(found, code)
  local out = {}
  for _, f in ipairs(found) do
    if f.code == code then
      out[#out + 1] = f
    end
  end
  return out
end

-- "LEVEL code where" for each finding, for whole-list comparisons.
function H.summary(found)
  local out = {}
  for i, f in ipairs(found) do
    out[i] = string.format("%s %s %s", f.level, f.code, f.gpu or "node")
  end
  return out
end

---------------------------------------------------------------------------
-- Snapshot-level literals (raw source answers, what ledger.build reads).

-- A row of the main nvidia-smi query (12 strings).
function H.smi_row(fields)
  fields = fields or {}
  local index = fields.index or 0
  return {
    tostring(index), fields.uuid or H.UUIDS[index], fields.name or "NVIDIA L4",
    fields.bus or string.format("00000000:%02X:00.0", index + 1),
    fields.used or "0", fields.total or "23034", fields.util or "0", fields.memutil or "0",
    fields.temp or "40", fields.power or "30.5", fields.sessions or "0", fields.fps or "0",
  }
end

-- A compute-apps row.
function H.app(uuid, pid, mib, name)
  return { uuid, tostring(pid), tostring(mib), name or "ffmpeg" }
end

-- A Docker inspect answer.
function H.container(fields)
  local labels = fields.labels or {}
  local env = fields.env or {}
  return {
    Id = fields.id,
    Name = fields.name and ("/" .. fields.name) or nil,
    Config = { Image = fields.image or "busybox", Labels = labels, Env = env },
    HostConfig = { DeviceRequests = fields.requests or {} },
  }
end

-- Nomad labels of a task's container.
function H.nomad_labels(alloc, job, task, namespace)
  return {
    ["com.hashicorp.nomad.alloc_id"] = alloc,
    ["com.hashicorp.nomad.job_name"] = job,
    ["com.hashicorp.nomad.task_name"] = task,
    ["com.hashicorp.nomad.namespace"] = namespace,
  }
end

-- A Nomad allocation whose `task` reserved the GPUs `ids` (nil: no devices).
function H.alloc(fields)
  local tasks = {}
  for task, ids in pairs(fields.tasks or {}) do
    local devices = {}
    if ids ~= false then
      devices[1] = { Vendor = fields.vendor or "nvidia", Type = fields.type or "gpu", Name = "NVIDIA L4", DeviceIDs = ids }
    end
    tasks[task] = { Devices = devices }
  end
  local resources = { Tasks = tasks }
  if fields.no_resources then
    resources = nil
  end
  return {
    ID = fields.id, JobID = fields.job or "worker", Namespace = fields.namespace or "video",
    TaskGroup = fields.group or fields.job or "worker", ClientStatus = fields.status or "running",
    AllocatedResources = resources,
  }
end

-- A whole snapshot. parts: gpus (rows), apps (rows), pids ({[pid]=container
-- id, or the proc source's whole record of the pid}), containers, podman
-- (containers), allocations (nil: --no-nomad), failed ({source = error}),
-- errors.
function H.snapshot(parts)
  local sources = {}
  sources.nvidia = {
    ok = true, binary = "nvidia-smi",
    query_gpu = { fields = {}, rows = parts.gpus or { H.smi_row() } },
    compute_apps = parts.apps_error and { error = parts.apps_error } or { fields = {}, rows = parts.apps or {} },
  }
  -- A pid given by its container id is in the container's own cgroup, and the
  -- first such pid is the container's main process unless it has one.
  local pids, main_of = {}, {}
  for pid, id in pairs(parts.pids or {}) do
    pids[tostring(pid)] = type(id) == "table" and id
      or { container_id = id, runtime = "docker", container_cgroup = "0::/system.slice/docker-" .. id .. ".scope" }
    if type(id) == "string" and (main_of[id] or math.huge) > pid then
      main_of[id] = pid
    end
  end
  for _, container in ipairs((parts.containers or {})) do
    container.State = container.State or { Pid = main_of[container.Id] }
  end
  for _, container in ipairs((parts.podman or {})) do
    container.State = container.State or { Pid = main_of[container.Id] }
  end
  sources.proc = { ok = true, root = "/proc", pids = pids }
  if parts.containers then
    sources.docker = { ok = true, endpoint = "unix:///var/run/docker.sock", containers = parts.containers }
  end
  if parts.podman then
    sources.podman = { ok = true, endpoint = "unix:///run/podman/podman.sock", containers = parts.podman }
  end
  if parts.allocations then
    sources.nomad = { ok = true, node_id = "node-1", allocations = parts.allocations }
  end
  for name, err in pairs(parts.failed or {}) do
    sources[name] = { ok = false, error = err }
  end
  return { schema = 1, kind = "gpuledger-snapshot", node = "gpud", at = H.AT, sources = sources, errors = parts.errors }
end

-- A 64-hex container id made of one repeated character.
function H.cid(c)
  return string.rep(c, 64)
end

---------------------------------------------------------------------------
-- Temporary directories (site rules).

function H.tempdir()
  local handle = assert(io.popen("mktemp -d /tmp/gpuledger-spec.XXXXXX"))
  local dir = handle:read("l")
  handle:close()
  return dir
end

function H.write(path, content)
  local f = assert(io.open(path, "w"))
  f:write(content)
  f:close()
end

function H.remove(dir)
  if dir and dir:match("^/tmp/gpuledger%-spec%.") then
    os.execute("rm -rf '" .. dir .. "'")
  end
end

-- Loads the rule set with `files` ({name = text}) as the site rules
-- directory, the way the program does. Returns the set and the directory
-- (removed afterwards).
function H.site_rules(files)
  local dir = H.tempdir()
  for name, text in pairs(files) do
    H.write(dir .. "/" .. name, text)
  end
  local ok, set = pcall(loaded, dir)
  H.remove(dir)
  assert(ok, set)
  return set, dir
end

-- How people read a rule set's error (errors.lua).
H.error_text = require("gpuledger.errors").text

-- The rule of a set by code.
function H.rule(set, code)
  for _, r in ipairs(set.rules) do
    if r.code == code then
      return r
    end
  end
end

-- True when the codes of list appear in codes (a list of codes) in that
-- order, whatever else codes holds between them.
function H.in_order(list, codes)
  local at = 0
  for _, code in ipairs(codes) do
    if code == list[at + 1] then
      at = at + 1
    end
  end
  return at == #list
end

-- True when rows (rules or judge.rules' rows, in listing order) come as
-- ruleset.codes lists them: those with a rank first, lowest first, then
-- the others, by code within a rank.
function H.listing_order(rows)
  for i = 2, #rows do
    local a, b = rows[i - 1], rows[i]
    local rank_a, rank_b = a.rank or math.huge, b.rank or math.huge
    if rank_a > rank_b or (rank_a == rank_b and a.code >= b.code) then
      return false
    end
  end
  return true
end

-- The tenancy codes in their listing order: who is on a GPU.
H.TENANCY_ORDER = { "source-unavailable", "unreserved-tenant", "unmanaged-tenant", "contended", "reserved-idle",
  "encoder-saturated", "hot", "idle", "held" }

-- Shuffles an array in place (deterministic per seed).
function H.shuffle(t, seed)
  local state = seed
  for i = #t, 2, -1 do
    state = (state * 1103515245 + 12345) % 2147483648
    local j = state % i + 1
    t[i], t[j] = t[j], t[i]
  end
  return t
end

---------------------------------------------------------------------------
-- The fleet (fleet.lua, its renderers).

-- A ledger as it comes off the wire: encoded, decoded, made readable.
function H.wire_ledger(ledger)
  return assert(fleet.readable(assert(json.decode(json.encode(ledger))), "http://test:9877/ledger"))
end

-- The fleet row of gpum (http://gpum:9877): a GPU in MIG mode whose 3g.40gb
-- slice worker holds and whose 2g.20gb slice is free, beside a free GPU.
function H.mig_node_row()
  local ledger = H.wire_ledger(H.ledger({ H.gpu { index = 0, migDevices = {
    { uuid = "MIG-a", index = 0, profile = "3g.40gb", memoryUsedMiB = 1024, memoryTotalMiB = 40448,
      reservations = json.array { H.reservation() }, tenants = json.array { H.nomad_tenant() } },
    { uuid = "MIG-b", index = 1, profile = "2g.20gb", memoryUsedMiB = 0, memoryTotalMiB = 20096,
      reservations = json.array(), tenants = json.array() },
  } }, H.gpu { index = 1 } }, { node = "gpum" }))
  return fleet.node_row({ node = "gpum", url = "http://gpum:9877" }, ledger)
end

-- gpud: one held GPU and one reserved-idle; gpue: an unmanaged tenant and a
-- free GPU; the row of one unreachable node.
function H.fleet_rows()
  local gpud = H.wire_ledger(H.ledger({
    H.gpu { index = 0, memoryUsedMiB = 1024, reservations = { H.reservation { jobId = "restreamer", namespace = "",
      allocId = "11111111-aaaa", deviceIds = { H.UUID0 } } },
      tenants = { H.nomad_tenant { allocId = "11111111-aaaa", jobName = "restreamer" } } },
    H.gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } } },
  }, { node = "gpud" }))
  local gpue = H.wire_ledger(H.ledger({
    H.gpu { index = 0, memoryUsedMiB = 2048, tenants = { H.docker_tenant() } },
    H.gpu { index = 1 },
  }, { node = "gpue" }))
  return {
    fleet.node_row({ node = "10.0.0.5", url = "http://10.0.0.5:9877" }, gpue),
    fleet.unreachable_row({ node = "gpuz", url = "http://10.0.0.9:9877" }, "Connection refused"),
    fleet.node_row({ node = "10.0.0.4", url = "http://10.0.0.4:9877" }, gpud),
  }, { gpud = gpud, gpue = gpue }
end

-- The summary of H.fleet_rows() (with unreachable_only, of its unreachable
-- gpuz alone) and the built ledger of each row read: H.judge_fleet's input.
function H.fleet_input(unreachable_only)
  local rows, wire = H.fleet_rows()
  if unreachable_only then
    rows = { rows[2] }
  end
  local summary = fleet.summarise(rows)
  local ledgers = {}
  for _, row in ipairs(summary.nodes) do
    if not row.error then
      ledgers[row] = judge.ledger_of(wire[row.node])
    end
  end
  return summary, ledgers
end

-- judge.fleet of summary, each row's ledger (ledgers, by row: H.fleet_input)
-- given to the judging in the summary's order, as fleet's read gives them
-- as they arrive; with sources (ruleset.read), extra_errors, keep (what is
-- kept of each node's findings: judge.fleet_judging).
function H.judge_fleet(sources, summary, ledgers, extra_errors, keep)
  local judging = judge.fleet_judging(H.core, sources, {}, keep)
  for _, row in ipairs(summary.nodes) do
    if ledgers[row] then
      judging.node(row, ledgers[row])
    end
  end
  return judge.fleet(judging, summary, extra_errors)
end

-- The summary of H.fleet_rows() and its findings, each node judged by the
-- embedded rules, each row with its verdict, worst first (judge.fleet_verdicts).
function H.fleet_judged()
  local list, ledgers = H.fleet_rows()
  local summary = fleet.summarise(list)
  local node_findings = {}
  for _, row in ipairs(summary.nodes) do
    if not row.error then
      node_findings[row] = H.run_rules(ledgers[row.node])
    end
  end
  return summary, judge.fleet_verdicts(summary, node_findings)
end

-- core.http_get_many over a fake core's http_get(url, request), which
-- answers one request at a time: the requests in turn, each(index, result)
-- hearing every one and adding the requests it returns, as the real one
-- does; without each, the results in order.
function H.http_get_many_over(fake)
  return function(requests, opts)
    local queue, results = {}, {}
    for i, request in ipairs(requests) do
      queue[i] = request
    end
    local i = 1
    while queue[i] do
      local status, body, content_type = fake.http_get(queue[i].url, queue[i])
      local result = status and { status = status, body = body, content_type = content_type } or { error = body }
      if opts.each then
        for _, more in ipairs(opts.each(i, result) or {}) do
          queue[#queue + 1] = more
        end
      else
        results[i] = result
      end
      i = i + 1
    end
    return not opts.each and results or nil
  end
end

-- Runs f() with io.stderr captured; returns what it wrote there and f's
-- first result (an error in f is raised again, stderr restored).
function H.stderr_of(f)
  local said = {}
  local saved = io.stderr
  io.stderr = {
    write = function(self, ...)
      for i = 1, select("#", ...) do
        said[#said + 1] = tostring((select(i, ...)))
      end
      return self
    end,
    flush = function() end,
  }
  local ok, result = pcall(f)
  io.stderr = saved
  assert(ok, result)
  return table.concat(said), result
end

-- What write_report(report, write) writes (render/json.lua's or render/table.lua's), as one
-- text, and the number of parts it was written in.
function H.written(write_report, report)
  local parts = {}
  write_report(report, function(part)
    parts[#parts + 1] = part
  end)
  return table.concat(parts), #parts
end

-- The report report.builder makes of answers, each a list of samples
-- ({jobs = samples, nodes = samples, unreserved = samples, slices =
-- samples}; any may be absent), over the window since, made at at.
function H.report_of(answers, since, at)
  local builder = require("gpuledger.report").builder()
  for answer, samples in pairs(answers) do
    for _, sample in ipairs(samples) do
      builder.add(answer, sample)
    end
  end
  return builder.report(since, at)
end

return H
