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
# file) is measured with --targets up to 1,000 nodes too, and so are two
# floors: curl's parallel transfers of the same ledgers (128 at a time) plus
# lua-cjson decoding the same bytes as many times, CPU time; and that floor
# plus judging as many ledgers as fleet ls judges them, for their verdicts
# (bench/fleet_judging.lua: the judging's CPU time alone). With OLD set,
# OLD's fleet ls and fleet check are measured too, after GPULEDGER's in the
# same run; the ratios are printed: fleet ls / each floor, fleet check /
# fleet ls, new / OLD.
# usage: bench/fleet.sh   (GPULEDGER=path/to/gpuledger, OLD=path/to/older/gpuledger,
#                          RUNS=5, SIZES="10 100 1000 10000")
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

RUNS=${RUNS:-5}
SIZES=${SIZES:-10 100 1000 10000}
GPULEDGER=${GPULEDGER:-build/gpuledger}
[ -x "$GPULEDGER" ] || { echo "bench: no $GPULEDGER; build first or set GPULEDGER" >&2; exit 1; }
OLD=${OLD:-}
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "bench: no $OLD (OLD)" >&2; exit 1; }
bench_work
export GPULEDGER_RULES=$WORK/rules

fleet_ledger "$GPULEDGER" "$WORK/ledger.json"

PORT=$(free_port)
MAX=1000
for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done
fleet_addresses "$MAX"
# the Consul answer: MAX nodes, each on its own address
MAX=$MAX PORT=$PORT lua5.4 -e '
local max, port, out = tonumber(os.getenv("MAX")), tonumber(os.getenv("PORT")), {}
for i = 0, max - 1 do
  local a = i
  out[#out + 1] = string.format([[{"Node":{"Node":"gpu-%05d","Address":"127.1.%d.%d"},"Service":{"Address":"","Port":%d},"Checks":[]}]],
    i, a // 250, a % 250 + 1, port)
end
io.write("[" .. table.concat(out, ",") .. "]")' >"$WORK/consul-all.json"
fleet_server_start "$WORK" "$PORT" "$WORK/consul-all.json"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $GPULEDGER ($("$GPULEDGER" version)); ledger $(wc -c <"$WORK/ledger.json") bytes, 8 GPUs"
echo

# cpu_median TIMES: the median CPU time (user + system) of the lines of
# /usr/bin/time -f "%e %U %S %M" in TIMES.
cpu_median() {
    python3 -c '
import statistics, sys
print("%.3f" % statistics.median(float(l.split()[1]) + float(l.split()[2]) for l in open(sys.argv[1]) if l.strip()))' "$1"
}

# measure LABEL ARGS...: RUNS runs of gpuledger ARGS (BINARY, default
# GPULEDGER); prints the medians, and leaves the runs' times in
# $WORK/times.LABEL.
measure() {
    local label=$1 binary=${BINARY:-$GPULEDGER}
    shift
    : >"$WORK/times"
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time" "$binary" "$@" >"$WORK/out.json"
        cat "$WORK/time" >>"$WORK/times"
    done
    cp "$WORK/times" "$WORK/times.$label"
    local nodes
    nodes=$(lua5.4 -e 'local j = require("cjson").decode(io.read("a"))
      print(j.summary and #j.summary.nodes - (j.summary.total.unreachable or 0) or "-")' <"$WORK/out.json") # check: no summary
    LABEL=$label NODES=$nodes python3 -c '
import os, statistics, sys
rows = [[float(x) for x in line.split()] for line in sys.stdin if line.strip()]
wall = statistics.median(r[0] for r in rows)
cpu = statistics.median(r[1] + r[2] for r in rows)
rss = statistics.median(r[3] for r in rows) / 1024
print("%-26s read %6s  wall %6.3f s  cpu %6.3f s  peak rss %6.1f MiB" % (os.environ["LABEL"], os.environ["NODES"], wall, cpu, rss))' <"$WORK/times"
}

# floor N TARGETS: RUNS runs of curl reading the N targets' ledgers, 128 at
# a time, plus lua-cjson decoding the ledger N times, and of judging N
# ledgers (bench/fleet_judging.lua); prints the median CPU time of the first
# two together, and of the three together (the runs of each in
# $WORK/times.floor and $WORK/times.judged).
floor() {
    local n=$1 targets=$2 url
    : >"$WORK/curl.conf"
    for url in ${targets//,/ }; do
        printf 'url = "http://%s/ledger"\noutput = "/dev/null"\n' "$url" >>"$WORK/curl.conf"
    done
    : >"$WORK/times.floor"
    : >"$WORK/times.judged"
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.curl" curl -s --parallel --parallel-max 128 -K "$WORK/curl.conf" 2>/dev/null
        N=$n /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.decode" lua5.4 -e '
local cjson, text = require "cjson", io.read("a")
for _ = 1, tonumber(os.getenv("N")) do cjson.decode(text) end' <"$WORK/ledger.json"
        paste -d' ' "$WORK/time.curl" "$WORK/time.decode" | awk '{ print $1 + $5, $2 + $6, $3 + $7, $4 }' >>"$WORK/times.floor"
        judging=$(LUA_PATH="lua/?.lua;;" LUA_CPATH="$(dirname "$GPULEDGER")/lua/?.so;;" \
            lua5.4 bench/fleet_judging.lua "$WORK/ledger.json" "$n")
        tail -n 1 "$WORK/times.floor" | awk -v j="$judging" '{ print $1 + j, $2 + j, $3, $4 }' >>"$WORK/times.judged"
    done
    printf "%-26s            cpu %6.3f s  (curl, then lua-cjson decoding)\n" "$n nodes (floor)" "$(cpu_median "$WORK/times.floor")"
    printf "%-26s            cpu %6.3f s  (the floor, and judging as fleet ls does)\n" "$n nodes (judged floor)" "$(cpu_median "$WORK/times.judged")"
}

# ratio A B: the median CPU time of the runs $WORK/times.A over that of B.
ratio() {
    awk -v a="$(cpu_median "$WORK/times.$1")" -v b="$(cpu_median "$WORK/times.$2")" 'BEGIN { printf "%.2f", a / b }'
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
    fleet_server_start "$WORK" "$PORT" "$WORK/consul.json"
    if [ "$n" -le 1000 ]; then
        targets=$(fleet_targets "$PORT" "$n")
        floor "$n" "$targets"
        measure "$n nodes (--targets)" fleet ls --json --targets "$targets"
        measure "$n nodes (check)" fleet check --json --targets "$targets"
        echo "    fleet ls / floor $(ratio "$n nodes (--targets)" floor), fleet ls / judged floor $(ratio "$n nodes (--targets)" judged), fleet check / fleet ls $(ratio "$n nodes (check)" "$n nodes (--targets)")"
        if [ -n "$OLD" ]; then
            BINARY=$OLD measure "$n nodes (OLD --targets)" fleet ls --json --targets "$targets"
            BINARY=$OLD measure "$n nodes (OLD check)" fleet check --json --targets "$targets"
            echo "    OLD: fleet ls / floor $(ratio "$n nodes (OLD --targets)" floor), fleet ls / judged floor $(ratio "$n nodes (OLD --targets)" judged), fleet check / fleet ls $(ratio "$n nodes (OLD check)" "$n nodes (OLD --targets)")"
            echo "    new / OLD: fleet ls $(ratio "$n nodes (--targets)" "$n nodes (OLD --targets)"), fleet check $(ratio "$n nodes (check)" "$n nodes (OLD check)")"
        fi
    fi
    measure "$n nodes (--consul)" fleet ls --json --consul "127.0.0.1:$PORT"
done
