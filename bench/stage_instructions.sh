#!/usr/bin/env bash
# Where a serve refresh's machine instructions go, stage by stage (not a
# test; results go in bench/README.md, "Work per GPU process"): the made-up
# nodes of bench/processes.sh, plus 32 GPUs with 64 processes (the GPUs'
# own cost), each refreshed in one lua5.4 under cachegrind, as serve
# --replay does: reading and decoding the snapshot, the ledger, the history,
# the rules, then /metrics, the node page, /ledger and /findings. A stage's
# count is that of running the stages up to it less that of the stages
# before it, each the difference of 4 rounds and 1 (start-up and loading
# the rules cancel out), ÷ 3. Counts repeat within about 1 % from run to run
# on a loaded machine, so two trees are compared by them.
# usage: [TREE=.] [SIZES="8 64,32 64,32 2048"] bench/stage_instructions.sh
# TREE: a checkout with its build in TREE/build (its lua/ and build/lua/).
# Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=$(cd "${TREE:-.}" && pwd)
[ -d "$TREE/build/lua" ] || { echo "bench: no $TREE/build/lua; build $TREE first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench: needs valgrind" >&2; exit 1; }
IFS=, read -r -a SIZES <<<"${SIZES:-8 64,32 64,32 2048}"
bench_work

cat >"$WORK/stages.lua" <<'EOF'
-- lua5.4 stages.lua SNAPSHOT ROUNDS UPTO: ROUNDS refreshes of SNAPSHOT,
-- each running its first UPTO stages (1 read and decode, 2 the ledger,
-- 3 the history, 4 the rules, 5 /metrics, 6 the page, 7 /ledger, 8 /findings).
local core = require "gpuledger.core"
local history = require "gpuledger.history"
local html = require "gpuledger.render.html"
local judge = require "gpuledger.judge"
local json = require "gpuledger.json"
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local snapshot = require "gpuledger.snapshot"
require("gpuledger.sandbox").setup()
local path, rounds, upto, rules = arg[1], tonumber(arg[2]), tonumber(arg[3]), arg[4]
local sources = ruleset.read(core, rules)
local catalogue = judge.data(core, sources)[1].xid_catalogue
local h = history.new()
for _ = 1, rounds do
  local snap = assert(snapshot.validate(assert(json.decode(assert(core.read_file(path, snapshot.MAX_BYTES)))), path))
  local ledger = upto >= 2 and judge.ledger_of(snap, catalogue)
  if upto >= 3 then
    history.observe(h, ledger, 300)
    history.annotate(h, ledger, 300)
  end
  local report = upto >= 4 and judge.judge(core, ledger, sources, {})
  if upto >= 5 then metrics.node(report, h, { at = 1764547200, seconds = 0.1 }, { version = "x", lua = "5.4" }) end
  if upto >= 6 then html.node(report, { interval = 10, version = "x" }) end
  if upto >= 7 then render_json.ledger(report.ledger) end
  if upto >= 8 then render_json.findings(report) end
end
EOF

# instructions ROUNDS UPTO SNAPSHOT: cachegrind's count of the whole run.
instructions() {
    (cd "$TREE" && LUA_PATH="$TREE/lua/?.lua;;" LUA_CPATH="$TREE/build/lua/?.so;;" \
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        lua5.4 "$WORK/stages.lua" "$3" "$1" "$2" "$WORK/rules" 2>&1) | awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
}

STAGES=("read and decode" "ledger" "history" "rules" "/metrics" "node page" "/ledger" "/findings")
echo "tree: $TREE ($(git -C "$TREE" rev-parse --short HEAD))"
for size in "${SIZES[@]}"; do
    read -r gpus processes <<<"$size"
    LUA_PATH="$TREE/lua/?.lua;;" LUA_CPATH="$TREE/build/lua/?.so;;" \
        lua5.4 bench/big_snapshot.lua "$gpus" "$processes" >"$WORK/node.json"
    echo "$gpus GPUs × $processes processes, M instructions a refresh:"
    before=0
    for upto in 1 2 3 4 5 6 7 8; do
        one=$(instructions 1 "$upto" "$WORK/node.json")
        four=$(instructions 4 "$upto" "$WORK/node.json")
        through=$(((four - one) / 3))
        awk -v s="${STAGES[upto - 1]}" -v n="$((through - before))" 'BEGIN { printf "  %-16s %7.2f\n", s, n / 1e6 }'
        before=$through
    done
    awk -v n="$before" 'BEGIN { printf "  %-16s %7.2f\n", "total", n / 1e6 }'
done
