#!/usr/bin/env bash
# What nvidia-smi's start-up costs a `check` (not a test; results go in bench/README.md,
# "nvidia-smi in rounds"). A real driver spends tens of milliseconds starting each nvidia-smi;
# here every call costs DELAY (50 ms): a replay script answers each query with what
# tests/fakes/nvidia-smi answered it (recorded once), after `sleep DELAY`. For each fixture
# (the H100 capture; an older driver without remapped_rows.* fields, tlimit or the
# clocks_event_reasons names) it prints the nvidia-smi processes one `check` starts, the
# median wall time of RUNS checks (farm-bench) and that time in spawns' worth: ÷ the median
# wall time of one replayed query started alone, measured in the same run. With OLD set, both
# binaries take turns (farm-bench --vs) and the last column is new ÷ old, pair by pair. The
# floor, also measured here: the same check of the node's snapshot (`check --replay`), which
# starts no nvidia-smi at all: gpuledger's own work. (check wall - floor) ÷ one query is
# then the rounds of waiting for nvidia-smi. The rounds column: the rounds one check ran its
# queries in, from the replay's start and end marks (a query started while none of the check's
# others runs begins a round; each replayed query sleeps DELAY after its start mark, so the
# queries of one round all start within it). And a shell that starts the replayed queries of the
# new binary's check in those rounds (a round's queries at once, then the next round's) and
# does nothing else: what those rounds cost on this machine, under its load, in spawns' worth
# (one round for the H100, two for the older driver).
# usage: [OLD=path/to/gpuledger] [NEW=build/gpuledger] bench/smi_rounds.sh
# Environment: RUNS (10), DELAY (0.05).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
RUNS=${RUNS:-10}
DELAY=${DELAY:-0.05}
NEW=${NEW:-build/gpuledger}
BINARIES=(NEW)
[ -n "${OLD:-}" ] && BINARIES=(NEW OLD)
for which in "${BINARIES[@]}"; do
    [ -x "${!which}" ] || { echo "bench: no ${!which}; build first or set $which" >&2; exit 1; }
done
command -v farm-bench >/dev/null || { echo "bench: needs farm-bench" >&2; exit 1; }
bench_work
FIXTURES=(testdata/nvidia/h100-80gb-hbm3-590.48.01 testdata/nvidia/bad/old-driver)

# make_scripts DIR FIXTURE: DIR/record/nvidia-smi (asks the fake nvidia-smi answering from
# FIXTURE and keeps its answer under DIR/answers, keyed by the arguments) and
# DIR/replay/nvidia-smi (logs "start ARGS" in DIR/calls, sleeps DELAY, prints the kept answer,
# logs "end").
make_scripts() {
    local dir=$1 fixture=$2
    mkdir -p "$dir/record" "$dir/replay" "$dir/answers"
    cat >"$dir/record/nvidia-smi" <<EOF
#!/usr/bin/env bash
key=\$(printf '%s\n' "\$@" | md5sum | cut -c1-32)
FAKE_SMI_DIR=$PWD/$fixture $PWD/tests/fakes/nvidia-smi "\$@" >"$dir/answers/\$key.out" 2>"$dir/answers/\$key.err"
echo \$? >"$dir/answers/\$key.rc"
cat "$dir/answers/\$key.out"
cat "$dir/answers/\$key.err" >&2
exit "\$(cat "$dir/answers/\$key.rc")"
EOF
    cat >"$dir/replay/nvidia-smi" <<EOF
#!/usr/bin/env bash
key=\$(printf '%s\n' "\$@" | md5sum | cut -c1-32)
echo "start \$*" >>"$dir/calls"
trap 'echo end >>"$dir/calls"' EXIT
sleep $DELAY
[ -f "$dir/answers/\$key.rc" ] || { echo "replay: no recorded answer for \$*" >&2; exit 255; }
cat "$dir/answers/\$key.out"
cat "$dir/answers/\$key.err" >&2
exit "\$(cat "$dir/answers/\$key.rc")"
EOF
    chmod +x "$dir/record/nvidia-smi" "$dir/replay/nvidia-smi"
}

# median_wall REPORT [A|B]: the median wall seconds of farm-bench's REPORT for A (or B).
median_wall() { awk -v who="${2:-A}" '$1 == who && $2 == "wall" { print $4 }' "$1"; }

# in_rounds CALLS REPLAY: a shell script that starts REPLAY with the arguments of each start
# mark of CALLS, those of one round at once, round after round: a start mark written while
# every run started before it has ended begins a round.
in_rounds() {
    echo '#!/usr/bin/env bash'
    awk -v r="$2" '$1 == "start" { if (running == 0 && NR > 1) print "wait"
                                   running++; sub(/^start /, ""); printf "%s %s >/dev/null 2>&1 &\n", r, $0 }
                   $1 == "end" { running-- }
                   END { print "wait" }' "$1"
}

# rounds_of CALLS: how many rounds CALLS's runs ran in (as in_rounds groups them).
rounds_of() { awk '$1 == "start" { if (running == 0) n++; running++ } $1 == "end" { running-- } END { print n }' "$1"; }

printf '%-28s %-4s %9s %6s %12s %15s %9s %14s\n' fixture bin processes rounds "check wall" "spawns' worth" "new/old" "waiting worth"
for fixture in "${FIXTURES[@]}"; do
    name=$(basename "$fixture")
    dir=$WORK/$name
    make_scripts "$dir" "$fixture"
    CHECK=(check --no-docker --no-nomad --kernel-log off --node bench --rules "$WORK/rules")
    for which in "${BINARIES[@]}"; do
        "${!which}" "${CHECK[@]}" --nvidia-smi "$dir/record/nvidia-smi" >/dev/null
    done
    main_q=--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps
    farm-bench -n "$RUNS" -- "$dir/replay/nvidia-smi" "$main_q" --format=csv,noheader,nounits >"$WORK/spawn.txt" 2>&1
    spawn=$(median_wall "$WORK/spawn.txt")
    "$NEW" snapshot --no-docker --no-nomad --kernel-log off --node bench --nvidia-smi "$dir/record/nvidia-smi" >"$dir/snapshot.json"
    farm-bench -n "$RUNS" -- "$NEW" check --replay "$dir/snapshot.json" --rules "$WORK/rules" >"$WORK/floor.txt" 2>&1
    floor=$(median_wall "$WORK/floor.txt")
    : >"$dir/calls"
    "$NEW" "${CHECK[@]}" --nvidia-smi "$dir/replay/nvidia-smi" >/dev/null
    in_rounds "$dir/calls" "$dir/replay/nvidia-smi" >"$dir/rounds.sh"
    shell_rounds=$(rounds_of "$dir/calls")
    chmod +x "$dir/rounds.sh"
    farm-bench -n "$RUNS" -- "$dir/rounds.sh" >"$WORK/shell.txt" 2>&1
    shell=$(median_wall "$WORK/shell.txt")
    if [ -n "${OLD:-}" ]; then
        farm-bench -n "$RUNS" --timeout 600 --vs "$OLD ${CHECK[*]} --nvidia-smi $dir/replay/nvidia-smi" \
            -- "$NEW" "${CHECK[@]}" --nvidia-smi "$dir/replay/nvidia-smi" >"$WORK/check.txt" 2>&1
        ratio=$(awk '$1 == "A/B" && $2 == "wall" { print $4 }' "$WORK/check.txt")
    else
        farm-bench -n "$RUNS" --timeout 600 -- "$NEW" "${CHECK[@]}" --nvidia-smi "$dir/replay/nvidia-smi" >"$WORK/check.txt" 2>&1
        ratio=""
    fi
    for which in "${BINARIES[@]}"; do
        : >"$dir/calls"
        "${!which}" "${CHECK[@]}" --nvidia-smi "$dir/replay/nvidia-smi" >/dev/null
        processes=$(grep -c '^start ' "$dir/calls")
        wall=$(median_wall "$WORK/check.txt" "$([ "$which" = NEW ] && echo A || echo B)")
        printf '%-28s %-4s %9s %6s %10s s %15s %9s %14s\n' "$name" "$which" "$processes" "$(rounds_of "$dir/calls")" "$wall" \
            "$(awk -v w="$wall" -v s="$spawn" 'BEGIN { printf "%.1f", w / s }')" "$([ "$which" = NEW ] && echo "$ratio")" \
            "$(awk -v w="$wall" -v f="$floor" -v s="$spawn" 'BEGIN { printf "%.1f", (w - f) / s }')"
    done
    echo "  (one replayed query alone: $spawn s; check --replay, no nvidia-smi: $floor s;" \
        "the shell's $shell_rounds round(s): $shell s, $(awk -v w="$shell" -v s="$spawn" 'BEGIN { printf "%.1f", w / s }') spawns' worth)"
done
