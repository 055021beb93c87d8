-- What judging a fleet's ledgers costs by itself, as `fleet ls` judges
-- them (not a test; bench/fleet.sh runs it for its floor with judging):
--   LUA_PATH="lua/?.lua;;" LUA_CPATH="build/lua/?.so;;" \
--     lua5.4 bench/fleet_judging.lua LEDGER.json NODES
-- reads NODES copies of the ledger as fleet reads a node's answer (untimed),
-- then judges each with the embedded rules for its verdict alone (worst
-- level and counts, judge.fleet_judging keeping "verdicts"), and prints the
-- CPU seconds (os.clock) of the judging.
local core = require "gpuledger.core"
local fleet = require "gpuledger.fleet"
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"

require("gpuledger.sandbox").setup()

local path, nodes = arg[1], tonumber(arg[2] or "")
if not (path and nodes) then
  io.stderr:write("usage: lua5.4 bench/fleet_judging.lua LEDGER.json NODES\n")
  os.exit(2)
end
local file = assert(io.open(path))
local body = file:read("a")
file:close()

local ledgers = {}
for i = 1, nodes do
  ledgers[i] = assert(fleet.answer_ledger("http://node" .. i, { status = 200, body = body }, true))
end
local judging = judge.fleet_judging(core, ruleset.read(core, ""), nil, "verdicts")
collectgarbage("collect")
local started = os.clock()
for i = 1, nodes do
  judging.node({}, judge.ledger_of(ledgers[i]))
end
print(string.format("%.3f", os.clock() - started))
