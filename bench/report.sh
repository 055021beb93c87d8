#!/usr/bin/env bash
# The report benchmark (not a test; results go in bench/README.md, "report"):
# `gpuledger report --json` (FORMAT=json, the default) or the text report
# (FORMAT=text: its tables) against tests/fakes/fake_prometheus.py answering
# the per-job query with N series (SIZES, default 5,000, 20,000, 60,000 and
# 200,000, about 22 MB: a cluster of 100,000 jobs), PER_JOB of them per job
# (default 2, its held and idle series, as gpuledger serve exports them;
# 1: each series a job of its own, the most entries an answer can make),
# the other queries with a few. Per size: the answer's bytes, CPU time (user +
# system, the least of RUNS runs) and peak RSS (their median) from
# /usr/bin/time, the exit status and the end of the error line; then, in
# the same run, the CPU ratio of each accepted size to the one before
# and each size's peak RSS above that of a report of an empty answer, per
# byte of the answer. With OLD=path/to/gpuledger the same for that binary,
# side by side.
# usage: [OLD=…] [NEW=build/gpuledger] [RUNS=5] [SIZES="5000 20000 60000 200000"] [PER_JOB=2]
#        [FORMAT=json|text] bench/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SIZES=${SIZES:-5000 20000 60000 200000}
PER_JOB=${PER_JOB:-2}
NEW=${NEW:-build/gpuledger}
FORMAT=${FORMAT:-json}
case $FORMAT in
json) FORMAT_FLAGS=(--json) ;;
text) FORMAT_FLAGS=() ;;
*) echo "bench: FORMAT is json or text, not $FORMAT" >&2; exit 2 ;;
esac
[ -x "$NEW" ] || { echo "bench: no $NEW; build first or set NEW" >&2; exit 1; }
WORK=$(mktemp -d /tmp/gpuledger-report-bench.XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT

# One fake Prometheus per size, its per-job answer N series of about 110 bytes.
declare -A URL
for n in $SIZES; do
    python3 - "$n" "$PER_JOB" "$WORK/answers-$n.json" <<'PY'
import json, sys
n, per_job = int(sys.argv[1]), int(sys.argv[2])
jobs = [{"metric": {"namespace": "ns%d" % (i // per_job % 50), "nomad_job": "job-%06d" % (i // per_job),
                    "use": ("held", "idle")[i % 2]},
         "value": str(3600 + i)} for i in range(n)]
nodes = [{"metric": {"node": "gpu%d" % i, "state": "held"}, "value": "7200"} for i in range(4)]
json.dump({"jobs": jobs, "nodes": nodes}, open(sys.argv[3], "w"))
PY
    python3 tests/fakes/fake_prometheus.py --port-file "$WORK/port-$n" --answers "$WORK/answers-$n.json" \
        --max-seconds 3600 2>"$WORK/fake-$n.err" &
    PIDS+=($!)
done
for n in $SIZES; do
    for _ in $(seq 100); do [ -s "$WORK/port-$n" ] && break; sleep 0.1; done
    URL[$n]=http://127.0.0.1:$(cat "$WORK/port-$n")
done

# bytes N: the size of the per-job answer of size N.
bytes() {
    curl -s --get --data-urlencode 'query=sum by (namespace, nomad_job, use) (increase(gpuledger_job_gpu_seconds_total[7d]))' \
        "${URL[$1]}/ok/api/v1/query" | wc -c
}

# measure BINARY URL: "cpu_seconds peak_kib rc" of `report` against URL: the least CPU time of
# RUNS (the one least disturbed by the machine's other work) and the median peak RSS.
measure() {
    local binary=$1 url=$2 i rc
    for ((i = 0; i < RUNS; i++)); do
        rc=0
        /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$binary" report --prometheus "$url" --since 7d "${FORMAT_FLAGS[@]}" \
            >/dev/null 2>"$WORK/err" || rc=$?
        read -r user sys kib < <(tail -1 "$WORK/time")
        echo "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }') $kib $rc"
    done >"$WORK/runs"
    echo "$(sort -n "$WORK/runs" | head -1 | cut -d' ' -f1)" \
        "$(sort -n -k2 "$WORK/runs" | awk -v r="$RUNS" 'NR == int((r + 1) / 2) { print $2, $3 }')"
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); RUNS=$RUNS, PER_JOB=$PER_JOB, FORMAT=$FORMAT"
for which in OLD NEW; do
    binary=${!which:-}
    [ -n "$binary" ] || continue
    any=${SIZES%% *}
    read -r _ base_kib _ < <(measure "$binary" "${URL[$any]}/empty")
    echo "$which: $binary; an empty answer: peak RSS $base_kib KiB"
    printf '  %8s %11s %8s %10s %14s  %s\n' series bytes "CPU s" "peak KiB" "(RSS-empty)/B" "exit, error"
    ratios="" last_cpu="" last_n=""
    for n in $SIZES; do
        size=$(bytes "$n")
        read -r cpu kib rc < <(measure "$binary" "${URL[$n]}/ok")
        err=$(tail -c 100 "$WORK/err" | tr -d '\n')
        printf '  %8d %11d %8s %10d %14s  %s\n' "$n" "$size" "$cpu" "$kib" \
            "$(awk -v k="$kib" -v b="$base_kib" -v s="$size" 'BEGIN { printf "%.2f", (k - b) * 1024 / s }')" "$rc${err:+, $err}"
        if [ "$rc" = 0 ]; then
            [ -z "$last_cpu" ] || ratios+=$(awk -v a="$cpu" -v b="$last_cpu" -v m="$n" -v n="$last_n" \
                'BEGIN { printf "  CPU at %d series / at %d (%.2fx the series): %.2f\\n", m, n, m / n, a / b }')
            last_cpu=$cpu last_n=$n
        fi
    done
    printf '%b' "$ratios"
done
