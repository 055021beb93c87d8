#!/usr/bin/env bash
# What judging costs per GPU and per node (not a test; results go in
# bench/README.md, "Judging per GPU"): bench/judge_profile.lua's table of
# CPU times, then, under valgrind's cachegrind, the machine instructions
# of judging each input (the run that judges it less the run that only
# makes it, less the same for no ledger: loading the rule set), which do
# not move with the machine's load as CPU times do. With OLD_TREE, a
# checkout of an earlier commit with its build (build/lua/gpuledger/core.so),
# the same for it, and new ÷ old. The fleet's ledger is fleet_ledger's
# (bench/lib.sh), written by this tree's build/gpuledger.
# usage: [OLD_TREE=path/to/checkout] bench/judging.sh
# Environment: RUNS (5), NODES (300 for the times, a third for the counts),
# PROFILE (set: judge_profile.lua's profiles too).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
RUNS=${RUNS:-5}
NODES=${NODES:-300}
HERE=$PWD
WORK=$(mktemp -d /tmp/gpuledger-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fleet_ledger build/gpuledger "$WORK/fleet.json"
TREES=(NEW)
NEW=$HERE
[ -n "${OLD_TREE:-}" ] && TREES=(OLD NEW) && OLD=$(cd "$OLD_TREE" && pwd)

# in_tree TREE COMMAND...: COMMAND with TREE's Lua modules and core.
in_tree() {
    local tree=$1
    shift
    (cd "$tree" && LUA_PATH="lua/?.lua;;" LUA_CPATH="build/lua/?.so;;" "$@")
}

# instructions TREE INPUT JUDGE: the instructions cachegrind counts in one
# run of judge_profile.lua making INPUT (and judging it when JUDGE is 1).
instructions() {
    in_tree "$1" env INPUT="$2" JUDGE="$3" valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        lua5.4 "$HERE/bench/judge_profile.lua" "$WORK/fleet.json" 1 $((NODES / 3)) 2>&1 |
        sed -n 's/^==[0-9]*== I *refs: *//p' | tr -d ,
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for tree in "${TREES[@]}"; do
    echo "== $tree: ${!tree} ($(git -C "${!tree}" log -1 --format='%h %s' 2>/dev/null || echo 'not a checkout'))"
    in_tree "${!tree}" lua5.4 "$HERE/bench/judge_profile.lua" "$WORK/fleet.json" "$RUNS" "$NODES"
done
command -v valgrind >/dev/null || { echo "bench: no valgrind: no instruction counts" >&2; exit 0; }

echo
echo "instructions of judging (cachegrind), thousands"
declare -A count
INPUTS=(none 1x8 8x64 8x512 32x2048 fleet)
for tree in "${TREES[@]}"; do
    for input in "${INPUTS[@]}"; do
        count[$tree,$input]=$(($(instructions "${!tree}" "$input" 1) - $(instructions "${!tree}" "$input" 0)))
    done
done
printf '%-10s' input
for tree in "${TREES[@]}"; do printf '  %14s %10s' "$tree per node" "per GPU"; done
[ -n "${OLD_TREE:-}" ] && printf '  new ÷ old'
echo
for input in "${INPUTS[@]:1}"; do
    case $input in
    fleet) gpus=8 nodes=$((NODES / 3)) ;;
    *) gpus=${input%x*} nodes=1 ;;
    esac
    printf '%-10s' "$input"
    for tree in "${TREES[@]}"; do
        awk -v c="${count[$tree,$input]}" -v f="${count[$tree,none]}" -v n="$nodes" -v g="$gpus" \
            'BEGIN { j = c - f; printf "  %14.0f %10.1f", j / n / 1000, j / n / g / 1000 }'
    done
    [ -n "${OLD_TREE:-}" ] && awk -v a="${count[NEW,$input]}" -v b="${count[OLD,$input]}" -v f="${count[NEW,none]}" \
        -v g="${count[OLD,none]}" 'BEGIN { printf "  %.2f", (a - f) / (b - g) }'
    echo
done
for tree in "${TREES[@]}"; do
    awk -v f="${count[$tree,none]}" -v w="$tree" 'BEGIN { printf "%s: loading the rule set %.0f thousand\n", w, f / 1000 }'
done
