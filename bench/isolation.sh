#!/usr/bin/env bash
# The cost of running site code in children (isolated.lua), not a
# test; results go in bench/README.md:
#   1. one core.run_isolated round trip (fork, a trivial function, JSON
#      back, reap), from Lua with the C core as a module, ROUNDS times;
#   2. `check --demo` wall time, RUNS runs each: no site rules (no child:
#      the embedded rules run in the process), and five trivial site rules
#      (five children); `ls --demo` (no site rules, no child) as the floor;
#   3. serve's refresh: CPU milliseconds per refresh, the children's
#      included (utime+stime+cutime+cstime), over REFRESH_SECONDS at
#      --interval 100ms, without and with the five site rules, and without
#      site rules but with an empty scripts directory (as the .deb installs);
#      and at --interval 500ms (the renderers' child and the parent's
#      reading of its pages take more than 100 ms on a slow machine) with a
#      scripts directory that holds the site's copy of the HTML renderer.
# usage: bench/isolation.sh   (GPULEDGER=path/to/gpuledger; the C module is
# taken from the binary's build directory, lua/gpuledger/core.so)
# Environment: ROUNDS (500), RUNS (50), REFRESH_SECONDS (10).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

ROUNDS=${ROUNDS:-500}
RUNS=${RUNS:-50}
REFRESH_SECONDS=${REFRESH_SECONDS:-10}
GPULEDGER=${GPULEDGER:-build/gpuledger}
BUILD=$(dirname "$GPULEDGER")
[ -x "$GPULEDGER" ] || { echo "bench: no $GPULEDGER; build first or set GPULEDGER" >&2; exit 1; }
bench_work
mkdir -p "$WORK/none" "$WORK/five" "$WORK/scripts" "$WORK/site/gpuledger/render"
cp lua/gpuledger/render/html.lua "$WORK/site/gpuledger/render/"
for i in 1 2 3 4 5; do
    printf 'return { code = "site-%d", level = "WARN", evaluate = function(ledger, policy, emit) for _, gpu in ipairs(ledger.entries) do if gpu.utilizationPct > 101 then emit { gpu = gpu, message = "x" } end end end }\n' "$i" >"$WORK/five/site$i.lua"
done

now_ms() { date +%s%3N; }

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $GPULEDGER ($("$GPULEDGER" version))"
echo

echo "== core.run_isolated round trip, $ROUNDS times"
LUA_PATH="lua/?.lua;;" LUA_CPATH="$BUILD/lua/?.so;;" lua5.4 -e "
  local core = require 'gpuledger.core'
  local json = require 'gpuledger.json'
  local started = core.now()
  for _ = 1, $ROUNDS do
    assert(core.run_isolated(function() return json.encode({ ok = true }) end, { deadline_ms = 2000 }))
  end
  print(string.format('%.2f ms per round trip', (core.now() - started) * 1000 / $ROUNDS))"
echo

# wall NAME ARGS...: the mean wall time of RUNS runs of gpuledger ARGS.
wall() {
    local name=$1 started
    shift
    started=$(now_ms)
    for _ in $(seq "$RUNS"); do "$GPULEDGER" "$@" >/dev/null; done
    echo "$name: $(awk -v t=$(($(now_ms) - started)) -v n="$RUNS" 'BEGIN { printf "%.1f", t / n }') ms per run"
}
echo "== wall time, mean of $RUNS runs"
wall "ls --demo (no child)          " ls --demo --rules "$WORK/none"
wall "check --demo, no site rules   " check --demo --rules "$WORK/none"
wall "check --demo, five site rules " check --demo --rules "$WORK/five"
echo

# refresh_cost NAME INTERVAL_MS RULES [ARGS...]: serve's CPU per refresh
# every INTERVAL_MS with the rules directory RULES and serve's further ARGS.
refresh_cost() {
    local name=$1 interval=$2 rules=$3 before after
    shift 3
    serve_start "$WORK/serve.err" "$GPULEDGER" serve --demo --listen 127.0.0.1:0 --interval "${interval}ms" \
        --rules "$rules" "$@"
    sleep 2
    before=$(cpu_ms "$SERVE_PID" children)
    sleep "$REFRESH_SECONDS"
    after=$(cpu_ms "$SERVE_PID" children)
    serve_stop
    echo "$name: $(awk -v c=$((after - before)) -v n=$((REFRESH_SECONDS * 1000 / interval)) 'BEGIN { printf "%.2f", c / n }') ms CPU per refresh"
}
echo "== serve refresh cost (${REFRESH_SECONDS}s, children included)"
refresh_cost "no site rules,    100ms" 100 "$WORK/none"
refresh_cost "five site rules,  100ms" 100 "$WORK/five"
refresh_cost "empty --scripts,  100ms" 100 "$WORK/none" --scripts "$WORK/scripts"
refresh_cost "site html.lua,    500ms" 500 "$WORK/none" --scripts "$WORK/site"
