#!/usr/bin/env bash
# gpuledger against the fake nvidia-smi (docs/sources.md#nvidia-smi), host
# only (--no-docker --no-nomad): the two real-card captures give the right
# ledger and findings, empty arrays are [], process arguments
# never leave the machine, and the queries run in the order the contract
# gives.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
out="" err="" # what run leaves (with $rc)

H100=$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01
GEFORCE=$TESTDATA/nvidia/geforce-rtx-2080-super-595.71.05
ZERO_UUID=GPU-00000000-0000-0000-0000-000000000000
mkdir "$WORK/no-rules" # no site rules, whatever this machine has
HOST=(--nvidia-smi "$FAKES/nvidia-smi" --no-docker --no-nomad --node test-node --rules "$WORK/no-rules")

# smi DIR ARGS...: runs gpuledger ARGS against the fake nvidia-smi answering
# from DIR (host only). Leaves $out, $err, $rc.
smi() {
    local dir=$1
    shift
    FAKE_SMI_DIR=$dir run "$@" "${HOST[@]}"
}

# --- H100 under load -------------------------------------------------------
smi "$H100" ls --json
expect_rc "h100 ls --json: exit 0" 0
expect_eq "h100 ls --json: nothing on stderr" "$err" ""
json=$out
expect_lua "h100: schema 1, node, nomadRead false" "$json" 'j.schema == 1 and j.node == "test-node" and j.nomadRead == false'
expect_lua "h100: at is RFC 3339 UTC" "$json" 'j.at:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[.%d]*Z$") ~= nil'
expect_lua "h100: no errors" "$json" 'j.errors == nil or #j.errors == 0'
expect_lua "h100: one GPU" "$json" '#j.entries == 1'
expect_lua "h100: index, uuid, bus" "$json" 'j.entries[1].index == 0 and j.entries[1].uuid == "'$ZERO_UUID'" and j.entries[1].busId == "00000000:00:09.0"'
expect_lua "h100: model" "$json" 'j.entries[1].model == "NVIDIA H100 80GB HBM3"'
expect_lua "h100: memory 19818/81559" "$json" 'j.entries[1].memoryUsedMiB == 19818 and j.entries[1].memoryTotalMiB == 81559'
expect_lua "h100: util 100, memory util 11" "$json" 'j.entries[1].utilizationPct == 100 and j.entries[1].memoryUtilizationPct == 11'
expect_lua "h100: temperature 59" "$json" 'j.entries[1].temperatureC == 59'
expect_lua "h100: power 631.95" "$json" 'j.entries[1].powerW == 631.95'
expect_lua "h100: encoder 0 sessions, 0 fps" "$json" 'j.entries[1].encoderSessions == 0 and j.entries[1].encoderAverageFps == 0'
expect_lua "h100: thermal margin 26" "$json" 'j.entries[1].thermalMarginC == 26'
expect_lua "h100: thermal slowdown false" "$json" 'j.entries[1].thermalSlowdown == false'
expect_lua "h100: no reservations" "$json" '#j.entries[1].reservations == 0'
expect_in "h100: reservations is []" "$json" '"reservations":[]'
expect_not_in "h100: no null anywhere" "$json" 'null'
expect_lua "h100: state unaccounted" "$json" 'j.entries[1].state == "unaccounted"'
expect_lua "h100: one tenant, host" "$json" '#j.entries[1].tenants == 1 and j.entries[1].tenants[1].kind == "host"'
expect_lua "h100: host tenant pids in nvidia-smi order" "$json" 'cjson.encode(j.entries[1].tenants[1].pids) == "[11327,11328,11345]"'
expect_lua "h100: process names cut to the binary" "$json" 'cjson.encode(j.entries[1].tenants[1].processes) == "[\"memhog\",\"memhog\",\"gpu_burn\"]"'
expect_lua "h100: host tenant memory 2566+1542+15690" "$json" 'j.entries[1].tenants[1].usedMemoryMiB == 19798'
expect_lua "h100: host tenant not reserved, no container fields" "$json" 'local t = j.entries[1].tenants[1]; return t.reserved == false and t.container == nil and t.containerId == nil and t.allocId == nil and t.image == nil'
expect_not_in "h100: no path in process names" "$json" "/root/tools"
expect_lua "h100: no stateSince without history" "$json" 'j.entries[1].stateSince == nil'

smi "$H100" ls
expect_rc "h100 ls: exit 0" 0
expect_in "h100 ls: header" "$out" "gpuledger · test-node · 1 GPU(s) · "
expect_in "h100 ls: model row" "$out" "NVIDIA H100 80GB HBM3"
expect_in "h100 ls: memory" "$out" "19818/81559 MiB"
expect_in "h100 ls: temperature" "$out" "59 °C"
expect_in "h100 ls: host tenant, unmanaged" "$out" "host:"
expect_in "h100 ls: !unmanaged" "$out" "(19798 MiB) !unmanaged"
expect_not_in "h100 ls: no source error count" "$out" "source error"

# Findings by hand (docs/contract.md#codes): the host processes are an unmanaged
# tenant (BAD); one tenant, so not contended; an H100 has no known encoder
# cap; margin 26 > 5 with slowdown false, so not hot; not idle, not held.
smi "$H100" check --json
expect_rc "h100 check --json: exit 0 without --exit-on" 0
json=$out
expect_lua "h100 check: envelope" "$json" 'j.schema == 1 and j.node == "test-node" and type(j.at) == "string"'
expect_lua "h100 check: exactly one finding" "$json" '#j.findings == 1'
expect_lua "h100 check: unmanaged-tenant BAD on gpu0" "$json" 'local f = j.findings[1]; return f.code == "unmanaged-tenant" and f.level == "BAD" and f.gpu == "gpu0 GPU-00000000" and f.node == "test-node"'
expect_lua "h100 check: message" "$json" 'j.findings[1].message == "host process [memhog memhog gpu_burn] holds this GPU outside any container — 19798 MiB, pids [11327 11328 11345]"'
expect_lua "h100 check: worst BAD" "$json" 'j.worst == "BAD"'

smi "$H100" check
expect_rc "h100 check: exit 0" 0
expect_in "h100 check: the finding line" "$out" "unmanaged-tenant"
expect_in "h100 check: gpu label" "$out" "gpu0 GPU-00000000"
expect_eq "h100 check: a BAD line, no glyph (piped)" "${out:0:22}" "BAD   unmanaged-tenant"
expect_not_in "h100 check: piped, no emoji" "$out" "🔴"
expect_in "h100 check: counts" "$out" "1 findings: 0 OK, 0 WARN, 1 BAD, 0 ERROR"

for exit_on in "bad 2" "warn 2" "error 0"; do
    smi "$H100" check --exit-on "${exit_on% *}"
    expect_rc "h100 check --exit-on ${exit_on% *}: exit ${exit_on#* }" "${exit_on#* }"
done
smi "$H100" check --json --exit-on bad
expect_rc "h100 check --json --exit-on bad: exit 2" 2
smi "$H100" check --json --allow-unmanaged --exit-on bad
expect_rc "h100 --allow-unmanaged --exit-on bad: exit 0" 0
expect_lua "h100 --allow-unmanaged: the finding is WARN" "$out" '#j.findings == 1 and j.findings[1].level == "WARN" and j.worst == "WARN"'
# A known margin wins over --temp-max (docs/contract.md#encoder-limit-and-hot).
smi "$H100" check --json --temp-max 50
expect_lua "h100 --temp-max 50: margin 26 known, not hot" "$out" '#j.findings == 1 and j.findings[1].code ~= "hot"'

# --- H100 idle ---------------------------------------------------------------
smi "$H100/idle" ls --json
expect_rc "h100 idle ls --json: exit 0" 0
json=$out
expect_in "h100 idle: tenants is []" "$json" '"tenants":[]'
expect_in "h100 idle: reservations is []" "$json" '"reservations":[]'
expect_not_in "h100 idle: no null" "$json" 'null'
expect_lua "h100 idle: free, margin 46, power 69.85" "$json" 'local e = j.entries[1]; return e.state == "free" and e.thermalMarginC == 46 and e.powerW == 69.85 and e.memoryUsedMiB == 0 and e.temperatureC == 41'
smi "$H100/idle" check --json --exit-on warn
expect_rc "h100 idle check --exit-on warn: exit 0" 0
expect_lua "h100 idle: one idle OK finding" "$out" '#j.findings == 1 and j.findings[1].code == "idle" and j.findings[1].level == "OK" and j.worst == "OK"'
expect_lua "h100 idle: idle message" "$out" 'j.findings[1].message == "NVIDIA H100 80GB HBM3 idle: no tenant, no reservation, 81559 MiB free"'
smi "$H100/idle" check --json --no-idle
expect_lua "h100 idle --no-idle: no findings, findings is an array, worst OK" "$out" '#j.findings == 0 and j.worst == "OK"'
expect_in "h100 idle --no-idle: findings is []" "$out" '"findings":[]'

# --- GeForce RTX 2080 SUPER under load --------------------------------------
smi "$GEFORCE" ls --json
expect_rc "geforce ls --json: exit 0" 0
json=$out
expect_lua "geforce: one GPU, model" "$json" '#j.entries == 1 and j.entries[1].model == "NVIDIA GeForce RTX 2080 SUPER"'
expect_lua "geforce: bus, memory 819/8192" "$json" 'local e = j.entries[1]; return e.busId == "00000000:0C:00.0" and e.memoryUsedMiB == 819 and e.memoryTotalMiB == 8192'
expect_lua "geforce: util 8/3, temp 45, power 111.5" "$json" 'local e = j.entries[1]; return e.utilizationPct == 8 and e.memoryUtilizationPct == 3 and e.temperatureC == 45 and e.powerW == 111.5'
expect_lua "geforce: 2 encoder sessions at 107 fps" "$json" 'j.entries[1].encoderSessions == 2 and j.entries[1].encoderAverageFps == 107'
expect_lua "geforce: no thermal margin ([N/A])" "$json" 'j.entries[1].thermalMarginC == nil'
expect_not_in "geforce: thermalMarginC omitted" "$json" 'thermalMarginC'
expect_lua "geforce: thermal slowdown false" "$json" 'j.entries[1].thermalSlowdown == false'
expect_lua "geforce: one host tenant, two ffmpeg" "$json" 'local t = j.entries[1].tenants; return #t == 1 and t[1].kind == "host" and cjson.encode(t[1].processes) == "[\"ffmpeg\",\"ffmpeg\"]"'
expect_lua "geforce: pids 5268 5267, 600 MiB" "$json" 'local t = j.entries[1].tenants[1]; return cjson.encode(t.pids) == "[5268,5267]" and t.usedMemoryMiB == 600'
# 2 sessions < the GeForce cap of 12: no encoder finding; margin unknown but
# slowdown reported false: not hot.
smi "$GEFORCE" check --json
expect_lua "geforce check: unmanaged-tenant the only BAD" "$out" 'local bad = {}; for _, f in ipairs(j.findings) do if f.level == "BAD" then bad[#bad + 1] = f.code end end; return #bad == 1 and bad[1] == "unmanaged-tenant" and j.worst == "BAD"'
# The capture's GeForce runs with persistence mode Disabled: its one health finding.
expect_lua "geforce check: persistence-off WARN, the one health finding" "$out" 'local n = 0; for _, f in ipairs(j.findings) do if f.level == "WARN" then n = n + 1; if f.code ~= "persistence-off" then return false end end end; return n == 1'
expect_lua "geforce check: message" "$out" 'j.findings[1].message == "host process [ffmpeg ffmpeg] holds this GPU outside any container — 600 MiB, pids [5268 5267]"'
smi "$GEFORCE" check --json --encoder-max 2
expect_lua "geforce --encoder-max 2: encoder-saturated WARN naming the site's limit of 2" "$out" 'local n = 0; for _, f in ipairs(j.findings) do if f.code == "encoder-saturated" and f.level == "WARN" and f.message:find("at the limit of 2 (the site", 1, true) and f.message:find("encoder_max: --encoder-max or thresholds.lua)", 1, true) and f.message:find("107 fps", 1, true) then n = n + 1 end end; return n == 1'

smi "$GEFORCE/idle" ls --json
expect_in "geforce idle: tenants is []" "$out" '"tenants":[]'
expect_lua "geforce idle: free, no margin, 214/8192" "$out" 'local e = j.entries[1]; return e.state == "free" and e.thermalMarginC == nil and e.memoryUsedMiB == 214'
smi "$GEFORCE/idle" check --json
expect_lua "geforce idle: idle OK with 7978 MiB free, and persistence-off" "$out" '#j.findings == 2 and j.findings[1].code == "persistence-off" and j.findings[2].message == "NVIDIA GeForce RTX 2080 SUPER idle: no tenant, no reservation, 7978 MiB free"'

# --- arguments never leave the machine --------------------------------------
secret=$WORK/secret
fake_smi_gpus "$secret" GPU-5d2c8a6e-1f3b-4c7d-9e0a-2b4c6d8e0f12 GPU-e0b7a4c1-9f2d-4a38-8c6b-1d5e7f9a0b23
cat >"$secret/compute-apps.csv" <<'EOF'
GPU-5d2c8a6e-1f3b-4c7d-9e0a-2b4c6d8e0f12, 4242, 512, /usr/bin/HandBrakeCLI -i secret.mkv
GPU-e0b7a4c1-9f2d-4a38-8c6b-1d5e7f9a0b23, 4343, 300, ffmpeg -i /data/clients/acme/match.mp4
GPU-e0b7a4c1-9f2d-4a38-8c6b-1d5e7f9a0b23, 4444, 100, /usr/local/bin/python3	--token=hunter2
EOF
for args in "snapshot" "ls" "ls --json" "check" "check --json"; do
    # shellcheck disable=SC2086 # split on purpose
    smi "$secret" $args
    expect_rc "arguments: $args exits 0" 0
    for word in secret acme hunter2 mkv; do
        expect_not_in "arguments: '$word' not in $args stdout" "$out" "$word"
        expect_not_in "arguments: '$word' not in $args stderr" "$err" "$word"
    done
done
smi "$secret" ls --json
expect_lua "arguments: HandBrakeCLI kept as the binary" "$out" 'j.entries[1].tenants[1].processes[1] == "HandBrakeCLI"'
expect_lua "arguments: ffmpeg and python3 kept as binaries" "$out" 'cjson.encode(j.entries[2].tenants[1].processes) == "[\"ffmpeg\",\"python3\"]"'
expect_lua "arguments: no name holds a space or a slash" "$out" 'for _, e in ipairs(j.entries) do for _, t in ipairs(e.tenants) do for _, p in ipairs(t.processes) do if p:find("[ /\t]") then return false end end end end; return true'
smi "$secret" snapshot
expect_in "arguments: the snapshot keeps the binary" "$out" '"HandBrakeCLI"'

# --- the queries, and the rounds they run in ---------------------------------
log=$WORK/smi.log
spans=$WORK/smi.spans
main_q=--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps
apps_q=--query-compute-apps=gpu_uuid,pid,used_memory,process_name
# (asked with --version, the driver's and CUDA's versions, once per driver)
help_q=--help-query-gpu
version_q=--version
# the optional query: the health fields this R590 driver's help lists, then
# the thermal margin and the slowdown flags (the MIG mode is a health field);
# it lists every field, each by its newest name, so this is also the query
# asked before its help is in (the newest driver's)
health_fields=index,uuid,pci.bus_id,driver_version,persistence_mode,ecc.mode.current,ecc.mode.pending,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total,retired_pages.single_bit_ecc.count,retired_pages.double_bit.count,retired_pages.pending,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_power_cap,pcie.link.gen.gpucurrent,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,enforced.power.limit,power.default_limit,mig.mode.current,mig.mode.pending,gpu_recovery_action
optional_q=--query-gpu=$health_fields,temperature.gpu.tlimit,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_thermal_slowdown

# span_marks [FROM TO]: the start and end marks of the fake's runs, in the
# order they were written, as one line (the runs FROM to TO, by start).
span_marks() {
    awk -v from="${1:-1}" -v to="${2:-999999}" '$1 == "start" { n++ } n >= from && n <= to { printf "%s ", $1 }' "$spans"
}

# The fake holds each run until every run of its round has started, so
# overlapping runs show as overlapping however loaded the machine is; runs
# one after another would each wait 5 s in vain and show as start, end,
# start, end.
# in_rounds NAME FIXTURE ROUNDS ARGS...: gpuledger ARGS on a copy of FIXTURE
# whose runs the fake holds by ROUNDS (its rounds file), the fake's argv
# logged in $log and its marks in $spans.
in_rounds() {
    local copy=$WORK/rounds-$1
    cp -r "$2" "$copy"
    echo "$3" >"$copy/rounds"
    : >"$log"
    : >"$spans"
    shift 3
    FAKE_SMI_LOG=$log FAKE_SMI_SPANS=$spans smi "$copy" "$@"
}
in_rounds h100 "$H100" 5 check --json
expect_rc "rounds: check exits 0" 0
expect_eq "rounds: check starts 5 nvidia-smi processes: main, process list, field list, versions and the optional query" \
    "$(sort "$log")" "$(printf '%s\n' "$main_q" "$apps_q" "$help_q" "$version_q" "$optional_q" | sort)"
expect_eq "rounds: one round, the five queries running at the same time" \
    "$(span_marks)" "start start start start start end end end end end "
expect_lua "rounds: the optional answers are read (margin, slowdown, health)" "$out" \
    'return j.findings ~= nil'
FAKE_SMI_LOG=$log FAKE_SMI_SPANS=$spans smi "$H100" ls --json
expect_lua "rounds: margin, slowdown and health read from the one optional query" "$out" \
    'local e = j.entries[1]; return e.thermalMarginC == 26 and e.thermalSlowdown == false and e.health.persistenceMode == true'
expect_lua "rounds: the driver's and CUDA's versions from --version" "$out" 'j.driverVersion == "590.48.01" and j.cudaVersion == "13.1"'

# A GPU in MIG mode: -L and -q together, in a round of their own after the first.
in_rounds mig "$TESTDATA/nvidia/h100-mig-590.48.01" "5 2" ls --json
expect_rc "rounds, MIG: ls exits 0" 0
expect_eq "rounds, MIG: 7 processes, -L and -q last" "$(wc -l <"$log") $(tail -2 "$log" | sort | tr '\n' ' ')" "7 -L -q "
expect_eq "rounds, MIG: two rounds (five queries, then -L and -q together)" \
    "$(span_marks)" "start start start start start end end end end end start start end end "
expect_lua "rounds, MIG: the slices read, no error" "$out" 'j.entries[1].migDevices ~= nil and (j.errors == nil or #j.errors == 0)'

# An older driver (no remapped_rows.* fields, no tlimit, only the legacy
# throttle names, no --version) refuses the newest driver's optional query:
# seven processes, its own optional query and the remapped rows in a second round.
in_rounds old-driver "$TESTDATA/nvidia/bad/old-driver" "5 2" ls --json
expect_rc "rounds, older driver: ls exits 0" 0
expect_eq "rounds, older driver: 7 nvidia-smi processes" "$(wc -l <"$log")" 7
expect_eq "rounds, older driver: the newest driver's optional query asked in round one" "$(head -5 "$log" | grep -cxF -- "$optional_q")" 1
expect_eq "rounds, older driver: two rounds (five queries, then its own optional query and the remapped rows together)" \
    "$(span_marks)" "start start start start start end end end end end start start end end "
expect_in "rounds, older driver: the slowdown flags by their legacy name" "$(tail -2 "$log")" \
    "clocks_throttle_reasons.hw_thermal_slowdown,clocks_throttle_reasons.sw_thermal_slowdown"
expect_lua "rounds, older driver: slowdown read, no error" "$out" \
    'return j.entries[2].thermalSlowdown == true and (j.errors == nil or #j.errors == 0)'

# A driver without the clocks_event_reasons.* names lists only the legacy ones
# (its help has "clocks_event_reasons.x" or "clocks_throttle_reasons.x" as
# "clocks_throttle_reasons.x"): the flags are asked by that name alone.
no_event=$WORK/no-event
cp -r "$H100" "$no_event"
printf '%s\n' clocks_event_reasons.hw_thermal_slowdown clocks_event_reasons.sw_thermal_slowdown >"$no_event/unknown-fields"
printf '0, Not Active, Active\n' >"$no_event/clocks_throttle_reasons.csv"
: >"$log"
FAKE_SMI_LOG=$log smi "$no_event" ls --json
expect_eq "no event names: 6 processes (the newest driver's query refused), the optional query with the legacy names" \
    "$(grep -c 'clocks_throttle_reasons.hw_thermal_slowdown,clocks_throttle_reasons.sw_thermal_slowdown$' "$log") $(wc -l <"$log")" "1 6"
expect_lua "no event names: slowdown read from the throttle reasons, no error" "$out" \
    'return j.entries[1].thermalSlowdown == true and j.entries[1].thermalMarginC == 26 and (j.errors == nil or #j.errors == 0)'

# Children get PATH and LC_ALL=C only: the Nomad token in gpuledger's
# environment (and every other variable of it) never reaches nvidia-smi.
FAKE_SMI_ENV_LOG=$WORK/smi.env NOMAD_TOKEN=s3cret-nomad-token LANG=C.UTF-8 smi "$H100" ls
expect_rc "children's environment: ls exit 0" 0
# (bash, the fake's interpreter, adds PWD, SHLVL and _ itself)
expect_eq "children's environment: PATH and LC_ALL=C only" \
    "$(tr '\0' '\n' <"$WORK/smi.env" | sed 's/=.*//' | grep -vx 'PWD\|SHLVL\|_' | sort | tr '\n' ' ')" "LC_ALL PATH "
expect_eq "children's environment: LC_ALL=C" "$(tr '\0' '\n' <"$WORK/smi.env" | grep '^LC_ALL=')" "LC_ALL=C"
expect_not_in "children's environment: no token" "$(tr '\0' '\n' <"$WORK/smi.env")" "s3cret-nomad-token"

# serve remembers the driver's field list: its first refresh is a check's one
# round of five; from its second refresh on, a refresh is one round of three
# processes (main, process list, optional query).
# refreshes COUNT: serve has started COUNT refreshes or more (main queries).
# shellcheck disable=SC2317 # called through wait_for
refreshes() { [ "$(grep -cxF -- "$main_q" "$log")" -ge "$1" ]; }
serve_driver=$WORK/serve-driver
cp -r "$H100" "$serve_driver"
echo "5 3 3 3 3 3 3 3 3 3 3" >"$serve_driver/rounds"
: >"$log"
: >"$spans"
if FAKE_SMI_DIR=$serve_driver FAKE_SMI_LOG=$log FAKE_SMI_SPANS=$spans start_serve remembers --listen 127.0.0.1:0 \
    --interval 1s "${HOST[@]}" --kernel-log off; then
    wait_for "serve: a third refresh starts" 60 refreshes 3
    stop_serve TERM
    expect_eq "serve, first refresh: 5 processes in one round" "$(span_marks 1 5)" \
        "start start start start start end end end end end "
    expect_eq "serve, second refresh: main, process list and optional query (no field list, no --version)" \
        "$(awk '$1 == "start" { n++ } $1 == "start" && n >= 6 && n <= 8 { print $2 }' "$spans" | sort)" \
        "$(printf '%s\n' "$main_q" "$apps_q" "$optional_q" | sort)"
    expect_eq "serve, second refresh: 3 processes in one round" "$(span_marks 6 8)" "start start start end end end "
else
    fail "serve on the H100 driver starts" "$(cat "$SERVE_LOG")"
fi

finish
