-- Fuzz: mutated snapshots — a field of the demo node's sources
-- replaced by a value of another JSON type, or removed — and mutated API
-- answers — a field of an engine's, Nomad's or the journal's JSON answer
-- replaced so, a number in a text answer (/dev/kmsg, dmesg, nvidia-smi's
-- CSV) replaced by an odd one, or nvidia-smi's -L and -q (the MIG source)
-- with a line dropped, doubled or made hostile, or cut short — then read as
-- the collectors read them — go
-- through the whole pipeline (ledger, the embedded rules, every renderer)
-- without an internal error: a wrong type is a source error, never a crash.
-- A few hundred cases per run with a fixed seed; a long run:
--   GPULEDGER_FUZZ_CASES=20000 GPULEDGER_FUZZ_SEED=7 busted spec/fuzz_spec.lua
-- (the environment of tests/CMakeLists.txt's lua-specs; about six minutes
-- for 20000 cases of each test on a shared core).
local H = require "helper"
local clock = require "gpuledger.clock"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local docker = require "gpuledger.sources.docker"
local collect_mig = require "gpuledger.collect.mig"
local kernel_log = require "gpuledger.sources.kernel_log"
local source_list = require "gpuledger.sources.list"
local nomad = require "gpuledger.sources.nomad"
local nomad_node = require "gpuledger.sources.nomad_node"
local snapshot = require "gpuledger.snapshot"

local CASES = tonumber(os.getenv("GPULEDGER_FUZZ_CASES")) or 300
local SEED = tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 10

-- Values of every JSON type, and a few that broke parsers before.
local REPLACEMENTS = {
  function() return -1 end,
  function() return 1.5 end,
  function() return "x" end,
  function() return "GPU-x" end,
  function() return true end,
  function() return {} end,
  function() return json.array() end,
  function() return { 1, 2 } end,
  function() return { 5 } end,
  function() return { x = "y" } end,
  function() return ("a"):rep(300) end,
  function() return nil end,
}

-- Every (table, key) under t, depth first, keys in order (so that a seed
-- always gives the same cases).
local function slots(t, out)
  local keys = {}
  for key in pairs(t) do
    keys[#keys + 1] = key
  end
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, key in ipairs(keys) do
    out[#out + 1] = { t, key }
    if type(t[key]) == "table" then
      slots(t[key], out)
    end
  end
  return out
end

-- answer (a JSON value) with one field replaced by a value of another type,
-- or removed.
local function mutated_json(answer, random)
  local all = slots(answer, {})
  local slot = all[random(#all)]
  slot[1][slot[2]] = REPLACEMENTS[random(#REPLACEMENTS)]()
  return answer
end

-- The demo snapshot with one field (or, sometimes, two) replaced, in the
-- answer of any source it has (sources/list.lua), each checked where it
-- enters (sources/shape.lua: the source shapes of sources/list.lua, and one
-- by one the containers, allocations, health rows, kernel log records and
-- Nomad's devices).
local function mutated(text, random)
  local snap = json.decode(text)
  for _ = 1, random(2) do
    local fuzzed = {}
    for _, name in ipairs(source_list.NAMES) do
      fuzzed[name] = snap.sources[name]
    end
    mutated_json(fuzzed, random)
  end
  return snap
end

-- A generator of its own (math.random is shared with the code under test):
-- seeded(seed)(n) → 1..n, the same sequence for the same seed.
local function seeded(seed)
  local state = seed
  return function(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n + 1
  end
end

-- Runs a snapshot through the whole pipeline; returns nil or the error.
local function through_pipeline(snap)
  local ok, why = xpcall(function()
    local report = select(3, H.run_rules(judge.judge(H.core, snap).ledger))
    require("gpuledger.render.table").ls(report.ledger)
    require("gpuledger.render.table").check(report)
    require("gpuledger.render.json").ledger(report.ledger)
    require("gpuledger.render.json").findings(report)
    require("gpuledger.render.metrics").node(report, nil)
    require("gpuledger.render.html").node(report, { interval = 15, version = "fuzz" })
  end, debug.traceback)
  return not ok and why or nil
end

-- A tally of the cases that failed: add(label, why) counts a why that is
-- not nil, keeping the first five; assert_none() fails with them.
local function tally()
  local failures, first = 0, {}
  return {
    add = function(label, why)
      if why then
        failures = failures + 1
        if #first < 5 then
          first[#first + 1] = string.format("%s: %s", label, tostring(why))
        end
      end
    end,
    assert_none = function()
      assert.equal(0, failures, table.concat(first, "\n"))
    end,
  }
end

describe("fuzz: mutated snapshots", function()
  it(string.format("go through the whole pipeline without an internal error (%d cases, seed %d)", CASES, SEED), function()
    local text = json.encode(snapshot.demo(H.core))
    local generator = seeded(SEED)
    local failed = tally()
    for case = 1, CASES do
      failed.add(string.format("case %d", case), through_pipeline(mutated(text, generator)))
    end
    failed.assert_none()
  end)
end)

-- The demo snapshot after change(sources), built into a ledger.
local function ledger_after(change)
  local snap = json.decode(json.encode(snapshot.demo(H.core)))
  change(snap.sources)
  return judge.judge(H.core, snap).ledger
end

describe("wrong JSON types", function()
  local WRONG = {
    { "Config.Env: -1", "docker", function(s) s.docker.containers[1].Config.Env = -1 end, "Config.Env is a number, want a list" },
    { 'Config.Labels: "x"', "docker", function(s) s.docker.containers[1].Config.Labels = "x" end, "Config.Labels is a string, want an object" },
    { "DeviceRequests: [1,2]", "docker", function(s) s.docker.containers[1].HostConfig.DeviceRequests = { 1, 2 } end, "HostConfig.DeviceRequests[1] is a number, want an object" },
    { "Devices: [5]", "nomad", function(s)
      for _, task in pairs(s.nomad.allocations[1].AllocatedResources.Tasks) do
        task.Devices = { 5 }
      end
    end, "Devices[1] is a number, want an object" },
    { 'DeviceIDs: "GPU-x"', "nomad", function(s)
      for _, task in pairs(s.nomad.allocations[1].AllocatedResources.Tasks) do
        task.Devices[1].DeviceIDs = "GPU-x"
      end
    end, "DeviceIDs is a string, want a list" },
    { "a MIG slice's memory of 1.5 MiB", "mig", function(s) s.mig.gpus[1].devices[1].memoryTotalMiB = 1.5 end,
      "devices[1].memoryTotalMiB is 1.5, want a whole number" },
    { "a GPU index as a number in a replay", "nvidia", function(s) s.nvidia.query_gpu.rows[1][1] = 0 end, "nvidia.query_gpu.rows[1][1] is a number, want a string" },
    { "a GPU in MIG mode without its slices", "mig", function(s) s.mig.gpus[1].devices = nil end,
      "mig.gpus[1].devices is missing, want a list" },
  }
  for _, case in ipairs(WRONG) do
    it(case[1] .. " is a source error naming the source and the field; the rest of the ledger stays", function()
      local l = ledger_after(case[3])
      local found
      for _, err in ipairs(l.errors or {}) do
        found = found or (err:find(case[2], 1, true) and err:find(case[4], 1, true) and err)
      end
      assert.truthy(found, "errors: " .. json.encode(l.errors or {}))
      if case[2] ~= "nvidia" then
        assert.equal(5, #l.entries)
      end
    end)
  end

  it("an engine's answer with a wrong type is reduced to its id and why, never raising", function()
    local reduced = docker.reduce { Id = "abc", Config = { Env = -1 } }
    assert.same({ Id = "abc", Unreadable = "container.Config.Env is a number, want a list" }, reduced)
    reduced = nomad.reduce { ID = "a1", AllocatedResources = { Tasks = { t = { Devices = { 5 } } } } }
    assert.same({ ID = "a1", Unreadable = "allocation.AllocatedResources.Tasks.t.Devices[1] is a number, want an object" }, reduced)
  end)
end)

-- Odd texts for a number in a text answer: too big for an integer, out of
-- RFC 3339's years once a time, and forms a parser might take for a number.
local ODD_NUMBERS = { "99999999999999999999999", "1e999", "-1", "0x1F", "", "1.5", "nan" }

-- text with one of its runs of digits (picked with random) replaced by an
-- odd number.
local function mutated_text(text, random)
  local runs = select(2, text:gsub("%d+", "%0"))
  local target, odd, seen = random(runs), ODD_NUMBERS[random(#ODD_NUMBERS)], 0
  return (text:gsub("%d+", function(run)
    seen = seen + 1
    return seen == target and odd or run
  end))
end

-- Lines a hostile nvidia-smi -L or -q might print: a MIG device before any
-- GPU, a GPU or a slice without its UUID, ids out of range, bytes that are
-- no text, a line far too long.
local HOSTILE_LINES = {
  "  MIG 1g.10gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000000)",
  "GPU 9: NVIDIA H100 80GB HBM3 (UUID: )", "  MIG 3g.40gb     Device 99999999999999999999: (UUID: MIG-x)",
  "    MIG Device", "        GPU instance ID                   : -1", "        Process ID                        : 1e999",
  "GPU 00000000:C1:00.0", "\0\255\254\r", ("x"):rep(70000),
}

-- text (an nvidia-smi -L or -q answer) mutated one way of several, picked
-- with random: a number made odd (mutated_text), a line dropped, doubled or
-- replaced by a hostile one, or the text cut short anywhere.
local function mutated_lines(text, random)
  local way = random(5)
  if way == 1 then
    return mutated_text(text, random)
  elseif way == 5 then
    return text:sub(1, random(#text))
  end
  local lines = {}
  for line in text:gmatch("[^\n]*") do
    lines[#lines + 1] = line
  end
  local at = random(#lines)
  if way == 2 then
    table.remove(lines, at)
  elseif way == 3 then
    table.insert(lines, at, lines[at])
  else
    lines[at] = HOSTILE_LINES[random(#HOSTILE_LINES)]
  end
  return table.concat(lines, "\n")
end

-- The demo's mig source as collect/mig.lua makes it when nvidia-smi answers
-- flag (-L or -q) with text and the other as the demo node does
-- (testdata/nvidia/demo-mig): a source the driver could not be read from
-- must name the query that failed.
local function mig_source(sources, flag, text)
  local answers = { ["-L"] = H.testdata("nvidia/demo-mig/list.txt"), ["-q"] = H.testdata("nvidia/demo-mig/query.txt") }
  answers[flag] = text
  local core = H.fake_nvidia_core(function(argv) return argv[2] end, answers)
  local source = collect_mig.collect(core, "nvidia-smi", sources.health.health, 10000)
  if source and not source.ok and not source.error:find("^nvidia%-smi %-[Lq]: ") then
    error("a mig source error that names no query: " .. tostring(source.error))
  end
  sources.mig = source
end

-- The reduced answers of those that are objects, as the collectors keep them.
local function reduced_each(answers, reduce)
  local kept = json.array()
  for _, answer in ipairs(answers) do
    if type(answer) == "table" then
      kept[#kept + 1] = reduce(answer)
    end
  end
  return kept
end

-- Nomad's node answer (docs/sources.md#nomad) that groups were reduced from.
local function node_answer(groups)
  local devices = {}
  for i, group in ipairs(groups) do
    local instances = {}
    for j, instance in ipairs(group.Instances) do
      instances[j] = {
        ID = instance.ID, Healthy = instance.Healthy, HealthDescription = instance.HealthDescription,
        Locality = { PciBusID = instance.PciBusID },
      }
    end
    devices[i] = { Vendor = "nvidia", Type = "gpu", Name = group.Name, Instances = instances }
  end
  return { ID = "f7476465-4d6e-c0de-26d0-e383c49be941", NodeResources = { Devices = devices } }
end

-- nvidia-smi's CSV answer (--format=csv,noheader) that rows were read from.
local function csv_of(rows)
  local lines = {}
  for i, row in ipairs(rows) do
    lines[i] = table.concat(row, ", ")
  end
  return table.concat(lines, "\n") .. "\n"
end

-- The boot the kernel log readers date records from: a day before the demo.
local BOOT = clock.parse_time(H.AT) - 86400

-- The raw answers the fuzz mutates: each as its collector gets it (from the
-- demo snapshot, or a kernel log fixture), how it is mutated, and how the
-- collector keeps what it read in the snapshot's sources.
local ANSWERS = {
  { name = "docker inspects", mutate = mutated_json,
    answer = function(demo) return demo.sources.docker.containers end,
    keep = function(sources, answers) sources.docker.containers = reduced_each(answers, docker.reduce) end },
  { name = "Nomad allocations", mutate = mutated_json,
    answer = function(demo) return demo.sources.nomad.allocations end,
    keep = function(sources, answers) sources.nomad.allocations = reduced_each(answers, nomad.reduce) end },
  { name = "Nomad's node", mutate = mutated_json,
    answer = function(demo) return node_answer(demo.sources.nomad_devices.devices) end,
    keep = function(sources, node) sources.nomad_devices.devices = nomad_node.reduce(node) end },
  { name = "journal entries", mutate = mutated_json,
    answer = function()
      local entries = {}
      for line in H.testdata("kernel-log/journal.json"):gmatch("[^\n]+") do
        entries[#entries + 1] = json.decode(line)
      end
      return entries
    end,
    keep = function(sources, entries)
      local lines = {}
      for i, entry in ipairs(entries) do
        lines[i] = json.encode(entry)
      end
      sources.kernel_log.records = kernel_log.read_all("journal", table.concat(lines, "\n")) or json.array()
    end },
  { name = "/dev/kmsg records", mutate = mutated_text,
    answer = function() return H.testdata("kernel-log/kmsg.txt") end,
    keep = function(sources, text) sources.kernel_log.records = kernel_log.read_all("kmsg", text, BOOT) end },
  { name = "dmesg lines", mutate = mutated_text,
    answer = function() return H.testdata("kernel-log/dmesg.txt") end,
    keep = function(sources, text) sources.kernel_log.records = kernel_log.read_all("file", text, BOOT) end },
  { name = "nvidia-smi health CSV", mutate = mutated_text,
    answer = function(demo) return csv_of(demo.sources.health.health.rows) end,
    keep = function(sources, text) sources.health.health.rows = H.core.parse_csv(text) or json.array() end },
  { name = "nvidia-smi -L", mutate = mutated_lines,
    answer = function() return H.testdata("nvidia/demo-mig/list.txt") end,
    keep = function(sources, text) mig_source(sources, "-L", text) end },
  { name = "nvidia-smi -q", mutate = mutated_lines,
    answer = function() return H.testdata("nvidia/demo-mig/query.txt") end,
    keep = function(sources, text) mig_source(sources, "-q", text) end },
}

describe("fuzz: mutated API answers", function()
  it(string.format("are read into a snapshot that goes through the whole pipeline without an internal error (%d cases, seed %d)",
    CASES, SEED), function()
    local text = json.encode(snapshot.demo(H.core))
    local demo = json.decode(text)
    local answers = {} -- each as JSON text, so that each case mutates a fresh copy
    for i, kind in ipairs(ANSWERS) do
      answers[i] = json.encode(kind.answer(demo))
    end
    local generator = seeded(SEED)
    local failed = tally()
    for case = 1, CASES do
      local i = case % #ANSWERS + 1
      local kind, snap = ANSWERS[i], json.decode(text)
      local ok, why = xpcall(function()
        kind.keep(snap.sources, kind.mutate(json.decode(answers[i]), generator))
      end, debug.traceback)
      failed.add(string.format("case %d (%s)", case, kind.name), not ok and why or through_pipeline(snap))
    end
    failed.assert_none()
  end)
end)

describe("hostile nvidia-smi -L and -q", function()
  -- The demo node judged with its mig source collected from this -L or -q.
  local function judged(flag, text)
    local snap = json.decode(json.encode(snapshot.demo(H.core)))
    mig_source(snap.sources, flag, text)
    local findings, _, report = H.run_rules(snap)
    return report.ledger, findings
  end
  -- The source-unavailable findings about the GPU in MIG mode (gpu4).
  local function unavailable_on_gpu4(findings)
    local found = {}
    for _, f in ipairs(findings) do
      if f.code == "source-unavailable" and f.index == 4 then
        found[#found + 1] = f.message
      end
    end
    return found
  end
  local HOSTILE = {
    { "-L", "", "nvidia-smi -L: nvidia-smi: unexpected answer: no GPU listed" },
    { "-L", "  MIG 3g.40gb     Device  0: (UUID: MIG-2d7c9a41-5e3b-4c8f-a1d6-0b9e7f3c5a18)\n",
      "nvidia-smi -L: nvidia-smi: unexpected answer: a MIG device before any GPU:" },
    { "-L", "\0\255\254 No devices were found\n", "nvidia-smi -L: nvidia-smi: unexpected answer: no GPU listed" },
    { "-q", "", "nvidia-smi -q: nvidia-smi: unexpected answer: no GPU section" },
    { "-q", ("\255"):rep(4096), "nvidia-smi -q: nvidia-smi: unexpected answer: no GPU section" },
  }
  for _, case in ipairs(HOSTILE) do
    it(string.format("%s answering %q is a source error naming the query; every GPU stays, no verdict on the slices",
      case[1], case[2]:sub(1, 24)), function()
      local l, findings = judged(case[1], case[2])
      assert.equal(1, #l.errors)
      assert.equal(1, l.errors[1]:find(case[3], 1, true), l.errors[1])
      assert.equal("failed", l.sources.mig)
      assert.equal(5, #l.entries)
      assert.same({}, l.entries[5].migDevices)
      assert.equal(1, #unavailable_on_gpu4(findings))
      for _, f in ipairs(findings) do
        assert.is_nil(f.index == 4 and (f.code == "unreserved-tenant" or f.code == "unmanaged-tenant") or nil, f.message)
      end
    end)
  end

  it("a -L without the slices of the GPU in MIG mode places its process on none: source-unavailable, no verdict", function()
    local list = H.testdata("nvidia/demo-mig/list.txt"):gsub("\n  MIG[^\n]*", "")
    local l, findings = judged("-L", list)
    assert.is_nil(l.errors)
    assert.same({}, l.entries[5].migDevices)
    assert.equal(1, #unavailable_on_gpu4(findings))
  end)
end)
