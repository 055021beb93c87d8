#!/usr/bin/env bash
# Bad input through the whole binary: an nvidia-smi that is missing, not
# executable, failing, hanging, or answering garbage, too much, short rows,
# invalid UTF-8, an old driver's fields, or failing only its process query
# (testdata/nvidia/bad/); and site rule directories with broken
# rules (testdata/rules/, docs/rules.md); a replayed snapshot of an older
# gpuledger that lacks a source's address or ok. Each gives one clear error line,
# the right exit status, and never a crash. (Unreadable and vanished pids in
# a proc tree: proc.sh.)
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
out="" err="" # what run leaves (with $rc)

BAD=$TESTDATA/nvidia/bad
RULES=$TESTDATA/rules
mkdir "$WORK/no-rules" # no site rules, whatever this machine has
SMI=$FAKES/nvidia-smi
COMMON=(--no-docker --no-nomad --node bad-node)

# smi DIR BINARY ARGS...: runs gpuledger ARGS with --nvidia-smi BINARY
# answering from DIR. Leaves $out, $err, $rc.
smi() {
    local dir=$1 binary=$2
    shift 2
    FAKE_SMI_DIR=$dir run "$@" --nvidia-smi "$binary" "${COMMON[@]}" --rules "$WORK/no-rules"
}

# source_error NAME DIR BINARY NEEDLE...: the nvidia source fails with one
# error naming every NEEDLE: check --json has exactly one
# source-unavailable ERROR (a single line) holding them, ls --json carries it
# in errors, ls exits 0 with it as one "gpuledger: " line on stderr, check
# exits 0, and 3 under --exit-on error.
source_error() {
    local name=$1 dir=$2 binary=$3 needle lua_needles=""
    shift 3
    for needle in "$@"; do
        lua_needles+="and m:find($(lua_string "$needle"), 1, true) "
    done
    smi "$dir" "$binary" check --json
    expect_rc "$name: check --json exits 0" 0
    expect_no_crash "$name: check --json"
    expect_lua "$name: one source-unavailable ERROR naming it" "$out" \
        "local n = 0; for _, f in ipairs(j.findings) do local m = f.message; if f.code == 'source-unavailable' and f.level == 'ERROR' and f.gpu == nil $lua_needles and not m:find('\n') then n = n + 1 end end; return n == 1"
    expect_lua "$name: worst ERROR" "$out" 'j.worst == "ERROR"'
    smi "$dir" "$binary" ls --json
    expect_rc "$name: ls --json exits 0" 0
    expect_lua "$name: ls --json errors carry it" "$out" \
        "local n = 0; for _, m in ipairs(j.errors or {}) do if true $lua_needles then n = n + 1 end end; return n == 1"
    smi "$dir" "$binary" ls
    expect_rc "$name: ls exits 0" 0
    expect_no_crash "$name: ls"
    local line found=0 others=0
    while IFS= read -r line; do
        if [ "${line:0:11}" = "gpuledger: " ]; then
            local all=1
            for needle in "$@"; do
                case $line in *"$needle"*) ;; *) all=0 ;; esac
            done
            [ $all = 1 ] && found=$((found + 1))
        else
            others=$((others + 1))
        fi
    done <<<"$err"
    expect_eq "$name: ls prints the error as one gpuledger: line" "$found" 1
    expect_eq "$name: ls prints nothing else on stderr" "$others" 0
    smi "$dir" "$binary" check
    expect_rc "$name: check exits 0 without --exit-on" 0
    smi "$dir" "$binary" check --exit-on error
    expect_rc "$name: check --exit-on error exits 3" 3
}

# leftovers TEXT: the /proc/<pid> of every process whose command line holds
# TEXT (a private copy of the fake), space-separated.
leftovers() {
    local cmdline line found=""
    for cmdline in /proc/[0-9]*/cmdline; do
        line=$({ tr '\0' ' ' <"$cmdline"; } 2>/dev/null) || continue
        case $line in *"$1"*) found+="${cmdline%/cmdline} " ;; esac
    done
    printf '%s' "$found"
}

# lua_string TEXT: TEXT as a Lua long-bracket string literal.
lua_string() { printf '[==[%s]==]' "$1"; }

# --- nvidia-smi missing or not runnable ---------------------------------------
source_error "missing" "$BAD/exit-nonzero" /nonexistent/nvidia-smi "nvidia-smi query-gpu" "/nonexistent/nvidia-smi"
expect_lua "missing: no GPUs" "$(FAKE_SMI_DIR=$BAD/exit-nonzero "$GPULEDGER" ls --json --nvidia-smi /nonexistent/nvidia-smi "${COMMON[@]}")" '#j.entries == 0'
smi "$BAD/exit-nonzero" /nonexistent/nvidia-smi check --json
expect_lua "missing: the message starts with the query and says not found" "$out" \
    'local m = j.findings[1].message; return m:sub(1, 20) == "nvidia-smi query-gpu" and (m:lower():find("not found", 1, true) or m:lower():find("no such file", 1, true)) ~= nil'

mkdir "$WORK/noexec"
cp "$SMI" "$WORK/noexec/nvidia-smi"
chmod a-x "$WORK/noexec/nvidia-smi"
source_error "not executable" "$BAD/exit-nonzero" "$WORK/noexec/nvidia-smi" "nvidia-smi query-gpu" "$WORK/noexec/nvidia-smi"
smi "$BAD/exit-nonzero" "$WORK/noexec/nvidia-smi" check --json
expect_lua "not executable: says permission" "$out" 'j.findings[1].message:lower():find("permission", 1, true) ~= nil'

# --- nvidia-smi exits non-zero: the driver's own words ---------------------------
log=$WORK/smi.log
source_error "exit non-zero" "$BAD/exit-nonzero" "$SMI" "nvidia-smi query-gpu" \
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
: >"$log"
FAKE_SMI_LOG=$log smi "$BAD/exit-nonzero" "$SMI" ls --json
expect_lua "exit non-zero: no GPUs" "$out" '#j.entries == 0'
expect_eq "exit non-zero: nothing asked after the first round (main, process list, optional query, field list, --version)" \
    "$(wc -l <"$log")" 5

# --- nvidia-smi hangs: killed after 10 s ----------------------------------------
# A private copy of the fake, so that a leftover process is recognisable.
mkdir "$WORK/hang-bin"
cp "$SMI" "$WORK/hang-bin/nvidia-smi"
hang_smi=$WORK/hang-bin/nvidia-smi
# ls and check --exit-on error run beside the timed check --json.
(
    FAKE_SMI_DIR=$BAD/hang "$GPULEDGER" ls --nvidia-smi "$hang_smi" "${COMMON[@]}" >"$WORK/hang-ls.out" 2>"$WORK/hang-ls.err"
    echo $? >"$WORK/hang-ls.rc"
) &
ls_job=$!
(
    FAKE_SMI_DIR=$BAD/hang "$GPULEDGER" check --exit-on error --nvidia-smi "$hang_smi" "${COMMON[@]}" >/dev/null 2>&1
    echo $? >"$WORK/hang-check.rc"
) &
check_job=$!
started=$(date +%s%N)
smi "$BAD/hang" "$hang_smi" check --json
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
expect_rc "hang: check --json exits 0" 0
expect_no_crash "hang: check --json"
if [ "$elapsed_ms" -ge 9000 ] && [ "$elapsed_ms" -lt 15000 ]; then
    pass "hang: answered after the 10 s timeout ($elapsed_ms ms)"
else
    fail "hang: answered after the 10 s timeout" "took $elapsed_ms ms, want 9000..15000"
fi
expect_lua "hang: source-unavailable names nvidia-smi and timed out" "$out" \
    'local n = 0; for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("nvidia-smi", 1, true) and f.message:find("timed out", 1, true) then n = n + 1 end end; return n == 1 and #j.findings == 1'
wait "$ls_job" "$check_job"
expect_eq "hang: ls exits 0" "$(cat "$WORK/hang-ls.rc")" 0
expect_in "hang: ls says timed out on stderr" "$(cat "$WORK/hang-ls.err")" "timed out"
expect_eq "hang: check --exit-on error exits 3" "$(cat "$WORK/hang-check.rc")" 3
expect_eq "hang: no nvidia-smi left running" "$(leftovers "$hang_smi")" ""

# --- the main query answers, the optional ones hang: one 10 s deadline ---------
# for all of them together (each had its own 10 s: check took 40 s).
slow_optional=$WORK/slow-optional
cp -r "$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01" "$slow_optional"
for kind in tlimit clocks_event_reasons clocks_throttle_reasons compute-apps; do
    echo 60 >"$slow_optional/$kind.sleep"
done
started=$(date +%s%N)
smi "$slow_optional" "$hang_smi" check --json
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
expect_rc "optional queries hang: check --json exits 0" 0
if [ "$elapsed_ms" -lt 15000 ]; then
    pass "optional queries hang: answered within one 10 s deadline ($elapsed_ms ms)"
else
    fail "optional queries hang: answered within one 10 s deadline" "took $elapsed_ms ms, want < 15000"
fi
expect_lua "optional queries hang: the GPUs are there" "$out" '#j.findings >= 1'
expect_lua "optional queries hang: compute-apps named as not started" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("query-compute-apps", 1, true) and f.message:find("deadline", 1, true) then return true end end return false'
for kind in tlimit clocks_; do
    expect_lua "optional queries hang: $kind named as not answered in time" "$out" \
        "for _, f in ipairs(j.findings) do if f.code == 'source-unavailable' and f.message:find('nvidia-smi $kind', 1, true) then return true end end return false"
done
expect_eq "optional queries hang: no nvidia-smi left running" "$(leftovers "$hang_smi")" ""

# --- garbage, too much, short rows ---------------------------------------------
source_error "garbage" "$BAD/garbage" "$SMI" "nvidia-smi query-gpu: $SMI: csv: "
smi "$BAD/garbage" "$SMI" ls --json
expect_lua "garbage: no GPUs" "$out" '#j.entries == 0'

# A NUL inside a field ("42\0 42"): an error naming the line, never a field cut to "42".
nul_dir=$WORK/nul-field
cp -r "$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01" "$nul_dir"
python3 -c 'import sys; t = open(sys.argv[1], "rb").read(); open(sys.argv[1], "wb").write(t.replace(b",", b"\x00 42,", 1))' \
    "$nul_dir/query-gpu.csv"
source_error "NUL in a field" "$nul_dir" "$SMI" "nvidia-smi query-gpu: $SMI: csv: line 1: NUL byte in a field"

# Impossible values (10^23 MiB, 2^63, negative memory, -273 °C, a 1e308 W
# draw): each an error naming nvidia-smi, the GPU, the field and the value,
# and never a number in the ledger, the table or /metrics.
range_dir=$WORK/out-of-range
for case in "memory.used|1e23|5" "memory.total|9223372036854775808|6" "memory.used|-2048|5" \
    "temperature.gpu|-273|9" "power.draw|1e308|10"; do
    IFS='|' read -r field value column <<<"$case"
    rm -rf "$range_dir"
    cp -r "$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01" "$range_dir"
    python3 - "$range_dir/query-gpu.csv" "$column" "$value" <<'PY'
import sys
path, column, value = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cells = open(path).read().rstrip("\n").split(", ")
cells[column - 1] = value
open(path, "w").write(", ".join(cells) + "\n")
PY
    source_error "$field $value" "$range_dir" "$SMI" "nvidia-smi query-gpu: $SMI: GPU 0 (GPU-00000000-0000-0000-0000-000000000000): $field is $value, want "
    smi "$range_dir" "$SMI" ls --json
    expect_lua "$field $value: the ledger holds no impossible number" "$out" \
        'local g = j.entries[1]; for _, v in ipairs { g.memoryUsedMiB, g.memoryTotalMiB, g.temperatureC, g.powerW } do if v < -40 or v > 81559 then return false end end; return true'
    smi "$range_dir" "$SMI" ls --wide
    expect_not_in "$field $value: not in the table" "$out" "$value"
done

source_error "10 MiB answer" "$BAD/huge" "$SMI" "nvidia-smi query-gpu" "exceeds"
mkdir "$WORK/huge-bin"
cp "$SMI" "$WORK/huge-bin/nvidia-smi"
smi "$BAD/huge" "$WORK/huge-bin/nvidia-smi" ls --json
expect_lua "10 MiB answer: no GPUs" "$out" '#j.entries == 0'
expect_eq "10 MiB answer: no nvidia-smi left running" "$(leftovers "$WORK/huge-bin/nvidia-smi")" ""

source_error "short row" "$BAD/short-row" "$SMI" "nvidia-smi query-gpu: $SMI: row 1 has 3 fields, want 12"
smi "$BAD/short-row" "$SMI" ls --json
expect_lua "short row: NO GPUs (not a zero-GPU success)" "$out" '#j.entries == 0 and #j.errors == 1'

# A row with a field more than asked is never read shifted.
long_dir=$WORK/long-row
cp -r "$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01" "$long_dir"
sed -i 's/$/, 7/' "$long_dir/query-gpu.csv"
source_error "long row" "$long_dir" "$SMI" "nvidia-smi query-gpu: $SMI: row 1 has 13 fields, want 12"
smi "$long_dir" "$SMI" ls --json
expect_lua "long row: NO GPUs" "$out" '#j.entries == 0 and #j.errors == 1'

# A field list that is garbage (a wrapper gone wrong in front of the
# driver, which answers everything else) costs the health and MIG reads,
# once, not the tenancy.
mkdir "$WORK/garbage-help"
garbage_help=$WORK/garbage-help/nvidia-smi
printf '#!/bin/sh\n[ "$*" = --help-query-gpu ] && { echo "<html><body>502 Bad Gateway</body></html>"; exit 0; }\nexec %q "$@"\n' \
    "$SMI" >"$garbage_help"
chmod +x "$garbage_help"
help_dir=$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01
source_error "garbage field list" "$help_dir" "$garbage_help" \
    "nvidia-smi help-query-gpu: $garbage_help: answered 42 bytes that list no field to query"
smi "$help_dir" "$garbage_help" ls --json
expect_lua "garbage field list: the GPU and its processes are still read" "$out" \
    '#j.entries == 1 and j.processesRead and #j.entries[1].tenants[1].pids == 3 and j.sources.nvidia == "read" and j.sources.health == "failed"'

# A pid that is no number is no process: that row is an error, the others stay.
pid_dir=$WORK/garbage-pid
cp -r "$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01" "$pid_dir"
sed -i '2s/, 11328, /, 11x28, /' "$pid_dir/compute-apps.csv"
source_error "pid not a number" "$pid_dir" "$SMI" "nvidia-smi compute-apps: $SMI: a process of GPU-00000000-0000-0000-0000-000000000000: pid is 11x28, want 1–4194304"
smi "$pid_dir" "$SMI" ls --json
expect_lua "pid not a number: the other processes stay, none is pid 0" "$out" \
    'local pids = j.entries[1].tenants[1].pids; for _, p in ipairs(pids) do if p == 0 or p == 11328 then return false end end; return #pids == 2'

# --- invalid UTF-8 -----------------------------------------------------------
for args in "ls" "ls --json" "check" "check --json" "snapshot"; do
    # shellcheck disable=SC2086 # split on purpose
    FAKE_SMI_DIR=$BAD/non-utf8 "$GPULEDGER" $args --nvidia-smi "$SMI" "${COMMON[@]}" --rules "$WORK/no-rules" \
        >"$WORK/u8.out" 2>"$WORK/u8.err"
    # shellcheck disable=SC2034 # read by expect_rc
    rc=$?
    expect_rc "non-UTF-8: $args exits 0" 0
    if iconv -f UTF-8 -t UTF-8 "$WORK/u8.out" >/dev/null 2>&1; then
        pass "non-UTF-8: $args stdout is valid UTF-8"
    else
        fail "non-UTF-8: $args stdout is valid UTF-8" "iconv refused it"
    fi
    if iconv -f UTF-8 -t UTF-8 "$WORK/u8.err" >/dev/null 2>&1; then
        pass "non-UTF-8: $args stderr is valid UTF-8"
    else
        fail "non-UTF-8: $args stderr is valid UTF-8" "iconv refused it"
    fi
    expect_not_in "non-UTF-8: $args shows no process argument" "$(cat "$WORK/u8.out")" "x.mkv"
done
smi "$BAD/non-utf8" "$SMI" ls --json
expect_lua "non-UTF-8: the GPU is read" "$out" '#j.entries == 1 and j.entries[1].model:find("NVIDIA L4", 1, true) == 1 and j.entries[1].memoryUsedMiB == 1024'
expect_lua "non-UTF-8: the process is cut to its binary" "$out" \
    'local p = j.entries[1].tenants[1].processes[1]; return p:sub(1, 3) == "enc" and not p:find("[ /]")'
smi "$BAD/non-utf8" "$SMI" check --exit-on error
expect_rc "non-UTF-8: no source error (check --exit-on error exits 0)" 0
smi "$BAD/non-utf8" "$SMI" snapshot
expect_lua "non-UTF-8: the snapshot reads back as JSON with the GPU" "$out" '#j.sources.nvidia.query_gpu.rows == 1'

# --- an old driver: legacy throttle reasons, no tlimit ---------------------------
: >"$log"
FAKE_SMI_LOG=$log smi "$BAD/old-driver" "$SMI" ls --json
expect_rc "old driver: ls --json exits 0" 0
expect_lua "old driver: no error" "$out" 'j.errors == nil or #j.errors == 0'
expect_lua "old driver: two GPUs, margins unknown" "$out" '#j.entries == 2 and j.entries[1].thermalMarginC == nil and j.entries[2].thermalMarginC == nil'
expect_lua "old driver: slowdown from throttle reasons (gpu0 false, gpu1 true)" "$out" 'j.entries[1].thermalSlowdown == false and j.entries[2].thermalSlowdown == true'
expect_eq "old driver: seven queries: main, process list, the newest driver's optional query (refused), field list and --version, then its own optional query and --query-remapped-rows" \
    "$(wc -l <"$log")" 7
expect_lua "old driver: its version from the health query, no CUDA version (its nvidia-smi has no --version), no error" "$out" \
    'j.driverVersion == "470.256.02" and j.cudaVersion == nil'
expect_in "old driver: clocks_throttle_reasons asked" "$(cat "$log")" "clocks_throttle_reasons.hw_thermal_slowdown"
expect_in "old driver: the optional query takes the names its help lists" "$(cat "$log")" \
    "--query-gpu=index,uuid,pci.bus_id,driver_version,persistence_mode,ecc.mode.current,ecc.mode.pending,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total,retired_pages.single_bit_ecc.count,retired_pages.double_bit.count,retired_pages.pending,clocks_throttle_reasons.hw_slowdown,clocks_throttle_reasons.hw_power_brake_slowdown,clocks_throttle_reasons.sw_power_cap,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,enforced.power.limit,power.default_limit,mig.mode.current,mig.mode.pending,clocks_throttle_reasons.hw_thermal_slowdown,clocks_throttle_reasons.sw_thermal_slowdown"
expect_in "old driver: remapped rows from --query-remapped-rows" "$(cat "$log")" "--query-remapped-rows=gpu_bus_id,gpu_uuid,"
expect_lua "old driver: gpu1's health read (pages pending retirement, x8 link)" "$out" \
    'local h = j.entries[2].health; return h.retiredPagesPending == true and h.retiredPagesSbe == 2 and h.pcieWidthCurrent == 8 and j.entries[1].health.remappedRowsPending == nil'
smi "$BAD/old-driver" "$SMI" check --json
expect_lua "old driver: no source-unavailable" "$out" 'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end; return true'
expect_lua "old driver: gpu1 hot by its slowdown flag" "$out" \
    'local n = 0; for _, f in ipairs(j.findings) do if f.code == "hot" and f.gpu == "gpu1 GPU-8c4f1e2d" and f.message:find("thermal slowdown active at 83", 1, true) then n = n + 1 end end; return n == 1'
expect_lua "old driver: gpu0 not hot" "$out" 'for _, f in ipairs(j.findings) do if f.code == "hot" and f.gpu:sub(1, 4) == "gpu0" then return false end end; return true'
smi "$BAD/old-driver" "$SMI" check --exit-on error
expect_rc "old driver: no source error (check --exit-on error exits 0)" 0

# --- compute-apps fails: GPUs kept, partial ledger --------------------------------
source_error "apps fail" "$BAD/apps-fail" "$SMI" "nvidia-smi query-compute-apps"
smi "$BAD/apps-fail" "$SMI" ls --json
expect_lua "apps fail: both GPUs kept" "$out" '#j.entries == 2 and j.entries[1].model == "NVIDIA L4" and j.entries[2].memoryUsedMiB == 0'

# --- broken site rules --------------------------------------------------------
# The demo node gives every default finding; a broken site rule adds exactly
# one rule-error ERROR naming its file and line, and every other finding stays.
run check --demo --json --rules "$WORK/no-rules"
baseline=$(jq_lua '(function() local s = {}; for _, f in ipairs(j.findings) do s[#s + 1] = f.level .. " " .. f.code .. " " .. (f.gpu or "-") end; return table.concat(s, "\n") end)()' "$out")
baseline_count=$(jq_lua '#j.findings' "$out")

# rule_case CASE WHERE: the site rules in testdata/rules/CASE give one
# rule-error whose message holds WHERE (the file, and ":line" where given).
rule_case() {
    local case_name=$1 where=$2 started elapsed_ms
    started=$(date +%s%N)
    run check --demo --json --rules "$RULES/$case_name"
    elapsed_ms=$((($(date +%s%N) - started) / 1000000))
    expect_rc "rules $case_name: check exits 0" 0
    expect_no_crash "rules $case_name"
    if [ "$elapsed_ms" -lt 10000 ]; then
        pass "rules $case_name: finished in $elapsed_ms ms (< 10 s)"
    else
        fail "rules $case_name: finished in < 10 s" "took $elapsed_ms ms"
    fi
    expect_lua "rules $case_name: exactly one rule-error ERROR" "$out" \
        'local n = 0; for _, f in ipairs(j.findings) do if f.code == "rule-error" then n = n + 1; if f.level ~= "ERROR" then return false end end end; return n == 1'
    expect_lua "rules $case_name: the rule-error names $where" "$out" \
        "for _, f in ipairs(j.findings) do if f.code == 'rule-error' then return f.message:find($(lua_string "$where"), 1, true) ~= nil end end; return false"
    expect_lua "rules $case_name: one line" "$out" \
        "for _, f in ipairs(j.findings) do if f.code == 'rule-error' then return not f.message:find('\n') end end; return false"
    expect_lua "rules $case_name: worst ERROR" "$out" 'j.worst == "ERROR"'
    expect_eq "rules $case_name: every other finding still there" \
        "$(jq_lua '(function() local s = {}; for _, f in ipairs(j.findings) do if f.code ~= "rule-error" then s[#s + 1] = f.level .. " " .. f.code .. " " .. (f.gpu or "-") end end; return table.concat(s, "\n") end)()' "$out")" \
        "$baseline"
    expect_eq "rules $case_name: count is the baseline plus one" "$(jq_lua '#j.findings' "$out")" "$((${baseline_count%.*} + 1))"
    run check --demo --rules "$RULES/$case_name"
    expect_in "rules $case_name: text check shows rule-error" "$out" "rule-error"
    expect_in "rules $case_name: text check names the file" "$out" "${where%%:*}"
}

rule_case syntax-error "$RULES/syntax-error/broken.lua:8:"
rule_case infinite-loop "$RULES/infinite-loop/spin.lua:9:"
rule_case raises "$RULES/raises/raise.lua:8:"
# Returning a number has no line to name beyond the file itself.
rule_case wrong-shape "$RULES/wrong-shape/number.lua"
rule_case memory-hog "$RULES/memory-hog/hog.lua:9:"

# A snapshot of an older gpuledger, replayed: Nomad's answer without the
# agent's address, and the node's devices without ok. Each error names who
# answered where the snapshot keeps it, and says the snapshot names none
# where it does not: never an empty field ("nomad : ").
run snapshot --demo
printf '%s' "$out" >"$WORK/demo-snapshot.json"
python3 - "$WORK/demo-snapshot.json" "$WORK/old-snapshot.json" <<'PY'
import json, sys
snap = json.load(open(sys.argv[1]))
del snap["sources"]["nomad"]["address"]
snap["sources"]["nomad"]["allocations"][1] = 7
del snap["sources"]["nomad_devices"]["ok"]
json.dump(snap, open(sys.argv[2], "w"))
PY
run ls --json --replay "$WORK/old-snapshot.json"
expect_rc "old snapshot: ls --json exits 0" 0
expect_lua "old snapshot: each error names the agent, or says the snapshot names no address" "$out" \
    'table.sort(j.errors) return #j.errors == 2 and j.errors[1] == "nomad (the snapshot names no address): unexpected answer: allocations[2] is a number, want an object" and j.errors[2] == "nomad http://127.0.0.1:4646: unexpected answer: nomad_devices.ok is missing, want a boolean"'

# `gpuledger rules` reports a rule that cannot load, and exits 1.
run rules --rules "$RULES/syntax-error"
expect_rc "rules command: a broken file exits 1" 1
expect_in "rules command: names the file" "$err" "$RULES/syntax-error/broken.lua"
run rules --rules "$RULES/raises"
expect_rc "rules command: a rule that loads is listed (exit 0)" 0
expect_in "rules command: with its origin" "$out" "$RULES/raises/raise.lua"

finish
