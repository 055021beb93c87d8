#!/usr/bin/env bash
# The install benchmarks (not a test; results go in bench/README.md, "Static
# release and .deb build"): the same runs for the static release binary and
# the normal (.deb) build, side by side:
#   1. stripped size;
#   2. `version` wall time (hyperfine -N);
#   3. `check --json` on a 4-GPU node with a cheap nvidia-smi (a dash script
#      printing answers recorded from tests/fakes/nvidia-smi): wall time, the
#      same nvidia-smi runs alone (the sum of each one's mean), their ratio,
#      and peak RSS (GNU time, the median of 11 runs);
#   4. serve --demo --interval 1s: RSS at start, peak RSS under
#      `wrk -t2 -c32 -d8s`, and RSS and peak after MINUTES minutes with a
#      scrape every 15 s (both binaries serve side by side meanwhile).
# usage: bench/install.sh [MINUTES]   (default 10)
# STATIC=dist/gpuledger-v...-linux-amd64 (default: the newest in dist/),
# DEB=build/gpuledger (stripped here as the .deb strips it).
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:-10}
if [ -z "${STATIC:-}" ]; then
    releases=(dist/gpuledger-v*-linux-amd64)
    STATIC=${releases[-1]}
fi
DEB=${DEB:-build/gpuledger}
for tool in hyperfine wrk /usr/bin/time dash; do
    command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
[ -x "$STATIC" ] || { echo "bench: no static binary; run scripts/release or set STATIC" >&2; exit 1; }
[ -x "$DEB" ] || { echo "bench: no $DEB; run scripts/setup or set DEB" >&2; exit 1; }
WORK=$(mktemp -d /tmp/gpuledger-bench.XXXXXX)
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done; rm -rf "$WORK"' EXIT
cp "$STATIC" "$WORK/static"
strip -o "$WORK/deb" "$DEB"
binaries=(static deb)

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${binaries[@]}"; do echo "$b: $("$WORK/$b" version), $(stat -c %s "$WORK/$b") bytes stripped"; done

echo
echo "== version"
hyperfine -N --style none --warmup 20 --runs 300 --export-json "$WORK/version.json" 2>>"$WORK/hyperfine.err" \
    -n static "$WORK/static version" -n deb "$WORK/deb version" >/dev/null
jq_means() { python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("%s: mean %.2f ms, median %.2f ms, min %.2f ms" % (r["command"], r["mean"] * 1e3, r["median"] * 1e3, r["min"] * 1e3))' "$1"; }
jq_means "$WORK/version.json"

echo
echo "== check --json, 4 GPUs, a cheap nvidia-smi"
# Record each nvidia-smi run of one check (argv, answer, status) through the
# fake, then answer the same from a dash script. The fixture is named in the
# script: gpuledger starts nvidia-smi with an environment of its own (PATH and
# LC_ALL only), so a FAKE_SMI_DIR set here would not reach the fake.
mkdir "$WORK/smi"
cat >"$WORK/record-smi" <<EOF
#!/bin/bash
n=\$\$ # (the queries of a round run at once: each its own name)
printf '%s\n' "\$*" >"$WORK/smi/\$n.args"
FAKE_SMI_DIR="$PWD/testdata/engine/docker-node" "$PWD/tests/fakes/nvidia-smi" "\$@" >"$WORK/smi/\$n.out"
code=\$?
echo "\$code" >"$WORK/smi/\$n.code"
cat "$WORK/smi/\$n.out"
exit \$code
EOF
chmod +x "$WORK/record-smi"
# The kernel log from an empty file: with the default (auto), check starts journalctl, and
# /usr/bin/time's peak RSS is then journalctl's (about 7 MiB), not gpuledger's.
: >"$WORK/kern.log"
check_args=(check --json --no-nomad --no-docker --podman off --node bench --kernel-log "$WORK/kern.log")
"$WORK/deb" "${check_args[@]}" --nvidia-smi "$WORK/record-smi" >/dev/null
{
    echo '#!/bin/dash'
    echo 'case "$*" in'
    for args in "$WORK"/smi/*.args; do
        n=$(basename "$args" .args)
        echo "'$(cat "$args")') n=$n code=$(cat "$WORK/smi/$n.code") ;;"
    done
    echo '*) exit 2 ;;'
    echo 'esac'
    printf '%s\n' "while IFS= read -r line; do printf '%s\\n' \"\$line\"; done <$WORK/smi/\$n.out"
    printf '%s\n' "exit \$code"
} >"$WORK/nvidia-smi"
chmod +x "$WORK/nvidia-smi"
spawns=()
for args in "$WORK"/smi/*.args; do spawns+=(-n "smi $(basename "$args" .args)" "$WORK/nvidia-smi $(cat "$args")"); done
echo "nvidia-smi runs per check: $((${#spawns[@]} / 3))"
hyperfine -N -i --style none --warmup 10 --runs 200 --export-json "$WORK/check.json" 2>>"$WORK/hyperfine.err" \
    -n static "$WORK/static ${check_args[*]} --nvidia-smi $WORK/nvidia-smi" \
    -n deb "$WORK/deb ${check_args[*]} --nvidia-smi $WORK/nvidia-smi" "${spawns[@]}" >/dev/null
python3 -c 'import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
alone = {stat: sum(r[stat] for name, r in results.items() if name.startswith("smi ")) for stat in ("mean", "median", "min")}
print("the nvidia-smi runs alone: sum of means %.2f ms, of medians %.2f ms, of minimums %.2f ms"
      % (alone["mean"] * 1e3, alone["median"] * 1e3, alone["min"] * 1e3))
for name in ("static", "deb"):
    r = results[name]
    print("%s: mean %.2f ms, median %.2f ms, min %.2f ms: %.2fx, %.2fx, %.2fx the runs alone" % (name,
        r["mean"] * 1e3, r["median"] * 1e3, r["min"] * 1e3,
        r["mean"] / alone["mean"], r["median"] / alone["median"], r["min"] / alone["min"]))' "$WORK/check.json"
for b in "${binaries[@]}"; do
    for _ in $(seq 11); do
        /usr/bin/time -f %M "$WORK/$b" "${check_args[@]}" --nvidia-smi "$WORK/nvidia-smi" 2>&1 >/dev/null | tail -n 1
    done | sort -n | sed -n 6p | awk -v b="$b" '{ printf "%s: check peak RSS %.2f MiB (median of 11)\n", b, $1 / 1024 }'
done

echo
echo "== serve --demo --interval 1s"
# kib PID FIELD: FIELD (VmRSS, VmHWM) of PID in KiB.
kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
declare -A url pid
for b in "${binaries[@]}"; do
    "$WORK/$b" serve --demo --listen 127.0.0.1:0 --interval 1s 2>"$WORK/$b.err" &
    pid[$b]=$!
    pids+=("${pid[$b]}")
    for _ in $(seq 100); do
        address=$(sed -n 's/^gpuledger .* serving on \(.*\) (refresh .*)$/\1/p' "$WORK/$b.err")
        [ -n "$address" ] && break
        sleep 0.1
    done
    url[$b]=http://$address
done
sleep 2
for b in "${binaries[@]}"; do echo "$b: at start VmRSS $(kib "${pid[$b]}" VmRSS) kB"; done
for b in "${binaries[@]}"; do
    wrk -t2 -c32 -d8s "${url[$b]}/metrics" >"$WORK/$b.wrk"
    echo "$b: under wrk ($(awk '/Requests\/sec/ { print $2 }' "$WORK/$b.wrk") req/s) VmHWM $(kib "${pid[$b]}" VmHWM) kB"
done
for _ in $(seq $((MINUTES * 4))); do
    for b in "${binaries[@]}"; do curl -s -o /dev/null "${url[$b]}/metrics"; done
    sleep 15
done
for b in "${binaries[@]}"; do
    echo "$b: after $MINUTES min VmRSS $(kib "${pid[$b]}" VmRSS) kB, VmHWM $(kib "${pid[$b]}" VmHWM) kB"
done
