#!/usr/bin/env bash
# What a serve refresh costs per GPU process (not a test; results go in
# bench/README.md, "Work per GPU process"): snapshots of made-up nodes of
# 1 GPU × 8 processes, 8 × 64, 8 × 512 and 32 × 2,048
# (bench/big_snapshot.lua), each served with `serve --replay` for REFRESHES
# refreshes, at an interval of four times what one `check --replay` of it
# takes (at least 100 ms: a refresh must end before the next is due, or
# fewer would run than counted; with OLD, the slower binary's, for both);
# gpuledger's own CPU (user + system, no children) per refresh, each size
# ÷ 8 × 64, and the microseconds each process adds from 8 × 64 to
# 32 × 2,048, in one run. With OLD set, the two
# binaries take turns at each size and the last column is new ÷ old.
# usage: [OLD=path/to/gpuledger] [NEW=build/gpuledger] bench/processes.sh
# Environment: REFRESHES (20).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
REFRESHES=${REFRESHES:-20}
NEW=${NEW:-build/gpuledger}
BINARIES=(NEW)
[ -n "${OLD:-}" ] && BINARIES=(OLD NEW)
for which in "${BINARIES[@]}"; do
    [ -x "${!which}" ] || { echo "bench: no ${!which}; build first or set $which" >&2; exit 1; }
done
bench_work
process_snapshots "$NEW" "$WORK"

# interval_ms BINARY SNAPSHOT: four times the wall milliseconds of one
# `check --replay SNAPSHOT`, in whole 100 ms, at least 100.
interval_ms() {
    local started
    started=$(date +%s%N)
    "$1" check --replay "$2" --rules "$WORK/rules" >/dev/null || true
    awk -v ns=$(($(date +%s%N) - started)) 'BEGIN { i = int(4 * ns / 1e6 / 100 + 1) * 100; print (i < 100 ? 100 : i) }'
}

# refresh_ms BINARY SNAPSHOT INTERVAL: the CPU milliseconds per refresh of
# BINARY serving SNAPSHOT every INTERVAL ms.
refresh_ms() {
    local interval=$3
    serve_start "$WORK/serve.err" "$1" serve --replay "$2" --listen 127.0.0.1:0 --interval "${interval}ms" --rules "$WORK/rules"
    local before after slowest
    sleep 1
    before=$(cpu_ms "$SERVE_PID")
    sleep "$(awk -v n="$REFRESHES" -v i="$interval" 'BEGIN { print n * i / 1000 }')"
    after=$(cpu_ms "$SERVE_PID")
    slowest=$(curl -s "$SERVE_URL/metrics" | awk '/^gpuledger_refresh_duration_seconds/ { print $2 * 1000 }')
    serve_stop
    awk -v s="$slowest" -v i="$interval" 'BEGIN { if (s > i * 0.8) printf "bench: the last refresh took %.0f ms of its %d ms interval: the figure is low\n", s, i > "/dev/stderr" }'
    awk -v t=$((after - before)) -v n="$REFRESHES" 'BEGIN { printf "%.2f", t / n }'
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for which in "${BINARIES[@]}"; do
    echo "$which: ${!which} ($("${!which}" version))"
done
echo "serve --replay, own CPU over $REFRESHES refreshes, ms per refresh"
declare -A ms
for size in "${PROCESS_SIZES[@]}"; do
    read -r gpus processes <<<"$size"
    # one interval for both binaries, the longer one's: an idle server's
    # threads cost CPU too, so a shorter interval would cost less per refresh
    interval=100
    for which in "${BINARIES[@]}"; do
        own=$(interval_ms "${!which}" "$WORK/${gpus}x$processes.json")
        [ "$own" -gt "$interval" ] && interval=$own
    done
    for which in "${BINARIES[@]}"; do
        ms[$which,$gpus,$processes]=$(refresh_ms "${!which}" "$WORK/${gpus}x$processes.json" "$interval")
    done
done
echo
printf '%-14s' "GPUs × procs"
for which in "${BINARIES[@]}"; do printf '  %-20s' "$which ms (÷ 8 × 64)"; done
[ -n "${OLD:-}" ] && printf '  new ÷ old'
echo
for size in "${PROCESS_SIZES[@]}"; do
    read -r gpus processes <<<"$size"
    printf '%-14s' "$gpus × $processes"
    for which in "${BINARIES[@]}"; do
        awk -v a="${ms[$which,$gpus,$processes]}" -v b="${ms[$which,8,64]}" 'BEGIN { printf "  %7.2f (%5.2f×)      ", a, a / b }'
    done
    [ -n "${OLD:-}" ] && awk -v a="${ms[NEW,$gpus,$processes]}" -v b="${ms[OLD,$gpus,$processes]}" 'BEGIN { printf "  %.2f", a / b }'
    echo
done
for which in "${BINARIES[@]}"; do
    awk -v a="${ms[$which,32,2048]}" -v b="${ms[$which,8,64]}" -v w="$which" \
        'BEGIN { printf "%s: %.1f µs per process from 8 × 64 to 32 × 2048\n", w, (a - b) * 1000 / (2048 - 64) }'
done
