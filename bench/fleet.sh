#!/usr/bin/env bash
# The fleet benchmark (not a test; results go in bench/README.md):
# `gpuledger fleet ls --json` over N simulated nodes of 8 GPUs each, for N =
# 10, 100, 1,000 and 10,000: wall time, CPU time (user + system) and peak
# RSS from /usr/bin/time, the median of RUNS runs. The nodes are one
# process (bench/fleet_server.c, one thread, epoll) answering on up to 1,000
# loopback addresses 127.1.x.y with the same ledger; up to 1,000 nodes are
# named with --targets, and every size is also run with --consul against the
# same server's Consul answer (10,000 targets do not fit in one argument).
# `fleet check --json` (every node judged with the embedded rules, no site
# file) is measured with --targets up to 1,000 nodes too.
# usage: bench/fleet.sh   (GPULEDGER=path/to/gpuledger, RUNS=5, SIZES="10 100 1000 10000")
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
SIZES=${SIZES:-10 100 1000 10000}
GPULEDGER=${GPULEDGER:-build/gpuledger}
[ -x "$GPULEDGER" ] || { echo "bench: no $GPULEDGER; build first or set GPULEDGER" >&2; exit 1; }
WORK=$(mktemp -d /tmp/gpuledger-fleet-bench.XXXXXX)
SERVER_PID=""
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir "$WORK/rules"
export GPULEDGER_RULES=$WORK/rules
cc -O2 -o "$WORK/fleet_server" bench/fleet_server.c

# One node's ledger: the demo node's four GPUs twice (eight, distinct uuids).
"$GPULEDGER" ls --demo --json --node gpu-bench | lua5.4 -e '
local cjson = require "cjson"
local ledger = cjson.decode(io.read("a"))
local n = #ledger.entries
for i = 1, n do
  local copy = cjson.decode(cjson.encode(ledger.entries[i]))
  copy.index = n + i - 1
  copy.uuid = copy.uuid:gsub("^GPU%-%x%x", "GPU-ff")
  ledger.entries[n + i] = copy
end
io.write(cjson.encode(ledger))' >"$WORK/ledger.json"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ADDRESSES=()
for ((i = 0; i < 1000; i++)); do ADDRESSES+=("127.1.$((i / 250)).$((i % 250 + 1))"); done
SERVER_ADDRESSES=(127.0.0.1 "${ADDRESSES[@]}") # 127.0.0.1 for the Consul answer
MAX=0
for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done
# the Consul answer: MAX nodes, the addresses in turn
MAX=$MAX PORT=$PORT lua5.4 -e '
local max, port, out = tonumber(os.getenv("MAX")), tonumber(os.getenv("PORT")), {}
for i = 0, max - 1 do
  local a = i % 1000
  out[#out + 1] = string.format([[{"Node":{"Node":"gpu-%05d","Address":"127.1.%d.%d"},"Service":{"Address":"","Port":%d},"Checks":[]}]],
    i, a // 250, a % 250 + 1, port)
end
io.write("[" .. table.concat(out, ",") .. "]")' >"$WORK/consul-all.json"
"$WORK/fleet_server" "$PORT" "$WORK/ledger.json" "$WORK/consul-all.json" "${SERVER_ADDRESSES[@]}" >"$WORK/server.out" &
SERVER_PID=$!
for _ in $(seq 50); do grep -q ready "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $GPULEDGER ($("$GPULEDGER" version)); ledger $(wc -c <"$WORK/ledger.json") bytes, 8 GPUs"
echo

# measure LABEL ARGS...: RUNS runs of gpuledger ARGS; prints the medians.
measure() {
    local label=$1
    shift
    : >"$WORK/times"
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$GPULEDGER" "$@" >"$WORK/out.json"
        cat "$WORK/time" >>"$WORK/times"
    done
    local nodes
    nodes=$(lua5.4 -e 'local j = require("cjson").decode(io.read("a"))
      print(j.summary and #j.summary.nodes - (j.summary.total.unreachable or 0) or "-")' <"$WORK/out.json") # check: no summary
    LABEL=$label NODES=$nodes python3 -c '
import os, statistics, sys
rows = [[float(x) for x in line.split()] for line in sys.stdin if line.strip()]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[1] + r[2] for r in rows)
rss = statistics.median(r[3] for r in rows) / 1024
print("%-22s read %6s  wall %6.3f s  cpu %6.3f s  peak rss %6.1f MiB" % (os.environ["LABEL"], os.environ["NODES"], wall, cpu, rss))' <"$WORK/times"
}

# the fixed cost: a command that reads nothing
/usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$GPULEDGER" version >/dev/null
awk '{ printf "%-22s wall %6.2f s  cpu %6.2f s  peak rss %7.1f MiB\n", "gpuledger version", $1, $2 + $3, $4 / 1024 }' "$WORK/time"
for n in $SIZES; do
    N=$n lua5.4 -e '
local want = tonumber(os.getenv("N"))
local list = require("cjson").decode(io.read("a"))
local out = {}
for i = 1, want do out[i] = list[i] end
io.write(require("cjson").encode(out))' <"$WORK/consul-all.json" >"$WORK/consul.json"
    # the server reads its Consul answer at start: restart it with this size
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
    "$WORK/fleet_server" "$PORT" "$WORK/ledger.json" "$WORK/consul.json" "${SERVER_ADDRESSES[@]}" >"$WORK/server.out" &
    SERVER_PID=$!
    for _ in $(seq 50); do grep -q ready "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
    if [ "$n" -le 1000 ]; then
        targets=$(printf "%s:$PORT," "${ADDRESSES[@]:0:$n}")
        measure "$n nodes (--targets)" fleet ls --json --targets "${targets%,}"
        measure "$n nodes (check)" fleet check --json --targets "${targets%,}"
    fi
    measure "$n nodes (--consul)" fleet ls --json --consul "127.0.0.1:$PORT"
done
