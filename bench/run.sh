#!/usr/bin/env bash
# gpuledger serve benchmarks (not a test; results go in bench/README.md):
#   1. /metrics requests per second and latency percentiles with
#      `wrk -t2 -c32 -d8s --latency` on loopback (Debian `wrk`), RUNS times;
#   2. refresh cost: CPU milliseconds per refresh of the demo node, from the
#      process's own CPU time over REFRESH_SECONDS at --interval 100ms with no
#      requests;
#   3. memory: VmRSS and VmHWM (peak RSS) of serve after MINUTES minutes at
#      --interval 1s, scraped every 15 s like Prometheus would.
# usage: bench/run.sh [MINUTES]   (default 10; GPULEDGER=path/to/gpuledger)
# Environment: RUNS (3), REFRESH_SECONDS (20), WRK_SECONDS (8).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh

MINUTES=${1:-10}
RUNS=${RUNS:-3}
REFRESH_SECONDS=${REFRESH_SECONDS:-20}
WRK_SECONDS=${WRK_SECONDS:-8}
GPULEDGER=${GPULEDGER:-build/gpuledger}
[ -x "$GPULEDGER" ] || { echo "bench: no $GPULEDGER; build first (scripts/setup) or set GPULEDGER" >&2; exit 1; }
command -v wrk >/dev/null || { echo "bench: needs wrk (apt-get install wrk)" >&2; exit 1; }
bench_work

# start INTERVAL: serve --demo on a free loopback port; sets SERVE_PID, URL.
start() {
    serve_start "$WORK/serve.err" "$GPULEDGER" serve --demo --listen 127.0.0.1:0 --interval "$1" --rules "$WORK/rules"
    URL=$SERVE_URL
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $GPULEDGER ($("$GPULEDGER" version))"
echo

echo "== /metrics with wrk -t2 -c32 -d${WRK_SECONDS}s --latency (serve --demo --interval 1s)"
start 1s
echo "body: $(curl -s "$URL/metrics" | wc -c) bytes"
for run in $(seq "$RUNS"); do
    wrk -t2 -c32 -d"${WRK_SECONDS}s" --latency "$URL/metrics" >"$WORK/wrk.txt"
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$WORK/wrk.txt")
    p50=$(awk '$1 == "50%" { print $2 }' "$WORK/wrk.txt")
    p99=$(awk '$1 == "99%" { print $2 }' "$WORK/wrk.txt")
    errors=$(awk '/Non-2xx|Socket errors/' "$WORK/wrk.txt" | tr '\n' ' ')
    echo "run $run: $rps req/s, p50 $p50, p99 $p99 ${errors}"
done
echo "peak RSS during wrk: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$SERVE_PID/status")"
serve_stop
echo

echo "== refresh cost (serve --demo --interval 100ms, no requests, ${REFRESH_SECONDS}s)"
start 100ms
sleep 2
before=$(cpu_ms "$SERVE_PID")
sleep "$REFRESH_SECONDS"
after=$(cpu_ms "$SERVE_PID")
serve_stop
refreshes=$((REFRESH_SECONDS * 10))
echo "CPU: $((after - before)) ms over $refreshes refreshes = $(awk -v c=$((after - before)) -v n=$refreshes 'BEGIN { printf "%.2f", c / n }') ms per refresh"
echo

echo "== memory after ${MINUTES} min at --interval 1s, scraped every 15 s"
start 1s
echo "at start: $(awk '/VmRSS|VmHWM|RssAnon|RssFile/ { printf "%s %s kB  ", $1, $2 }' "/proc/$SERVE_PID/status")"
end=$((SECONDS + MINUTES * 60))
while [ $SECONDS -lt $end ]; do
    curl -s -o /dev/null "$URL/metrics"
    sleep 15
done
echo "after:    $(awk '/VmRSS|VmHWM|RssAnon|RssFile/ { printf "%s %s kB  ", $1, $2 }' "/proc/$SERVE_PID/status")"
serve_stop
