#!/usr/bin/env bash
# The serve refresh's nvidia-smi runs (not a test; results go in
# bench/README.md, "nvidia-smi runs per serve refresh"): two binaries serve
# side by side for SECONDS at --interval 1s against tests/fakes/nvidia-smi
# answering as an H100 driver that lacks the clocks_event_reasons.* names
# (so the legacy throttle names answer), each logging its queries; prints
# each one's nvidia-smi runs per refresh after the first, and NEW ÷ OLD.
# usage: OLD=path/to/gpuledger [NEW=build/gpuledger] bench/refresh_queries.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=${1:-12}
NEW=${NEW:-build/gpuledger}
[ -x "${OLD:-}" ] || { echo "bench: set OLD to the binary to compare with" >&2; exit 1; }
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait; rm -rf "$work"' EXIT
cp -r testdata/nvidia/h100-80gb-hbm3-590.48.01 "$work/driver"
printf '%s\n' clocks_event_reasons.hw_thermal_slowdown clocks_event_reasons.sw_thermal_slowdown >"$work/driver/unknown-fields"
printf '0, Not Active, Active\n' >"$work/driver/clocks_throttle_reasons.csv"
mkdir "$work/no-rules"
for which in OLD NEW; do
    FAKE_SMI_DIR=$work/driver FAKE_SMI_LOG=$work/$which.log "${!which}" serve --listen 127.0.0.1:0 \
        --interval 1s --nvidia-smi "$PWD/tests/fakes/nvidia-smi" --no-docker --no-nomad --node bench \
        --rules "$work/no-rules" --kernel-log off 2>/dev/null &
    pids+=($!)
done
sleep "$SECONDS_RUN"
kill "${pids[@]}"
wait || true
main_q=$(head -1 "$work/NEW.log")
# per_refresh LOG: runs per refresh after the first (whole refreshes only).
per_refresh() {
    awk -v q="$1" '$0 == q { n++ } n >= 2 { runs[n]++ } END {
        for (i = 2; i < n; i++) total += runs[i]; printf "%.2f %d\n", total / (n - 2), n - 2 }' "$2"
}
read -r old old_n < <(per_refresh "$main_q" "$work/OLD.log")
read -r new new_n < <(per_refresh "$main_q" "$work/NEW.log")
echo "old: $old nvidia-smi runs per refresh ($old_n refreshes)"
echo "new: $new nvidia-smi runs per refresh ($new_n refreshes)"
awk -v a="$new" -v b="$old" 'BEGIN { printf "new / old: %.2f\n", a / b }'
