#!/usr/bin/env bash
# What a serve refresh costs per GPU process, in machine instructions (not
# a test; results go in bench/README.md, "Work per GPU process"): the
# made-up nodes of bench/processes.sh (1 × 8, 8 × 64, 8 × 512 and
# 32 × 2,048 GPUs × processes) each served with `serve --replay` under
# callgrind for SECONDS (scaled by size) at --interval 100ms; the
# instructions of each refresh after the first (the refreshes callgrind
# counted, their instructions in serve_loop.c's serve_refresh, the first
# left out), each size ÷ 8 × 64, and the instructions each process adds
# from 8 × 64 to 32 × 2,048. Unlike CPU time these repeat from run to run
# (within 1–2 %) on a loaded machine, so two builds are compared by their
# counts alone.
# usage: [GPULEDGER=build/gpuledger] bench/refresh_instructions.sh
# Environment: SECONDS_PER_SIZE ("10 15 25 45"), needs valgrind and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
GPULEDGER=${GPULEDGER:-build/gpuledger}
[ -x "$GPULEDGER" ] || { echo "bench: no $GPULEDGER; build first or set GPULEDGER" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench: needs valgrind" >&2; exit 1; }
read -r -a SECONDS_OF <<<"${SECONDS_PER_SIZE:-10 15 25 45}"
bench_work
process_snapshots "$GPULEDGER" "$WORK"

# steady_refresh OUT: "REFRESHES INSTRUCTIONS" of the refreshes after the
# first in callgrind's file OUT (serve_refresh is called once before the
# loop, then from it: the loop's call site counts the later ones).
steady_refresh() {
    python3 - "$1" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
ids = {m.group(1) for l in lines for m in [re.match(r"c?fn=\((\d+)\) serve_refresh", l)] if m}
best = None
for i, line in enumerate(lines):
    m = re.match(r"cfn=\((\d+)\)", line)
    if m and m.group(1) in ids and lines[i + 1].startswith("calls="):
        calls = int(lines[i + 1].split()[0].split("=")[1])
        cost = int(lines[i + 2].split()[1])
        if best is None or calls > best[0]:
            best = (calls, cost)
if not best or best[0] < 2:
    sys.exit("bench: fewer than two refreshes after the first; give the size more seconds")
print(best[0], best[1])
EOF
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $GPULEDGER ($("$GPULEDGER" version))"
declare -A per_refresh
for k in "${!PROCESS_SIZES[@]}"; do
    read -r gpus processes <<<"${PROCESS_SIZES[$k]}"
    serve_start "$WORK/serve.err" valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
        "$GPULEDGER" serve --replay "$WORK/${gpus}x$processes.json" --listen 127.0.0.1:0 --interval 100ms \
        --rules "$WORK/rules"
    sleep "${SECONDS_OF[$k]}"
    serve_stop # SIGTERM: callgrind writes its file as serve ends
    read -r refreshes instructions < <(steady_refresh "$WORK/callgrind.out")
    per_refresh[$gpus,$processes]=$((instructions / refreshes))
    printf '%-14s %3d refreshes  %8.1f M instructions each\n' "$gpus × $processes" "$refreshes" \
        "$(awk -v i="${per_refresh[$gpus,$processes]}" 'BEGIN { print i / 1e6 }')"
done
for size in "${PROCESS_SIZES[@]}"; do
    read -r gpus processes <<<"$size"
    awk -v a="${per_refresh[$gpus,$processes]}" -v b="${per_refresh[8,64]}" -v s="$gpus × $processes" \
        'BEGIN { printf "%-14s %5.2f× the 8 × 64 refresh\n", s, a / b }'
done
awk -v a="${per_refresh[32,2048]}" -v b="${per_refresh[8,64]}" \
    'BEGIN { printf "%.1f k instructions per process from 8 × 64 to 32 × 2048\n", (a - b) / 1000 / (2048 - 64) }'
