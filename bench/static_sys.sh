#!/usr/bin/env bash
# The static release's system time reading a fleet (not a test; results go in bench/README.md,
# "Static release: system time in fleet"): `fleet ls --json` over 1,000 nodes of
# bench/fleet_server.c (the demo ledger doubled to 8 GPUs, as bench/fleet.sh serves it), the
# binaries in turn, RUNS times each: user and system seconds (/usr/bin/time), and once each
# under `strace -f -c` the mmap, munmap, madvise and brk calls, per node. BEFORE, when set, is a
# third binary measured in the same runs (the same static build linked with musl's malloc, say).
# usage: STATIC=dist/gpuledger-v…-linux-amd64 [DYNAMIC=build/gpuledger] [BEFORE=…] bench/static_sys.sh
# Environment: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
RUNS=${RUNS:-3}
DYNAMIC=${DYNAMIC:-build/gpuledger}
binaries=(STATIC DYNAMIC)
[ -n "${BEFORE:-}" ] && binaries=(BEFORE "${binaries[@]}")
for which in "${binaries[@]}"; do
    [ -x "${!which:-}" ] || { echo "bench: set $which to a gpuledger binary" >&2; exit 1; }
done
command -v strace >/dev/null || { echo "bench: needs strace" >&2; exit 1; }
bench_work
export GPULEDGER_RULES=$WORK/rules
fleet_nodes "$WORK" "$DYNAMIC" 1000

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
    for which in "${binaries[@]}"; do
        /usr/bin/time -f "$which %U user %S sys %e wall %M KiB" -o "$WORK/time" "${!which}" fleet ls --json \
            --targets "$FLEET_TARGETS" >/dev/null
        cat "$WORK/time"
    done
done
for which in "${binaries[@]}"; do
    strace -f -c -o "$WORK/strace.txt" "${!which}" fleet ls --json --targets "$FLEET_TARGETS" >/dev/null
    awk -v who="$which" '$NF ~ /^(mmap|munmap|madvise|brk)$/ { printf "%s %s %.1f per node\n", who, $NF, $4 / 1000 }' "$WORK/strace.txt"
done
