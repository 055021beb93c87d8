#!/usr/bin/env bash
# The real-GPU run: runs ON the GPU machine as `bash tests/real-gpu/run.sh`
# with carry ["tests/real-gpu/carry"] (made beforehand by tests/real-gpu/pack.sh),
# and writes at most 8 files into $OUT (tests/real-gpu/README.md):
#
#   summary.txt        driver, GPUs, optional queries, PASS/FAIL of every check, surprises
#   raw-queries.txt    every nvidia-smi query gpuledger issues, verbatim, with exit status
#                      and stderr; the same with headers and units (--format=csv)
#   fixture.tar        <model>-<driver>/ in the fake nvidia-smi's layout: the top is the
#                      busy capture (hold running), idle/ the idle one
#   gpuledger-idle.txt snapshot, ls, ls --json, check --json with no process of ours
#   gpuledger-busy.txt the same while tests/real-gpu/hold.cu holds 512 MiB
#   serve.txt          serve for a few seconds: /metrics, /ledger, /findings, /healthz
#   timing.txt         nvidia-smi spawns against gpuledger ls
#   artifacts.tar      the raw files behind the logs (snapshots for --replay, JSON,
#                      metrics, nvidia-smi -q and --help-query-*, the trace of this run)
#
# Every step logs its result and goes on; every command runs under `timeout`.
# Rehearsal without a GPU: NVIDIA_SMI=$PWD/tests/fakes/nvidia-smi FAKE_SMI_DIR=DIR OUT=DIR.
# NVIDIA_SMI, when set, is run instead of nvidia-smi and passed to gpuledger as
# --nvidia-smi. GPULEDGER, when set, is the gpuledger binary to run (no carry).
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cd "$src" || exit 1
START_NS=$(date +%s%N)
DEADLINE_S=${RUN_DEADLINE_S:-270} # steps that can be cut short stop after this
HOLD_MIB=512

if [ -z "${OUT:-}" ]; then
    OUT=$(mktemp -d /tmp/real-gpu-out.XXXXXX)
    echo "run.sh: OUT was not set; writing into $OUT"
fi
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/real-gpu.XXXXXX)
ART=$TMP/artifacts
mkdir -p "$ART/idle" "$ART/busy" "$ART/serve" "$ART/smi" "$TMP/fix/idle"
SUMMARY=$OUT/summary.txt RESULTS=$TMP/results NOTES=$TMP/notes FACTS=$TMP/facts
: >"$RESULTS"
: >"$NOTES"
: >"$FACTS"
: >"$SUMMARY"
exec > >(tee -a "$ART/trace.log") 2>&1

HOLD_PID="" SERVE_PID=""
cleanup() {
    [ -z "$HOLD_PID" ] || kill -TERM "$HOLD_PID" 2>/dev/null
    [ -z "$SERVE_PID" ] || kill -TERM "$SERVE_PID" 2>/dev/null
    if [ -d "$ART" ]; then
        tar -C "$ART" -cf "$OUT/artifacts.tar" . 2>/dev/null || echo "run.sh: could not write artifacts.tar"
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

# --- helpers -------------------------------------------------------------------
elapsed_s() { echo $((($(date +%s%N) - START_NS) / 1000000000)); }
past_deadline() { [ "$(elapsed_s)" -ge "$DEADLINE_S" ]; }
ms_since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
step() { printf '\n=== %s (t+%ss)\n' "$*" "$(elapsed_s)"; }
fact() { printf '%-22s %s\n' "$1:" "$2" >>"$FACTS"; }
note() { printf -- '- %s\n' "$*" >>"$NOTES"; echo "NOTE: $*"; }
# result PASS|FAIL|SKIP|INFO NAME TEXT: one line in summary.txt (written as it goes).
result() {
    local line
    line=$(printf '%-4s  %-28s %s' "$1" "$2" "$3")
    echo "$line" >>"$RESULTS"
    echo "$line" >>"$SUMMARY"
    echo "$line"
}
ok_if() { # ok_if NAME TEXT COMMAND...: PASS when the command succeeds, else FAIL
    local name=$1 text=$2
    shift 2
    if "$@"; then result PASS "$name" "$text"; else result FAIL "$name" "$text"; fi
}

# cap LOG SECONDS CMD...: runs CMD under timeout; stdout in $TMP/o, stderr in $TMP/e;
# RC and MS set; appends a readable block to LOG.
RC=0 MS=0
cap() {
    local log=$1 secs=$2 t0
    shift 2
    t0=$(date +%s%N)
    timeout -k 5 "$secs" "$@" >"$TMP/o" 2>"$TMP/e" </dev/null
    RC=$?
    MS=$(ms_since "$t0")
    {
        printf '### $'
        local a
        for a in "$@"; do
            if [[ $a =~ ^[A-Za-z0-9_./=,:+@%-]+$ ]]; then printf ' %s' "$a"; else printf ' %q' "$a"; fi
        done
        printf '\nexit %s  (%s ms)%s\n' "$RC" "$MS" "$([ "$RC" = 124 ] && echo "  TIMED OUT after ${secs}s")"
        echo "--- stdout ($(wc -c <"$TMP/o") bytes)"
        head -c 200000 "$TMP/o"
        [ -z "$(tail -c 1 "$TMP/o")" ] || echo
        if [ -s "$TMP/e" ]; then
            echo "--- stderr"
            head -c 20000 "$TMP/e"
            [ -z "$(tail -c 1 "$TMP/e")" ] || echo
        fi
        echo
    } >>"$log"
}

# http_get URL-PATH PORT OUTFILE: "STATUS" on stdout, body into OUTFILE; curl when
# present, else bash's /dev/tcp (HTTP/1.0, Connection: close).
http_get() {
    if [ -n "$CURL" ]; then
        timeout -k 2 10 curl -sS -m 8 -o "$3" -w '%{http_code}' "http://127.0.0.1:$2$1" 2>>"$TMP/curl.err" || echo 000
    else
        http_get_tcp "$@"
    fi
}
http_get_tcp() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout -k 2 10 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$2" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n" "$1" "$2" >&3
        cat <&3' _ "$1" "$2" >"$3.raw" 2>>"$TMP/curl.err"
    awk 'NR == 1 { print $2 }' "$3.raw" | tr -d '\r' | grep . || echo 000
    awk 'body { print; next } /^\r?$/ { body = 1 }' "$3.raw" >"$3"
    rm -f "$3.raw"
}

# --- what to run ---------------------------------------------------------------
REHEARSAL=0
[ -n "${FAKE_SMI_DIR:-}" ] && REHEARSAL=1
if [ -n "${NVIDIA_SMI:-}" ]; then
    NVIDIA_SMI=$(readlink -f "$NVIDIA_SMI")
    SMI=("$NVIDIA_SMI")
    SMI_FLAG=(--nvidia-smi "$NVIDIA_SMI")
else
    SMI=(nvidia-smi)
    SMI_FLAG=()
fi
FAKE_SMI_ORIG=${FAKE_SMI_DIR:-}
[ "$REHEARSAL" = 0 ] || export FAKE_SMI_DIR
CURL=$(command -v curl || true)
GLF=(--no-docker --no-nomad --podman off "${SMI_FLAG[@]}")

step "setup"
fact "run" "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(hostname), uid $(id -u), $(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'glibc ?')"
[ "$REHEARSAL" = 0 ] || fact "mode" "REHEARSAL with the fake nvidia-smi, FAKE_SMI_DIR=$FAKE_SMI_DIR"
fact "nvidia-smi" "$(command -v "${SMI[0]}" || echo "NOT FOUND (${SMI[0]})")"

# gpuledger: $GPULEDGER, else the carry with LD_LIBRARY_PATH when this glibc is new
# enough, else the carry under its own glibc (the carried loader).
carry=$here/carry
GL=()
glibc_here=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
glibc_needed=$(cat "$carry/glibc-needed.txt" 2>/dev/null)
loader=$(find "$carry/glibc" -name 'ld-linux*' 2>/dev/null | head -1)
gl_modes=()
if [ -n "${GPULEDGER:-}" ]; then
    gl_modes=(given)
elif [ -x "$carry/gpuledger" ]; then
    if [ -n "$glibc_here" ] && [ -n "$glibc_needed" ] &&
        [ "$(printf '%s\n%s\n' "$glibc_needed" "$glibc_here" | sort -V | head -1)" = "$glibc_needed" ]; then
        gl_modes=(libpath loader)
    else
        gl_modes=(loader libpath)
    fi
fi
gl_how=""
for mode in "${gl_modes[@]}"; do
    case $mode in
        given) GL=("$GPULEDGER") ;;
        libpath) GL=(env "LD_LIBRARY_PATH=$carry/lib" "$carry/gpuledger") ;;
        loader) [ -n "$loader" ] || continue
            GL=("$loader" --library-path "$carry/lib:$carry/glibc" "$carry/gpuledger") ;;
    esac
    if v=$(timeout 10 "${GL[@]}" version 2>"$TMP/e"); then
        gl_how="$mode: $v"
        break
    fi
    note "gpuledger ($mode) did not start: $(head -c 300 "$TMP/e")"
    GL=()
done
if [ ${#GL[@]} -gt 0 ]; then
    result PASS setup.gpuledger "runs ($gl_how; glibc here ${glibc_here:-?}, needed ${glibc_needed:-?})"
    fact "gpuledger" "$gl_how"
else
    result FAIL setup.gpuledger "no runnable gpuledger (carry missing? run tests/real-gpu/pack.sh first); its steps are skipped"
fi
have_gl() { [ ${#GL[@]} -gt 0 ]; }

# --- a. raw nvidia-smi queries -------------------------------------------------
MAIN=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps
TLIMIT=index,temperature.gpu.tlimit
EVENT=index,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_thermal_slowdown
THROTTLE=${EVENT//clocks_event_reasons./clocks_throttle_reasons.}
APPS=gpu_uuid,pid,used_memory,process_name
KINDS=(query-gpu tlimit clocks_event_reasons clocks_throttle_reasons compute-apps)
declare -A QFLAG=([query-gpu]=--query-gpu [tlimit]=--query-gpu [clocks_event_reasons]=--query-gpu
    [clocks_throttle_reasons]=--query-gpu [compute-apps]=--query-compute-apps)
declare -A QFIELDS=([query-gpu]=$MAIN [tlimit]=$TLIMIT [clocks_event_reasons]=$EVENT
    [clocks_throttle_reasons]=$THROTTLE [compute-apps]=$APPS)
declare -A QRC=()
qargs() { printf '%s\n' "${QFLAG[$1]}=${QFIELDS[$1]}" "${2:---format=csv,noheader,nounits}"; }

# capture_fixture DIR: runs the five queries as gpuledger does and writes DIR in the
# fake nvidia-smi's layout; the blocks go to raw-queries.txt. Sets QRC[kind].
capture_fixture() {
    local dir=$1 kind args
    mkdir -p "$dir"
    for kind in "${KINDS[@]}"; do
        mapfile -t args < <(qargs "$kind")
        cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" "${args[@]}"
        QRC[$kind]=$RC
        if [ "$RC" != 0 ] && grep -q 'is not a valid field to query' "$TMP/o"; then
            sed -n 's/^Field "\(.*\)" is not a valid field to query.*/\1/p' "$TMP/o" >>"$dir/unknown-fields"
            continue # the fake prints that message itself
        fi
        [ -s "$TMP/o" ] && cp "$TMP/o" "$dir/$kind.csv"
        [ "$RC" = 0 ] || echo "$RC" >"$dir/$kind.exit"
        [ -s "$TMP/e" ] && cp "$TMP/e" "$dir/$kind.stderr"
    done
    if [ -f "$dir/unknown-fields" ]; then
        sort -u -o "$dir/unknown-fields" "$dir/unknown-fields"
    fi
    # -L and -q, which gpuledger asks where a GPU is in MIG mode (the slices and
    # each process's GPU and compute instance), verbatim as the fake serves them
    cap "$ART/smi/fixture-L-q.txt" 20 "${SMI[@]}" -L
    [ "$RC" = 0 ] && cp "$TMP/o" "$dir/list.txt"
    cap "$ART/smi/fixture-L-q.txt" 30 "${SMI[@]}" -q
    [ "$RC" = 0 ] && cp "$TMP/o" "$dir/query.txt"
    return 0
}

step "a. raw nvidia-smi queries"
{
    echo "# every nvidia-smi call of tests/real-gpu/run.sh, verbatim: command, exit status, time, stdout, stderr"
    echo
} >"$OUT/raw-queries.txt"
cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" --version
driver=$(sed -n 's/^DRIVER [Vv]ersion *: *//p' "$TMP/o" | tr -d '\r' | head -1)
cuda=$(sed -n 's/^CUDA [Vv]ersion *: *//p' "$TMP/o" | tr -d '\r' | head -1)
cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" -L
if [ "${MS%.*}" -gt 3000 ]; then
    note "nvidia-smi -L took $MS ms (persistence mode off?): timing runs cut to 2 each"
    REPS_DEFAULT=2
fi
gpus_L=$([ "$RC" = 0 ] && grep -c '^GPU ' "$TMP/o" || echo "?")
cp "$TMP/o" "$ART/smi/L.txt"
if [ "$REHEARSAL" = 1 ] && [ "$RC" != 0 ]; then
    result INFO a.smi-L "the fake nvidia-smi does not answer -L or --version (exit $RC)"
else
    ok_if a.smi-L "nvidia-smi -L lists $gpus_L GPU(s) (exit $RC)" test "$RC" = 0
fi
echo "## gpuledger's queries (--format=csv,noheader,nounits), idle" >>"$OUT/raw-queries.txt"
capture_fixture "$TMP/fix/idle"
for kind in "${KINDS[@]}"; do
    case $kind in
        query-gpu | compute-apps)
            ok_if "a.$kind" "exit ${QRC[$kind]}" test "${QRC[$kind]}" = 0 ;;
        *)
            if [ "${QRC[$kind]}" = 0 ]; then
                result INFO "a.$kind" "answered: $(tr '\n' ';' <"$TMP/fix/idle/$kind.csv" 2>/dev/null | head -c 200)"
            else
                result INFO "a.$kind" "did not answer (exit ${QRC[$kind]}): $(tr '\n' ' ' <"$TMP/fix/idle/unknown-fields" 2>/dev/null)$(head -c 150 "$TMP/fix/idle/$kind.csv" 2>/dev/null | tr '\n' ' ')"
            fi ;;
    esac
done
echo "## the same with headers and units (--format=csv)" >>"$OUT/raw-queries.txt"
for kind in "${KINDS[@]}"; do
    mapfile -t args < <(qargs "$kind" --format=csv)
    cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" "${args[@]}"
done
echo "## context (not gpuledger's queries)" >>"$OUT/raw-queries.txt"
cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" --query-gpu=index,driver_version,persistence_mode,mig.mode.current,compute_mode,vbios_version --format=csv
[ "$RC" = 0 ] && fact "gpu modes" "$(tail -n +2 "$TMP/o" | tr '\n' ';')"
cap "$ART/smi/q.txt" 30 "${SMI[@]}" -q
[ -n "$driver" ] || driver=$(sed -n 's/^Driver Version *: *//p' "$ART/smi/q.txt" | head -1)
[ -n "$cuda" ] || cuda=$(sed -n 's/^CUDA Version *: *//p' "$ART/smi/q.txt" | head -1)
cap "$ART/smi/help-query-gpu.txt" 20 "${SMI[@]}" --help-query-gpu
cp "$TMP/o" "$TMP/help-query-gpu.txt"
cap "$ART/smi/help-query-compute-apps.txt" 20 "${SMI[@]}" --help-query-compute-apps

if [ "$gpus_L" = "?" ] && [ -s "$TMP/fix/idle/query-gpu.csv" ]; then
    gpus_L=$(grep -c . "$TMP/fix/idle/query-gpu.csv")
    note "nvidia-smi -L did not answer: the GPU count ($gpus_L) comes from the main query's rows"
fi
[ -n "$driver" ] || { [ "$REHEARSAL" = 1 ] && driver=fake; }
model=$(awk -F', *' 'NR == 1 { print $3 }' "$TMP/fix/idle/query-gpu.csv" 2>/dev/null)
uuid0=$(awk -F', *' 'NR == 1 { print $2 }' "$TMP/fix/idle/query-gpu.csv" 2>/dev/null)
models=$(awk -F', *' '{ print $1 ": " $3 " (" $4 ", " $6 " MiB)" }' "$TMP/fix/idle/query-gpu.csv" 2>/dev/null | tr '\n' ';')
fact "driver" "${driver:-unknown} (CUDA ${cuda:-?})"
fact "GPUs" "${models:-none read}"
slug=$(printf '%s' "${model:-unknown}" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9.]\{1,\}/-/g' -e 's/^-//' -e 's/-$//')-${driver:-unknown}
fact "fixture dir" "$slug/ (testdata/real/$slug/)"
if grep -q '\[' "$TMP/fix/idle/"*.csv 2>/dev/null; then
    note "bracketed values in the idle answers: $(grep -ho '\[[^]]*\]' "$TMP/fix/idle/"*.csv | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
fi
[ ! -f "$TMP/fix/idle/unknown-fields" ] || note "the driver rejected field(s): $(tr '\n' ' ' <"$TMP/fix/idle/unknown-fields")"

# --- a2. the health query and the kernel log's Xid lines ----------------------
# health_fields HELP: the health query gpuledger builds from this help: for each
# field of lua/gpuledger/sources/health.lua (its `names = {…}` lines), the first
# name the help lists.
health_fields() {
    local line name asked=()
    while read -r line; do
        for name in $(grep -o '"[^"]*"' <<<"$line" | tr -d '"'); do
            if grep -qF "\"$name\"" "$1"; then asked+=("$name"); break; fi
        done
    done < <(grep -o 'names = {[^}]*}' "$src/lua/gpuledger/sources/health.lua")
    (IFS=,; echo "${asked[*]}")
}
REMAPPED=gpu_bus_id,gpu_uuid,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure

step "a2. health query and kernel log"
HEALTH=$(health_fields "$TMP/help-query-gpu.txt")
echo "## the health query gpuledger builds from --help-query-gpu" >>"$OUT/raw-queries.txt"
cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" --query-gpu="$HEALTH" --format=csv,noheader,nounits
health_rc=$RC
if [ "$RC" = 0 ]; then
    cp "$TMP/help-query-gpu.txt" "$TMP/fix/idle/help-query-gpu.txt"
    { echo "${HEALTH//,/, }"; cat "$TMP/o"; } >"$TMP/fix/idle/query-gpu-table.csv"
    result PASS a2.health "$(tr ',' '\n' <<<"$HEALTH" | wc -l) fields; GPU 0: $(head -1 "$TMP/o" | head -c 400)"
    grep -q '\[' "$TMP/o" && note "bracketed health cells: $(grep -ho '\[[^]]*\]' "$TMP/o" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
else
    result FAIL a2.health "the health query failed (exit $RC): $(head -c 300 "$TMP/o" "$TMP/e" | tr '\n' ' ')"
fi
cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" --query-gpu="$HEALTH" --format=csv
if ! grep -q '"remapped_rows.pending"' "$TMP/help-query-gpu.txt"; then
    cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" --query-remapped-rows="$REMAPPED" --format=csv,noheader,nounits
    result INFO a2.remapped-rows "no remapped_rows.* in --query-gpu; --query-remapped-rows: exit $RC $(head -c 200 "$TMP/o" | tr '\n' ';')"
    [ "$RC" = 0 ] && cp "$TMP/o" "$TMP/fix/idle/remapped-rows.csv"
fi
# The kernel log as gpuledger reads it (journal, /dev/kmsg through dmesg, kern.log):
# which readers answer, and every NVRM line of this boot (Xid lines and their kin).
KLOG=$ART/smi/kernel-log.txt
echo "# which kernel log readers answer here, and this boot's NVRM lines" >"$KLOG"
timeout -k 2 20 journalctl -k -b -o json --no-pager --show-cursor >"$TMP/journal" 2>"$TMP/e" </dev/null
jrc=$?
{
    echo "### journalctl -k -b -o json --no-pager --show-cursor: exit $jrc, $(grep -c '^{' "$TMP/journal") records, stderr: $(head -c 300 "$TMP/e")"
    grep -F 'NVRM' "$TMP/journal" | head -c 200000
    echo
} >>"$KLOG"
# serve's next refresh asks after the cursor that answer ended with: what the real one says then.
cursor=$(sed -n 's/^-- cursor: //p' "$TMP/journal" | tail -1)
if [ -n "$cursor" ]; then
    timeout -k 2 20 journalctl -k -b -o json --no-pager --show-cursor "--after-cursor=$cursor" >"$TMP/journal-after" 2>"$TMP/e" </dev/null
    arc=$?
    echo "### the same --after-cursor=<its cursor>: exit $arc, $(grep -c '^{' "$TMP/journal-after") records, last line: $(tail -1 "$TMP/journal-after" | head -c 300), stderr: $(head -c 300 "$TMP/e")" >>"$KLOG"
fi
timeout -k 2 20 dmesg >"$TMP/dmesg" 2>"$TMP/e" </dev/null
drc=$?
{
    echo "### dmesg: exit $drc, $(wc -l <"$TMP/dmesg") lines, stderr: $(head -c 300 "$TMP/e")"
    grep -F 'NVRM' "$TMP/dmesg" | head -c 200000
    echo
    echo "### /var/log/kern.log: $(ls -l /var/log/kern.log 2>&1)"
    echo "### kernel.dmesg_restrict: $(cat /proc/sys/kernel/dmesg_restrict 2>&1)"
} >>"$KLOG"
grep -F 'NVRM' "$TMP/dmesg" >"$TMP/fix/idle/kernel-log.txt" 2>/dev/null
xids=$(grep -hc 'NVRM: Xid' "$TMP/dmesg" 2>/dev/null)
result INFO a2.kernel-log "journalctl exit $jrc ($(grep -c '^{' "$TMP/journal") records, $(grep -c NVRM "$TMP/journal") NVRM); dmesg exit $drc ($(grep -c NVRM "$TMP/dmesg") NVRM, ${xids:-0} Xid lines: $(grep -ho 'NVRM: Xid ([^)]*): [0-9]*' "$TMP/dmesg" | sort | uniq -c | tr -s ' ' | tr '\n' ';' | head -c 300))"
[ "$health_rc" = 0 ] || note "the health query failed: gpuledger's health findings are ERROR here"

# --- b. gpuledger, idle --------------------------------------------------------
# gl_round LABEL: snapshot, ls, ls --json, check --json, check --replay of the snapshot.
gl_round() {
    local label=$1 log=$OUT/gpuledger-$1.txt dir=$ART/$1 n
    echo "# gpuledger, $label: $(date -u +%H:%M:%SZ)" >"$log"
    cap "$log" 40 "${GL[@]}" snapshot "${GLF[@]}"
    cp "$TMP/o" "$dir/snapshot.json"
    ok_if "b.$label.snapshot" "exit $RC, $MS ms, $(wc -c <"$dir/snapshot.json") bytes" test "$RC" = 0
    cap "$log" 40 "${GL[@]}" ls "${GLF[@]}"
    cp "$TMP/o" "$dir/ls.txt"
    ok_if "b.$label.ls" "exit $RC, $MS ms$([ -s "$TMP/e" ] && echo ", stderr: $(head -c 200 "$TMP/e" | tr '\n' ' ')")" test "$RC" = 0
    cap "$log" 40 "${GL[@]}" ls --json "${GLF[@]}"
    cp "$TMP/o" "$dir/ls.json"
    n=$(grep -o '"busId":"' "$dir/ls.json" | wc -l) # a GPU's entry has a bus id; a MIG slice has none
    ok_if "b.$label.ls-json" "exit $RC, $n GPU(s) (nvidia-smi -L: $gpus_L), sources $(grep -o '"sources":{[^}]*}' "$dir/ls.json")" \
        test "$RC" = 0 -a "$n" = "$gpus_L"
    grep -q '"nvidia":"read"' "$dir/ls.json" || result FAIL "b.$label.nvidia-read" "sources.nvidia is not \"read\""
    grep -q '"errors"' "$dir/ls.json" && note "$label: ls --json has errors: $(grep -o '"errors":\[[^]]*\]' "$dir/ls.json")"
    cap "$log" 40 "${GL[@]}" check --json "${GLF[@]}"
    cp "$TMP/o" "$dir/check.json"
    ok_if "b.$label.check-json" "exit $RC, worst $(grep -o '"worst":"[A-Z]*"' "$dir/check.json" | cut -d'"' -f4), codes: $(grep -o '"code":"[^"]*"' "$dir/check.json" | cut -d'"' -f4 | sort | uniq -c | tr -s ' ' | tr '\n' ',')" test "$RC" = 0
    cap "$log" 40 "${GL[@]}" check --replay "$dir/snapshot.json"
    ok_if "b.$label.replay" "check --replay of the snapshot: exit $RC" test "$RC" = 0
}
# tenants_of GPU-UUID: the tenant objects of that GPU's ledger entry, one a line.
tenants_of() {
    sed 's/{"busId":/\n&/g' "$1" | grep -F "\"uuid\":\"$2\"" | grep -o '{[^{}]*"kind":"[a-z]*"[^{}]*}'
}

step "b. gpuledger, idle"
if have_gl; then
    gl_round idle
    if [ -n "$uuid0" ]; then
        t=$(tenants_of "$ART/idle/ls.json" "$uuid0" | tr '\n' ' ')
        result INFO b.idle.tenants "GPU 0 tenants with no process of ours: ${t:-none}"
    fi
    # gpuledger's queries, seen through a wrapper: the same argv as ours?
    printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec "%s" "$@"\n' "$TMP/argv.log" "$(command -v "${SMI[0]}")" >"$TMP/smi-wrap"
    chmod +x "$TMP/smi-wrap"
    timeout 40 "${GL[@]}" ls --no-docker --no-nomad --podman off --nvidia-smi "$TMP/smi-wrap" >/dev/null 2>&1
    mine=$(
        for kind in "${KINDS[@]}"; do qargs "$kind" | tr '\n' ' ' | sed 's/ $//'; echo; done
        echo "--help-query-gpu"
        echo "--query-gpu=$HEALTH --format=csv,noheader,nounits"
        echo "--query-remapped-rows=$REMAPPED --format=csv,noheader,nounits"
        echo "--query-gpu=uuid,mig.mode.current --format=csv,noheader,nounits"
        echo "-L"
        echo "-q"
    )
    theirs=$(sort -u "$TMP/argv.log" 2>/dev/null)
    cp "$TMP/argv.log" "$ART/idle/gpuledger-argv.log" 2>/dev/null
    extra=$(comm -13 <(sort -u <<<"$mine") <(echo "$theirs"))
    # A query gpuledger builds from the driver's field list (one --query-gpu
    # of every optional field it lists) is asked again here verbatim, so
    # that raw-queries.txt holds this driver's answer to it too. Before the
    # list is in, gpuledger asks the newest driver's optional query beside it
    # and keeps it when the list gives the same: then that is its only
    # optional query, and its CSV queries run in one round; an older driver
    # refuses it (exit 2, a field "is not a valid field to query"), and the
    # query it keeps is asked in a second round. OPTIONAL_QUERY: the one kept
    # (the last asked); SMI_ROUNDS: the rounds of CSV queries (one per
    # optional query asked), -L and -q's aside.
    failed=""
    OPTIONAL_QUERY=$(grep '^--query-gpu=' "$TMP/argv.log" | grep -vF -- "--query-gpu=$MAIN " | tail -1)
    SMI_ROUNDS=$(grep '^--query-gpu=' "$TMP/argv.log" | grep -cvF -- "--query-gpu=$MAIN ")
    result INFO b.rounds "gpuledger ls asked nvidia-smi $(grep -c . "$TMP/argv.log") times, its CSV queries in $SMI_ROUNDS round(s)"
    if [ -n "$extra" ]; then
        echo "## gpuledger's own queries beyond run.sh's, asked again verbatim" >>"$OUT/raw-queries.txt"
        while read -r query; do
            # shellcheck disable=SC2086 # the logged argv, split as it was given
            cap "$OUT/raw-queries.txt" 20 "${SMI[@]}" $query
            if [ "$RC" = 2 ] && [ "$query" != "$OPTIONAL_QUERY" ] && grep -q 'is not a valid field to query' "$TMP/o"; then
                note "the newest driver's optional query was refused ($(head -1 "$TMP/o")): gpuledger asked this driver's own in a second round"
            elif [ "$RC" != 0 ]; then
                failed="$failed [exit $RC: $query]"
            fi
        done <<<"$extra"
    fi
    ok_if b.same-queries "gpuledger issued $(wc -l <"$TMP/argv.log" 2>/dev/null || echo 0) queries; $(grep -c . <<<"$extra") beyond run.sh's, asked again verbatim into raw-queries.txt${failed:+; FAILED:$failed}" test -z "$failed" -a -n "$theirs"
else
    result SKIP b.idle "no gpuledger"
fi

# --- c. a process holding the GPU ---------------------------------------------
step "c. a CUDA process holds ${HOLD_MIB} MiB"
HOLD_LOG=$ART/busy/hold.log
hold_ready=0 hold_uuid="" busy_smi=("${SMI[@]}")
if [ "$REHEARSAL" = 1 ]; then
    # No GPU: a copy of sleep named hold, and a fixture whose compute-apps lists it.
    cp "$(command -v sleep)" "$TMP/hold"
    "$TMP/hold" 90 >"$HOLD_LOG" 2>&1 &
    HOLD_PID=$!
    mkdir -p "$TMP/fake-busy"
    cp "$FAKE_SMI_DIR"/*.csv "$TMP/fake-busy/" 2>/dev/null
    cp "$FAKE_SMI_DIR"/unknown-fields "$FAKE_SMI_DIR"/help-query-gpu.txt "$FAKE_SMI_DIR"/*.txt "$TMP/fake-busy/" 2>/dev/null
    printf '%s, %s, %s, %s\n' "$uuid0" "$HOLD_PID" "$HOLD_MIB" "$TMP/hold" >"$TMP/fake-busy/compute-apps.csv"
    export FAKE_SMI_DIR=$TMP/fake-busy
    result INFO c.hold "REHEARSAL: stand-in $TMP/hold (a copy of sleep), pid $HOLD_PID, listed by the fixture"
    hold_ready=1
elif ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    result SKIP c.hold "nvcc is not installed: no CUDA process, step c skipped"
else
    NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    cap "$ART/busy/nvcc.txt" 120 "$NVCC" -O2 -o "$TMP/hold" "$here/hold.cu"
    if [ "$RC" != 0 ]; then
        result SKIP c.hold "nvcc failed (exit $RC): $(head -c 300 "$TMP/e" | tr '\n' ' ')"
    else
        result PASS c.nvcc "hold.cu compiled in $MS ms ($("$NVCC" --version | tail -1))"
        "$TMP/hold" 90 "$HOLD_MIB" >"$HOLD_LOG" 2>&1 &
        HOLD_PID=$!
        for _ in $(seq 1 60); do # CUDA's first context can take a while
            grep -q '^holding' "$HOLD_LOG" && { hold_ready=1; break; }
            kill -0 "$HOLD_PID" 2>/dev/null || break
            sleep 0.5
        done
        hold_uuid=$(sed -n 's/^uuid //p' "$HOLD_LOG")
        if [ "$hold_ready" = 1 ]; then
            result PASS c.hold "pid $HOLD_PID holds ${HOLD_MIB} MiB on $(sed -n 's/^device0 //p' "$HOLD_LOG") $hold_uuid"
        else
            kill -0 "$HOLD_PID" 2>/dev/null || { wait "$HOLD_PID"; echo "hold: exit $?" >>"$HOLD_LOG"; HOLD_PID=""; }
            result FAIL c.hold "hold did not get to holding: $(tr '\n' ' ' <"$HOLD_LOG" | head -c 300)"
        fi
    fi
fi

if [ "$hold_ready" = 1 ]; then
    listed="" row=""
    for _ in $(seq 1 40); do # up to 20 s
        if timeout 20 "${busy_smi[@]}" --query-compute-apps="$APPS" --format=csv,noheader,nounits >"$TMP/apps" 2>/dev/null; then
            row=$(awk -F', *' -v p="$HOLD_PID" '$2 == p' "$TMP/apps" | head -1)
            [ -n "$row" ] && { listed=1; break; }
        fi
        sleep 0.5
    done
    cp "$TMP/apps" "$ART/busy/compute-apps-poll.csv" 2>/dev/null
    if [ -n "$listed" ]; then
        result PASS c.smi-lists-pid "compute-apps lists pid $HOLD_PID: $row"
    else
        result FAIL c.smi-lists-pid "compute-apps never listed pid $HOLD_PID in 20 s; it said: $(tr '\n' ';' <"$TMP/apps" | head -c 300)"
        grep -q hold "$TMP/apps" 2>/dev/null && note "compute-apps lists a hold process under another pid: a PID namespace (container) between us and the driver?"
    fi
    row_uuid=$(awk -F', *' '{ print $1 }' <<<"$row")
    row_mib=$(awk -F', *' '{ print $3 }' <<<"$row")
    want_uuid=${hold_uuid:-$row_uuid}
    if [ -n "$hold_uuid" ] && [ -n "$row_uuid" ] && [ "$hold_uuid" != "$row_uuid" ]; then
        result FAIL c.uuid-agrees "CUDA says $hold_uuid, nvidia-smi says $row_uuid"
    elif [ -n "$hold_uuid" ]; then
        result PASS c.uuid-agrees "CUDA and nvidia-smi agree: $hold_uuid"
    fi
    [ -n "$row_mib" ] && [ "$row_mib" != "$HOLD_MIB" ] && note "nvidia-smi counts $row_mib MiB for hold's ${HOLD_MIB} MiB allocation (the CUDA context adds some)"
    cat "/proc/$HOLD_PID/cgroup" >"$ART/busy/hold-cgroup.txt" 2>&1

    echo "## busy: while pid $HOLD_PID holds ${HOLD_MIB} MiB" >>"$OUT/raw-queries.txt"
    SMI_SAVE=("${SMI[@]}")
    capture_fixture "$TMP/fix/busy"
    SMI=("${SMI_SAVE[@]}")
    if have_gl; then
        gl_round busy
        if grep -q '"migDevices":\[{' "$ART/busy/ls.json"; then # MIG mode: the tenant is on its slice
            ok_if c.mig-slice "MIG mode: pid $HOLD_PID placed on a slice by -q's instance ids" \
                grep -qE '"migDevices":\[.*"pids":\[([0-9]+,)*'"$HOLD_PID"'[],]' "$ART/busy/ls.json"
        fi
        tenant=$(tenants_of "$ART/busy/ls.json" "$want_uuid" | grep '"kind":"host"' | head -1)
        echo "host tenant on $want_uuid: ${tenant:-none}" >>"$OUT/gpuledger-busy.txt"
        ok_if c.host-tenant "a host tenant on ${want_uuid:-?}: ${tenant:-none; tenants there: $(tenants_of "$ART/busy/ls.json" "$want_uuid" | tr '\n' ' ')}" test -n "$tenant"
        ok_if c.tenant-pid "its pids include $HOLD_PID" grep -qE "\"pids\":\[([0-9]+,)*${HOLD_PID}[],]" <<<"$tenant"
        ok_if c.tenant-process "its processes include \"hold\"" grep -q '"processes":\[[^]]*"hold"' <<<"$tenant"
        mib=$(grep -o '"usedMemoryMiB":[0-9]*' <<<"$tenant" | cut -d: -f2)
        ok_if c.tenant-memory "usedMemoryMiB ${mib:-?} (nvidia-smi: ${row_mib:-?})" test "${mib:-0}" -gt 0
        f=$(grep -o '{[^{}]*"code":"unmanaged-tenant"[^{}]*}' "$ART/busy/check.json" | grep -F "$HOLD_PID" | head -1)
        ok_if c.finding "check --json: unmanaged-tenant naming pid $HOLD_PID: $(grep -o '"message":"[^"]*"' <<<"$f")" test -n "$f"
        # With Docker on, gpuledger reads /proc/<pid>/cgroup: what does this machine's say?
        cap "$OUT/gpuledger-busy.txt" 40 "${GL[@]}" ls --json --no-nomad --podman off "${SMI_FLAG[@]}"
        cp "$TMP/o" "$ART/busy/ls-docker-on.json"
        result INFO c.with-docker-on "ls --json --no-nomad: exit $RC, sources $(grep -o '"sources":{[^}]*}' "$TMP/o"), tenant: $(tenants_of "$TMP/o" "$want_uuid" | grep -F "$HOLD_PID" | head -1)"
        if [ -z "$tenant" ]; then
            note "pid $HOLD_PID was not a host tenant; its cgroup: $(tr '\n' ' ' <"$ART/busy/hold-cgroup.txt")"
        fi
    fi
    kill -TERM "$HOLD_PID" 2>/dev/null
    wait "$HOLD_PID" 2>/dev/null
    echo "hold: ended with $? (143 = our SIGTERM)" >>"$HOLD_LOG"
    HOLD_PID=""
    [ "$REHEARSAL" = 0 ] || export FAKE_SMI_DIR=$FAKE_SMI_ORIG
else
    result SKIP c.busy "no process holds the GPU: busy checks skipped"
fi

# fixture.tar: busy at the top (when there is one), idle/ beneath, as testdata/nvidia/ does.
mkdir -p "$TMP/tar/$slug"
if [ -d "$TMP/fix/busy" ]; then cp -r "$TMP/fix/busy/." "$TMP/tar/$slug/"; fi
cp -r "$TMP/fix/idle" "$TMP/tar/$slug/idle"
{
    echo "captured by tests/real-gpu/run.sh on $(date -u +%Y-%m-%d)"
    echo "driver ${driver:-?}, CUDA ${cuda:-?}; GPUs: ${models:-?}"
    echo "top: while hold (tests/real-gpu/hold.cu) held ${HOLD_MIB} MiB$([ -d "$TMP/fix/busy" ] || echo ' -- NOT CAPTURED, the top is empty')"
    echo "idle/: before it started"
    [ "$REHEARSAL" = 0 ] || echo "REHEARSAL with the fake nvidia-smi: not a real capture"
} >"$TMP/tar/$slug/CAPTURE.txt"
tar -C "$TMP/tar" -cf "$OUT/fixture.tar" "$slug"
result INFO fixture.tar "$(tar -tf "$OUT/fixture.tar" | grep -vc '/$') files under $slug/"

# --- d. serve -----------------------------------------------------------------
step "d. serve"
SERVE_LOG=$OUT/serve.txt
echo "# gpuledger serve --interval 1s for a few seconds" >"$SERVE_LOG"
if past_deadline; then
    result SKIP d.serve "past the ${DEADLINE_S}s deadline"
elif have_gl; then
    port="" serve_rc=""
    for p in 19877 29877 39877 49877; do
        if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then continue; fi # taken
        "${GL[@]}" serve --listen "127.0.0.1:$p" --interval 1s "${GLF[@]}" >"$ART/serve/stdout.txt" 2>"$ART/serve/stderr.txt" &
        SERVE_PID=$!
        for _ in $(seq 1 40); do # the first refresh completes before it listens
            kill -0 "$SERVE_PID" 2>/dev/null || break
            [ "$(http_get /healthz "$p" "$TMP/h")" != 000 ] && { port=$p; break; }
            sleep 0.25
        done
        [ -n "$port" ] && break
        kill -TERM "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
        echo "port $p: serve did not answer (exit $?): $(head -c 300 "$ART/serve/stderr.txt")" >>"$SERVE_LOG"
        SERVE_PID=""
    done
    if [ -n "$port" ]; then
        result PASS d.serve-listens "127.0.0.1:$port after $(elapsed_s)s of the run (HTTP client: ${CURL:-bash /dev/tcp})"
        sleep 3 # a few refreshes at 1s
        for path in /metrics /ledger /findings /healthz /; do
            name=$(tr -c 'a-z\n' '_' <<<"${path#/}" | tr -d '\n')
            name=${name:-page}
            code=$(http_get "$path" "$port" "$ART/serve/$name.body")
            {
                echo "### GET $path -> $code ($(wc -c <"$ART/serve/$name.body") bytes)"
                case $path in
                    /metrics) grep -v '^# ' "$ART/serve/$name.body" | head -80 ;;
                    /) head -c 600 "$ART/serve/$name.body"; echo ;;
                    *) head -c 3000 "$ART/serve/$name.body"; echo ;;
                esac
                echo
            } >>"$SERVE_LOG"
            ok_if "d.GET$path" "$code, $(wc -c <"$ART/serve/$name.body") bytes" test "$code" = 200
        done
        code=$(http_get_tcp /healthz "$port" "$TMP/h2")
        ok_if d.dev-tcp-client "the /dev/tcp fallback fetched /healthz: $code $(head -c 40 "$TMP/h2")" test "$code" = 200
        m=$ART/serve/metrics.body
        ok_if d.metrics-up "$(grep -m1 '^gpuledger_up' "$m")" grep -qE '^gpuledger_up(\{[^}]*\})? 1$' "$m"
        ok_if d.metrics-gpus "$(grep -c '^gpuledger_gpu_info' "$m") gpuledger_gpu_info series (nvidia-smi -L: $gpus_L)" test "$(grep -c '^gpuledger_gpu_info' "$m")" = "$gpus_L"
        for series in gpuledger_gpu_thermal_margin_celsius gpuledger_gpu_thermal_slowdown; do
            result INFO "d.$series" "$(grep -m1 "^$series" "$m" || echo 'absent (the driver did not report it)')"
        done
        if command -v promtool >/dev/null; then
            cap "$SERVE_LOG" 20 promtool check metrics "$m"
            timeout 20 promtool check metrics <"$m" >"$TMP/pt" 2>&1
            ok_if d.promtool "promtool check metrics: exit $? $(head -c 300 "$TMP/pt" | tr '\n' ' ')" test -z "$(grep -v '^$' "$TMP/pt")"
        else
            result SKIP d.promtool "promtool is not installed on this machine"
        fi
        kill -TERM "$SERVE_PID"
        t0=$(date +%s%N)
        for _ in $(seq 1 40); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.25; done
        if kill -0 "$SERVE_PID" 2>/dev/null; then
            kill -KILL "$SERVE_PID"
            wait "$SERVE_PID" 2>/dev/null
            result FAIL d.sigterm "serve did not stop within 10 s of SIGTERM (killed)"
        else
            wait "$SERVE_PID"
            serve_rc=$?
            ok_if d.sigterm "serve exited $serve_rc $(ms_since "$t0") ms after SIGTERM" test "$serve_rc" = 0
        fi
        SERVE_PID=""
        {
            echo "### serve's stderr"
            head -c 5000 "$ART/serve/stderr.txt"
        } >>"$SERVE_LOG"
    else
        result FAIL d.serve-listens "serve never answered on any port tried (serve.txt)"
    fi
else
    result SKIP d.serve "no gpuledger"
fi

# --- e. timing ----------------------------------------------------------------
step "e. timing"
TIMING=$OUT/timing.txt
REPS=${TIMING_REPS:-${REPS_DEFAULT:-5}}
{
    echo "# wall time of each call, ms (date +%s%N around the command), $REPS runs each"
    echo "# gpuledger ls asks nvidia-smi the main query, compute-apps, --help-query-gpu, --version"
    echo "# and the newest driver's --query-gpu of the optional fields at once; where the driver's"
    echo "# field list gives another optional query, that one in a second round (\"optional\" below"
    echo "# is the one kept; this driver: ${SMI_ROUNDS:-?} round(s)); its own work = mean(ls) - (one"
    echo "# round: the slowest of query-gpu, compute-apps and optional; two: the slower of query-gpu"
    echo "# and compute-apps + optional)"
    echo
} >"$TIMING"
declare -A MEAN=()
time_runs() { # time_runs LABEL CMD...: appends one line; MEAN[LABEL]
    local label=$1 i t0 list="" rc=0
    shift
    for i in $(seq 1 "$REPS"); do
        past_deadline && { list="$list (deadline: stopped after $((i - 1)))"; break; }
        t0=$(date +%s%N)
        timeout -k 5 30 "$@" >/dev/null 2>&1 </dev/null || rc=$?
        list="$list $(ms_since "$t0")"
    done
    MEAN[$label]=$(awk '{ s = 0; n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { s += $i; n++ } if (n) printf "%.1f", s / n; else print "" }' <<<"$list")
    printf '%-26s mean %8s  min %8s  runs:%s%s\n' "$label" "${MEAN[$label]:-?}" \
        "$(tr ' ' '\n' <<<"$list" | grep -E '^[0-9.]+$' | sort -g | head -1)" "$list" "$([ "$rc" = 0 ] || echo "  (some exit $rc)")" >>"$TIMING"
}
timeout 20 "${SMI[@]}" -L >/dev/null 2>&1 # warm up
for kind in "${KINDS[@]}"; do
    mapfile -t args < <(qargs "$kind")
    time_runs "$kind" "${SMI[@]}" "${args[@]}"
done
if have_gl; then
    time_runs "gpuledger ls --json" "${GL[@]}" ls --json "${GLF[@]}"
    time_runs "gpuledger version" "${GL[@]}" version
    [ -s "$ART/idle/snapshot.json" ] && time_runs "gpuledger ls --replay" "${GL[@]}" ls --json --replay "$ART/idle/snapshot.json"
    # shellcheck disable=SC2086 # the logged argv, split as it was given
    [ -n "${OPTIONAL_QUERY:-}" ] && time_runs "optional" "${SMI[@]}" $OPTIONAL_QUERY
    sum=$(awk -v a="${MEAN[query-gpu]:-0}" -v b="${MEAN[compute-apps]:-0}" -v c="${MEAN[optional]:-0}" -v r="${SMI_ROUNDS:-1}" \
        'BEGIN { m = (a > b ? a : b); printf "%.1f", (r > 1 ? m + (r - 1) * c : (m > c ? m : c)) }')
    own=$(awk -v a="${MEAN["gpuledger ls --json"]:-0}" -v b="$sum" 'BEGIN { printf "%.1f", a - b }')
    {
        echo
        echo "nvidia-smi's part of ls (its ${SMI_ROUNDS:-?} round(s), as above): $sum ms"
        echo "gpuledger ls --json mean: ${MEAN["gpuledger ls --json"]:-?} ms"
        echo "gpuledger's own work (ls - nvidia-smi's part): $own ms (each query's time above includes"
        echo "  a timeout+fork+exec of its own, so this underestimates by a few ms)"
        echo "gpuledger's own work measured directly (ls --json --replay of the idle snapshot, no spawn):"
        echo "  ${MEAN["gpuledger ls --replay"]:-?} ms (process start, Lua, JSON, render)"
    } >>"$TIMING"
    result INFO e.timing "ls --json ${MEAN["gpuledger ls --json"]:-?} ms = nvidia-smi $sum ms + gpuledger $own ms; ls --replay alone ${MEAN["gpuledger ls --replay"]:-?} ms"
fi

# --- f. summary ---------------------------------------------------------------
step "f. summary"
fact "elapsed" "$(elapsed_s) s"
{
    echo "# tests/real-gpu/run.sh: $(grep -c '^PASS' "$RESULTS") PASS, $(grep -c '^FAIL' "$RESULTS") FAIL, $(grep -c '^SKIP' "$RESULTS") SKIP"
    echo
    cat "$FACTS"
    echo
    echo "## checks"
    cat "$RESULTS"
    echo
    echo "## surprises and notes"
    if [ -s "$NOTES" ]; then cat "$NOTES"; else echo "- none"; fi
    echo
    echo "## files in \$OUT"
    echo "$( (cd "$OUT" && ls) | tr '\n' ' ')artifacts.tar (written last)"
} >"$SUMMARY"
echo
cat "$SUMMARY"
echo
cat "$TIMING"
