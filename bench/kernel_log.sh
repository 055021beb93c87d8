#!/usr/bin/env bash
# serve and check with a kernel log of 500,000 Xid lines this boot (not a
# test; results go in bench/README.md, "A kernel log of 500,000 Xid
# lines"): each binary, one after the other, serves for SECONDS at
# --interval 1s with --kernel-log FILE while ten lines a second are
# appended to the log; prints how long the first refresh took (until
# /healthz answered), the refresh time /metrics reports after it (median
# and worst), serve's own CPU per refresh after the first (from the end of
# the first to the end of the last seen), its VmRSS and VmHWM at the end; then check's CPU and peak RSS on the same log. NEW ÷
# OLD for each.
# usage: OLD=path/to/gpuledger [NEW=build/gpuledger] bench/kernel_log.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${1:-30}
NEW=${NEW:-build/gpuledger}
[ -x "${OLD:-}" ] || { echo "bench: set OLD to the binary to compare with" >&2; exit 1; }
work=$(mktemp -d)
serve_pid=""
trap '[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; wait; rm -rf "$work"' EXIT
mkdir "$work/no-rules"
export FAKE_SMI_DIR=$PWD/testdata/nvidia/h100-80gb-hbm3-590.48.01
ARGS=(--nvidia-smi "$PWD/tests/fakes/nvidia-smi" --no-docker --no-nomad --node bench --rules "$work/no-rules")

# xid_lines FROM N: N dmesg Xid lines about the H100, two codes, three processes.
xid_lines() {
    awk -v from="$1" -v n="$2" 'BEGIN { for (i = from; i < from + n; i++)
        printf "[%12.6f] NVRM: Xid (PCI:0000:00:09): %d, pid=%d, name=job%d, Ch 00000008\n", 3200 + i / 100, (i % 2 ? 13 : 48), 1000 + i % 500, i % 3 }'
}

# cpu_ms PID: user + system CPU time of PID (its children excluded), in ms.
cpu_ms() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000 / hz }' "/proc/$1/stat"
}

# metric NAME: the value of the serve's /metrics sample NAME{node="bench"}.
metric() {
    curl -s --max-time 30 "$URL/metrics" | awk -v name="$1" '$1 == name "{node=\"bench\"}" { print $2 }'
}

# serve_run WHICH: serves the log with binary $WHICH; prints "first_s
# median_s worst_s cpu_ms_per_refresh refreshes rss_kb hwm_kb".
serve_run() {
    local binary=${!1} log=$work/$1.log started address="" first last_at at cpu0 cpu1 i
    { echo "[    0.000000] Linux version 6.1.0 (debian-kernel@lists.debian.org)"; xid_lines 0 500000; } >"$log"
    started=$(date +%s.%N)
    "$binary" serve --listen 127.0.0.1:0 --interval 1s "${ARGS[@]}" --kernel-log "$log" 2>"$work/$1.err" &
    serve_pid=$!
    for _ in $(seq 3000); do
        address=$(sed -n 's/^gpuledger .* serving on \(.*\) (refresh .*)$/\1/p' "$work/$1.err")
        [ -n "$address" ] && break
        sleep 0.02
    done
    URL=http://$address
    for _ in $(seq 3000); do
        case $(curl -s --max-time 60 "$URL/healthz") in
        "gpuledger: no data yet"* | "") sleep 0.02 ;;
        *) break ;;
        esac
    done
    first=$(echo "$(date +%s.%N) - $started" | bc)
    cpu0=$(cpu_ms "$serve_pid")
    cpu1=$cpu0
    last_at=$(metric gpuledger_last_refresh_timestamp_seconds)
    : >"$work/$1.durations"
    for i in $(seq "$SECONDS_RUN"); do
        xid_lines $((500000 + i * 10)) 10 >>"$log"
        sleep 1
        at=$(metric gpuledger_last_refresh_timestamp_seconds)
        if [ "$at" != "$last_at" ]; then
            cpu1=$(cpu_ms "$serve_pid") # at the end of a refresh, give or take the second slept
            metric gpuledger_refresh_duration_seconds >>"$work/$1.durations"
            last_at=$at
        fi
    done
    local cpu=$((cpu1 - cpu0)) refreshes
    refreshes=$(wc -l <"$work/$1.durations")
    local rss hwm
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$serve_pid/status")
    hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$serve_pid/status")
    kill "$serve_pid"
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
    sort -g "$work/$1.durations" | awk -v first="$first" -v cpu="$cpu" -v n="$refreshes" -v rss="$rss" -v hwm="$hwm" \
        '{ d[NR] = $1 } END { printf "%.2f %.4f %.4f %d %d %d %d\n", first, d[int((NR + 1) / 2)], d[NR], cpu / (n > 0 ? n : 1), n, rss, hwm }'
}

# check_run WHICH: check on the 500,000-line log; prints "cpu_s max_rss_kb".
check_run() {
    local log=$work/check.log
    [ -f "$log" ] || { echo "[    0.000000] Linux version 6.1.0 (debian-kernel@lists.debian.org)"; xid_lines 0 500000; } >"$log"
    /usr/bin/time -f "%U %S %M" -o "$work/time" "${!1}" check "${ARGS[@]}" --kernel-log "$log" >/dev/null || true
    awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$work/time"
}

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); log: a boot banner and 500,000 Xid lines, $(xid_lines 0 500000 | wc -c) bytes"
for which in OLD NEW; do
    read -r first median worst cpu n rss hwm < <(serve_run "$which")
    printf '%s serve: first refresh %ss; later refreshes (%d): median %ss, worst %ss, %d ms CPU each; VmRSS %d kB, VmHWM %d kB\n' \
        "$which" "$first" "$n" "$median" "$worst" "$cpu" "$rss" "$hwm"
    eval "${which}_SERVE=\"$first $median $worst $cpu $rss $hwm\""
    read -r check_cpu check_rss < <(check_run "$which")
    printf '%s check: %ss CPU, max RSS %d kB\n' "$which" "$check_cpu" "$check_rss"
    eval "${which}_CHECK=\"$check_cpu $check_rss\""
done
read -r of om _ oc orss _ <<<"$OLD_SERVE"
read -r nf nm _ nc nrss _ <<<"$NEW_SERVE"
read -r occ ocr <<<"$OLD_CHECK"
read -r ncc ncr <<<"$NEW_CHECK"
awk -v of="$of" -v nf="$nf" -v om="$om" -v nm="$nm" -v oc="$oc" -v nc="$nc" -v orss="$orss" -v nrss="$nrss" \
    -v occ="$occ" -v ncc="$ncc" -v ocr="$ocr" -v ncr="$ncr" 'BEGIN {
    printf "new / old: first refresh %.2f, later refresh median %.4f, CPU per refresh %.4f, VmRSS %.2f; check CPU %.2f, check RSS %.2f\n",
        nf / of, nm / om, nc / (oc > 0 ? oc : 1), nrss / orss, ncc / occ, ncr / ocr }'
