-- The stages of one `serve --replay` refresh, run in one Lua process and
-- timed each (CPU, os.clock), for finding where a refresh's time goes (not a
-- test; bench/README.md, "Work per GPU process"):
--   lua5.4 bench/refresh_stages.lua SNAPSHOT [ROUNDS] [STAGE]
-- SNAPSHOT: a snapshot file (bench/big_snapshot.lua makes them). Each round
-- reads and decodes it, builds its ledger, records it in a history, judges
-- it with the embedded rules and renders serve's responses and the `ls`
-- table; the fastest round's milliseconds of each stage are printed. With
-- STAGE (a stage's name), that stage is also profiled with a count hook:
-- its busiest lines and functions. Needs the repository's lua/ on LUA_PATH
-- and build/lua/ on LUA_CPATH (gpuledger.core).
local core = require "gpuledger.core"
local history = require "gpuledger.history"
local judge = require "gpuledger.judge"
local json = require "gpuledger.json"
local ruleset = require "gpuledger.ruleset"
local serve = require "gpuledger.cmd.serve"
local snapshot = require "gpuledger.snapshot"
local table_render = require "gpuledger.render.table"
local lua_profile = dofile((arg[0]:match("^(.*)/") or ".") .. "/lua_profile.lua")

require("gpuledger.sandbox").setup()

local path, rounds, profiled = arg[1], tonumber(arg[2] or "5"), arg[3]
if not path then
  io.stderr:write("usage: lua5.4 bench/refresh_stages.lua SNAPSHOT [ROUNDS] [STAGE]\n")
  os.exit(2)
end

local EMPTY_RULES = os.tmpname()
os.remove(EMPTY_RULES)
assert(os.execute("mkdir " .. EMPTY_RULES))
local sources = ruleset.read(core, EMPTY_RULES)
local catalogue = judge.data(core, sources)[1].xid_catalogue
local h = history.new()

local samples = lua_profile.new() -- the profiled stage's

local STAGES = {}
local best = {}
local function stage(name, fn, ...)
  if #STAGES < 20 and not best[name] then
    STAGES[#STAGES + 1] = name
  end
  local started = os.clock()
  local result
  if name == profiled then
    result = lua_profile.sampling(samples, 1000, fn, ...)
  else
    result = fn(...)
  end
  local ms = (os.clock() - started) * 1000
  best[name] = math.min(best[name] or math.huge, ms)
  return result
end

local totals = {}
for round = 1, rounds do
  local started = os.clock()
  local content = stage("read", function() return assert(core.read_file(path, snapshot.MAX_BYTES)) end)
  local snap = stage("decode", function() return assert(snapshot.validate(assert(json.decode(content)), path)) end)
  local ledger = stage("ledger", judge.ledger_of, snap, catalogue)
  stage("history", function()
    history.observe(h, ledger, 300)
    history.annotate(h, ledger, 300)
  end)
  local report = stage("rules", judge.judge, core, ledger, sources, {})
  local page = { interval = 10, version = core.version }
  local responses = stage("responses", serve.responses, core, report, h, page, { at = core.now(), seconds = 0.1 })
  stage("table", table_render.ls, report.ledger, "table")
  totals[round] = (os.clock() - started) * 1000
  if round == 1 then
    for _, name in ipairs({ "/metrics", "/ledger", "/findings", "/" }) do
      io.stderr:write(string.format("%s: %d bytes\n", name, #responses[name].body))
    end
  end
end

-- The responses' renderers alone, on the last round's report.
local report = judge.judge(core, judge.ledger_of(assert(snapshot.load(core, path)), catalogue), sources, {})
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local html = require "gpuledger.render.html"
for _ = 1, rounds do
  stage("  /metrics", metrics.node, report, h, { at = core.now(), seconds = 0.1 }, { version = "x", lua = "5.4" })
  stage("  /ledger", render_json.ledger, report.ledger)
  stage("  /findings", render_json.findings, report)
  stage("  /", html.node, report, { interval = 10, version = "x" })
end

table.sort(totals)
print(string.format("%s: fastest of %d rounds, ms CPU", path, rounds))
for _, name in ipairs(STAGES) do
  print(string.format("%-12s %8.2f", name, best[name]))
end
print(string.format("%-12s %8.2f (fastest round; median %.2f)", "total", totals[1], totals[(#totals + 1) // 2]))

if profiled then
  for _, counts in ipairs({ samples.functions, samples.lines }) do
    print()
    for _, key in ipairs(lua_profile.top(counts, 25)) do
      print(string.format("%6d  %s", counts[key], key))
    end
  end
end
os.remove(EMPTY_RULES)
