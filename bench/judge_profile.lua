-- What judging costs per GPU and per node, in one Lua process (not a test;
-- bench/judging.sh runs it, results go in bench/README.md, "Judging per
-- GPU"). The inputs: the made-up nodes of bench/big_snapshot.lua (1 × 8,
-- 8 × 64, 8 × 512 and 32 × 2,048 GPUs × processes), each judged alone as a
-- serve refresh judges it, and NODES copies of the fleet's 8-GPU ledger
-- (bench/lib.sh's fleet_ledger) judged together as `fleet check` judges
-- them. Judging is judge.rules with the embedded rules, less the same call
-- on no ledger (loading the rule set).
--   LUA_PATH="lua/?.lua;;" LUA_CPATH="build/lua/?.so;;" \
--     lua5.4 bench/judge_profile.lua FLEET_LEDGER.json [RUNS [NODES]]
-- prints, for each input, the CPU milliseconds (os.clock) of building its
-- ledger and of judging it, per GPU and per node: the least of RUNS (5)
-- runs. With PROFILE set, also where judging spends (Lua's count hook
-- every 100 instructions, by function) and the share of garbage collection.
-- With INPUT set (none, 1x8, 8x64, 8x512, 32x2048 or fleet), it makes that
-- input only and judges it once, or with JUDGE=0 not at all, and prints
-- nothing: what bench/judging.sh counts the instructions of.
local core = require "gpuledger.core"
local fleet = require "gpuledger.fleet"
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"
local sandbox = require "gpuledger.sandbox"
local snapshot = require "gpuledger.snapshot"
local lua_profile = dofile((arg[0]:match("^(.*)/") or ".") .. "/lua_profile.lua")

sandbox.setup()
local fleet_path, runs, nodes = arg[1], tonumber(arg[2] or "5"), tonumber(arg[3] or "300")
if not fleet_path then
  io.stderr:write("usage: lua5.4 bench/judge_profile.lua FLEET_LEDGER.json [RUNS [NODES]]\n")
  os.exit(2)
end
local sources = ruleset.read(core, "")
local data = judge.data(core, sources)
local catalogue = data[1].xid_catalogue

local function judge_all(ledgers, view)
  return judge.rules(core, sources, nil, ledgers, { data = data, view = view })
end

-- The inputs by name: gpus, the units its cost is divided by (nodes for
-- the fleet), and make(), which returns a fresh one {ledgers, view?}.
local INPUTS, NAMES = {}, {}
for _, size in ipairs { { 1, 8 }, { 8, 64 }, { 8, 512 }, { 32, 2048 } } do
  local gpus, processes = size[1], size[2]
  local name = gpus .. "x" .. processes
  local snap
  NAMES[#NAMES + 1] = name
  INPUTS[name] = {
    label = gpus .. " × " .. processes, gpus = gpus, nodes = 1,
    make = function()
      if not snap then
        local pipe = assert(io.popen(string.format("lua5.4 bench/big_snapshot.lua %d %d", gpus, processes)))
        local path = os.tmpname()
        local file = assert(io.open(path, "w"))
        file:write(pipe:read("a"))
        file:close()
        pipe:close()
        snap = assert(snapshot.load(core, path))
        os.remove(path)
      end
      return { ledgers = { judge.ledger_of(snap, catalogue) } }
    end,
  }
end
NAMES[#NAMES + 1] = "fleet"
local fleet_text
INPUTS.fleet = {
  label = "fleet", gpus = 8 * nodes, nodes = nodes,
  make = function()
    fleet_text = fleet_text or assert(io.open(fleet_path)):read("a")
    local ledgers = {}
    for i = 1, nodes do
      ledgers[i] = judge.ledger_of(assert(fleet.answer_ledger("http://n" .. i, { status = 200, body = fleet_text }, true)))
    end
    return { ledgers = ledgers, view = fleet.view(fleet.summarise({})) }
  end,
}
INPUTS.none = { make = function() return { ledgers = {} } end }

local function judged(input)
  judge_all(input.ledgers, input.view)
end

if os.getenv("INPUT") then
  local input = assert(INPUTS[os.getenv("INPUT")], "INPUT: none, 1x8, 8x64, 8x512, 32x2048 or fleet").make()
  collectgarbage("collect")
  if os.getenv("JUDGE") ~= "0" then
    judged(input)
  end
  return
end

-- The least over RUNS runs of fn's CPU time in ms per input: each run
-- calls fn on each of the `count` inputs prepare() made (untimed, fresh
-- for each run: a judging leaves its mark on what it judged).
local function least_ms(prepare, fn, count)
  local best = math.huge
  for _ = 1, runs do
    local inputs = {}
    for i = 1, count do
      inputs[i] = prepare()
    end
    collectgarbage("collect")
    local started = os.clock()
    for i = 1, count do
      fn(inputs[i])
    end
    best = math.min(best, (os.clock() - started) * 1000 / count)
  end
  return best
end

-- Where judging input spends: count-hook samples by function, the top
-- ones; and the share of garbage collection.
local function profile(input, count, judge_ms)
  local samples = lua_profile.new()
  lua_profile.sampling(samples, 100, judged, input.make())
  print(string.format("  profile of %s: %d samples", input.label, samples.total))
  for _, key in ipairs(lua_profile.top(samples.functions, 18)) do
    print(string.format("    %5.1f %%  %s", 100 * samples.functions[key] / samples.total, key))
  end
  local without_gc = least_ms(input.make, function(x)
    collectgarbage("stop")
    judged(x)
    collectgarbage("restart")
  end, count)
  print(string.format("    garbage collection: %.0f %% of judging (%.2f ms without it)",
    100 * (judge_ms - without_gc) / judge_ms, without_gc))
end

local fixed_ms = least_ms(INPUTS.none.make, judged, 100)
print(string.format("machine load %s; least of %d runs; loading the rule set (judge.rules on no ledger) %.2f ms",
  io.open("/proc/loadavg"):read("l"):match("^%S+ %S+ %S+"), runs, fixed_ms))
print(string.format("%-14s %12s %12s %12s %12s", "input", "reading ms", "judging ms", "per GPU", "per node"))
for _, name in ipairs(NAMES) do
  local input = INPUTS[name]
  local count = math.max(1, 160 // input.gpus) -- enough calls to be timed
  local read_ms = least_ms(function() return nil end, input.make, count)
  local judge_ms = least_ms(input.make, judged, count) - fixed_ms
  print(string.format("%-14s %12.3f %12.3f %12.4f %12.3f", input.label, read_ms / input.nodes, judge_ms / input.nodes,
    judge_ms / input.gpus, judge_ms / input.nodes))
  if os.getenv("PROFILE") then
    profile(input, count, judge_ms)
  end
end
