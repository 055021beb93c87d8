#!/usr/bin/env bash
# What `fleet serve` costs a poll (not a test; results go in bench/README.md,
# "fleet serve over 1,000 nodes"): a `fleet serve` over NODES nodes of
# bench/fleet_server.c (the demo ledger doubled to 8 GPUs, as bench/fleet.sh
# serves it) polling every 3 s with no requests but the bench's own. After
# its first poll, its CPU time (user + system, /proc/PID/stat) over SECONDS,
# divided by the polls that fit in them, and the least and most RSS of a
# reading every second; then the sizes of its page and of /fleet. With OLD
# set, OLD's serve is measured after GPULEDGER's, ROUNDS times in turn.
# usage: bench/fleet_serve.sh   (GPULEDGER=build/gpuledger, OLD=…, NODES=1000,
#                                SECONDS_EACH=60, ROUNDS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
GPULEDGER=${GPULEDGER:-build/gpuledger}
NODES=${NODES:-1000}
SECONDS_EACH=${SECONDS_EACH:-60}
ROUNDS=${ROUNDS:-2}
INTERVAL=3
binaries=(GPULEDGER)
[ -n "${OLD:-}" ] && binaries+=(OLD)
for which in "${binaries[@]}"; do
    [ -x "${!which}" ] || { echo "bench: no ${!which}; build first or set $which" >&2; exit 1; }
done
bench_work
export GPULEDGER_RULES=$WORK/rules
fleet_nodes "$WORK" "$GPULEDGER" "$NODES"

# measure BINARY: one line of what BINARY's fleet serve costs.
measure() {
    local binary=$1 before after least=0 most=0 rss _
    serve_start "$WORK/serve.err" "$binary" fleet serve --targets "$FLEET_TARGETS" --listen 127.0.0.1:0 \
        --interval "${INTERVAL}s"
    for _ in $(seq 600); do # the first poll's page
        curl -sf -o /dev/null "$SERVE_URL/" && break
        sleep 0.1
    done
    before=$(cpu_ms "$SERVE_PID")
    for _ in $(seq "$SECONDS_EACH"); do
        rss=$(awk '/^VmRSS/ { print int($2 / 1024) }' "/proc/$SERVE_PID/status")
        [ "$least" -eq 0 ] || [ "$rss" -lt "$least" ] && least=$rss
        [ "$rss" -gt "$most" ] && most=$rss
        sleep 1
    done
    after=$(cpu_ms "$SERVE_PID")
    curl -sf -o "$WORK/page.html" "$SERVE_URL/"
    curl -sf -o "$WORK/fleet.json" "$SERVE_URL/fleet"
    serve_stop
    awk -v ms=$((after - before)) -v polls=$((SECONDS_EACH / INTERVAL)) -v least="$least" -v most="$most" \
        -v page="$(wc -c <"$WORK/page.html")" -v doc="$(wc -c <"$WORK/fleet.json")" -v name="$binary" 'BEGIN {
        printf "%-28s %5.2f s CPU a poll  RSS %4d-%4d MiB  page %5.1f MB  /fleet %5.1f MB\n",
            name, ms / polls / 1000, least, most, page / 1e6, doc / 1e6 }'
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $NODES nodes, a poll every ${INTERVAL} s, ${SECONDS_EACH} s each"
for _ in $(seq "$ROUNDS"); do
    for which in "${binaries[@]}"; do
        measure "${!which}"
    done
done
