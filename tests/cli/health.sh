#!/usr/bin/env bash
# GPU health beside tenancy through the whole binary: the health
# query built from a real driver's help (and an older driver's), the kernel
# log from a FILE, from the journal (a fake journalctl) and from this
# machine's /dev/kmsg, each unreadable log an ERROR that names what to grant,
# a previous boot's Xids not counted, a GPU nvidia-smi no longer lists still
# reported from Nomad's device list with its reservation, the health query
# asked again when the driver changes under a running serve, the health
# alerts under promtool, and --replay of a snapshot holding every health
# signal.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
out="" err="" rc=0 # what run leaves

H100=$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01
OLD=$TESTDATA/nvidia/bad/old-driver
LOGS=$TESTDATA/kernel-log
mkdir "$WORK/no-rules"
BASE=(--nvidia-smi "$FAKES/nvidia-smi" --no-docker --no-nomad --node health-node --rules "$WORK/no-rules")

# smi DIR ARGS...: gpuledger ARGS against the fake nvidia-smi answering from DIR.
smi() {
    local dir=$1
    shift
    FAKE_SMI_DIR=$dir run "$@" "${BASE[@]}"
}

# --- the health query, as a real R590 driver answers it --------------------------
smi "$H100" ls --json --kernel-log "$LOGS/h100.log"
expect_rc "H100: ls --json exits 0" 0
expect_lua "H100: every source read, no error" "$out" \
    'j.sources.health == "read" and j.sources.kernel_log == "read" and j.errors == nil'
expect_lua "H100: the capture's health (ECC on, no errors, rows not remapped, gen5 x16, 700 W)" "$out" \
    'local h = j.entries[1].health; return h.eccMode == true and h.eccUncorrectedVolatile == 0 and h.remappedRowsPending == false and h.remappedRowsFailure == false and h.pcieGenMax == 5 and h.pcieWidthCurrent == 16 and h.powerLimitEnforcedW == 700 and h.persistenceMode == true and h.recoveryAction == "None" and h.retiredPagesPending == nil'
expect_lua "H100: this boot's Xid 31, graded app" "$out" \
    'local x = j.entries[1].xids; return #x == 1 and x[1].xid == 31 and x[1].class == "app" and x[1].count == 1 and x[1].processes[1] == "gpu_burn"'
smi "$H100" check --json --kernel-log "$LOGS/h100.log"
expect_lua "H100: one health finding, xid-app, ending with the tenancy" "$out" \
    'local n = 0; for _, f in ipairs(j.findings) do if f.code == "xid-app" then n = n + 1; if not f.message:find("— not reserved, held by [memhog,memhog,gpu_burn]: Nomad may place the next job here", 1, true) then return false end end end; return n == 1'
smi "$H100" ls --kernel-log "$LOGS/h100.log"
expect_in "H100: ls has a health column" "$out" "│ health       │"
expect_in "H100: ls shows the GPU's health" "$out" "│ WARN xid-app │"

# --- an older driver: fields from its help, remapped rows apart ------------------
smi "$OLD" check --json --kernel-log "$LOGS/kern.log"
expect_lua "old driver: pages pending retirement on gpu1, BAD, free" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "retired-pages-pending" and f.gpu == "gpu1 GPU-8c4f1e2d" and f.level == "BAD" then return true end end; return false'
expect_lua "old driver: PCIe x8 of x16 on gpu1" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "pcie-degraded" and f.message:find("x8 of x16", 1, true) then return true end end; return false'
# kern.log holds the previous boot's Xid 79 and 154 on gpu0's bus 0000:3b:00.
expect_lua "kern.log: the previous boot's Xids do not count" "$out" \
    'for _, f in ipairs(j.findings) do if f.code:find("^xid") or f.code == "gpu-lost" then return false end end; return true'

# --- a health query that fails: an ERROR naming it; the ledger stays ----------------
mkdir "$WORK/health-fails"
cp -r "$H100/." "$WORK/health-fails/"
echo 9 >"$WORK/health-fails/health.exit"
smi "$WORK/health-fails" check --json --kernel-log off
expect_lua "health query fails: source-unavailable naming it" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("^nvidia%-smi health: .*exit status 9") then return true end end; return false'
expect_lua "health query fails: the tenancy findings stay" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" then return true end end; return false'
smi "$WORK/health-fails" check --no-health --kernel-log off --exit-on error
expect_rc "--no-health: no health query, no error" 0

# --- the kernel log: unreadable FILE, journal, kmsg ---------------------------------
smi "$H100" check --json --kernel-log "$WORK/none/kern.log"
expect_lua "an unreadable FILE: source-unavailable naming it" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message == "kernel_log '"$WORK"'/none/kern.log: No such file or directory" then return true end end; return false'
smi "$H100" check --kernel-log "$WORK/none/kern.log" --exit-on error
expect_rc "an unreadable FILE: check --exit-on error exits 3" 3

PATH=$FAKES:$PATH FAKE_JOURNAL=$LOGS/journal.json smi "$OLD" check --json --kernel-log journal
expect_lua "journal: Xid 48 on gpu0 is xid-fatal" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "xid-fatal" and f.gpu == "gpu0 GPU-1b6e3c9a" and f.message:find("^Xid 48 %(double%-bit ECC error%)") then return true end end; return false'
expect_lua "journal: the GPU that fell off the bus at 0000:05:00 is reported, though nvidia-smi lists it not" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "gpu-lost" and f.gpu == "gpu? 00000000:05:00.0" then return true end end; return false'
PATH=$FAKES:$PATH smi "$OLD" check --json --kernel-log journal
expect_lua "journal with no kernel record (only the caller's own journal): ERROR naming what to grant" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("^kernel_log journalctl %-k: no kernel messages of this boot") and f.message:find("systemd-journal group, or grant it CAP_SYSLOG", 1, true) then return true end end; return false'
PATH=$FAKES:$PATH FAKE_JOURNAL_EXIT=1 FAKE_JOURNAL_STDERR="No journal files were opened due to insufficient permissions." \
    smi "$OLD" check --json --kernel-log journal
expect_lua "journal refused: its words in the ERROR" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("exit status 1: No journal files were opened due to insufficient permissions.", 1, true) then return true end end; return false'

# A journal line of 60 MB among the records: not read, named, the records
# around it are (before: 2.2 s and 319 MB, and no word of it).
python3 - "$LOGS/journal.json" "$WORK/journal-60mb.json" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
with open(sys.argv[2], "w") as out:
    out.write(lines[0])
    out.write('{"MESSAGE":"NVRM: ' + "x" * (60 * 1024 * 1024) + '"}\n')
    out.writelines(lines[1:])
PY
PATH=$FAKES:$PATH FAKE_JOURNAL=$WORK/journal-60mb.json smi "$OLD" check --json --kernel-log journal
expect_lua "journal with a 60 MB line: named, with the journal command, not read" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message == "kernel_log journalctl -k: 1 lines over 64 KiB were not read (no kernel message is that long)" then return true end end; return false'
expect_lua "journal with a 60 MB line: the Xid 48 around it still read" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "xid-fatal" and f.gpu == "gpu0 GPU-1b6e3c9a" then return true end end; return false'
# Random bytes from journalctl: named as what they are, not as a permission.
head -c 4096 /dev/urandom | tr -d '{' >"$WORK/journal-random"
PATH=$FAKES:$PATH FAKE_JOURNAL=$WORK/journal-random smi "$OLD" check --json --kernel-log journal
expect_lua "journal of random bytes: says they are no JSON records" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("^kernel_log journalctl %-k: answered %d+ bytes that are not JSON records") and not f.message:find("not readable by this user", 1, true) then return true end end; return false'

# This machine's own buffer through /dev/kmsg: read without blocking, or
# refused with the grant named. Either way gpuledger ends promptly.
smi "$H100" ls --json --kernel-log kmsg
expect_rc "kmsg: ls exits 0" 0
expect_lua "kmsg: read, or failed naming CAP_SYSLOG" "$out" \
    'if j.sources.kernel_log == "read" then return true end; for _, e in ipairs(j.errors or {}) do if e:find("CAP_SYSLOG", 1, true) then return true end end; return false'

# --- a kernel log of 200,000 Xid lines this boot: bounded, every line counted ---
# (before: every line a record of the snapshot, 592 MB and 23 s for 500,000)
awk 'BEGIN { print "[    0.000000] Linux version 6.1.0 (debian-kernel@lists.debian.org)";
    print "[ 3120.441870] NVRM: GPU at PCI:0000:00:09: GPU-00000000-0000-0000-0000-000000000000";
    for (i = 0; i < 200000; i++)
        printf "[%12.6f] NVRM: Xid (PCI:0000:00:09): %d, pid=%d, name=job%d, Ch 00000008\n", 3200 + i / 100, (i % 2 ? 13 : 48), 1000 + i % 500, i % 3 }' \
    >"$WORK/xid-flood.log"
smi "$H100" snapshot --kernel-log "$WORK/xid-flood.log"
expect_lua "200,000 Xid lines: the snapshot keeps a few records" "$out" 'return #j.sources.kernel_log.records <= 16'
expect_lua "200,000 Xid lines: they stand for every line" "$out" \
    'local n = 0; for _, r in ipairs(j.sources.kernel_log.records) do if r.text:find("Xid") then n = n + 1 + (r.repeated or 0) end end; return n == 200000'
smi "$H100" ls --json --kernel-log "$WORK/xid-flood.log"
expect_lua "200,000 Xid lines: 100,000 of each code on the GPU, three processes named" "$out" \
    'local got = {}; for _, x in ipairs(j.entries[1].xids) do got[#got + 1] = string.format("%dx%d %s", x.xid, x.count, table.concat(x.processes or {}, ",")) end; table.sort(got); return table.concat(got, ";") == "13x100000 job1,job0,job2;48x100000 job0,job2,job1"'
expect_lua "200,000 Xid lines: no error" "$out" 'return j.errors == nil or #j.errors == 0'
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "NVRM: Xid (PCI:%04x:3b:00): 13, pid=1, name=a, x\n", i }' >"$WORK/xid-buses.log"
smi "$H100" check --json --kernel-log "$WORK/xid-buses.log"
expect_lua "Xid lines on 5,000 addresses: an ERROR says how many lines of the FILE were not read" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.message:find("kernel_log '"$WORK"'/xid-buses.log: 904 NVRM lines of this boot were not read", 1, true) == 1 then return true end end; return false'

# --- a GPU gone from nvidia-smi that Nomad still lists, reserved -------------------
GONE=GPU-d8d8d8d8-0000-4000-8000-0000000000d8
python3 -c 'import json, sys
gone, node = sys.argv[1], "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b"
config = {"node_id": node, "acl": False, "devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA H100 80GB HBM3",
  "Instances": [{"ID": "GPU-00000000-0000-0000-0000-000000000000", "Healthy": True, "HealthDescription": "",
                 "Locality": {"PciBusID": "00000000:00:09.0" + "\u0000" * 16}},
                {"ID": gone, "Healthy": True, "HealthDescription": "", "Locality": {"PciBusID": "00000000:D8:00.0" + "\u0000" * 16}}]}],
  "allocations": [{"ID": "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", "Namespace": "default", "JobID": "train", "TaskGroup": "trainer",
    "ClientStatus": "running", "DesiredStatus": "run", "ModifyIndex": 12,
    "AllocatedResources": {"Tasks": {"trainer": {"Devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA H100 80GB HBM3", "DeviceIDs": [gone]}]}}}}]}
json.dump(config, open(sys.argv[2], "w"))' "$GONE" "$WORK/nomad.json"
fake_nomad_up "$WORK/nomad.json"
FAKE_SMI_DIR=$H100 run check --json --nvidia-smi "$FAKES/nvidia-smi" --no-docker --node health-node --rules "$WORK/no-rules" \
    --nomad-addr "$NOMAD" --kernel-log off
expect_lua "Nomad's devices: read" "$out" 'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end; return true'
expect_lua "the GPU gone from nvidia-smi: gpu-lost BAD, first, with its reservation" "$out" \
    'local f = j.findings[1]; return f.code == "gpu-lost" and f.gpu == "gpu? GPU-d8d8d8d8" and f.message:find("^nvidia%-smi no longer lists the GPU at 00000000:D8:00%.0 %(Nomad still lists it%)") ~= nil and f.message:find("— reserved by train/trainer (alloc 1f2e3d4c), no tenant", 1, true) ~= nil'
expect_lua "the GPU gone from nvidia-smi: Nomad still schedules on it" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "nomad-schedules-failing-gpu" and f.gpu == "gpu? GPU-d8d8d8d8" then return true end end; return false'
FAKE_SMI_DIR=$H100 run ls --nvidia-smi "$FAKES/nvidia-smi" --no-docker --node health-node --rules "$WORK/no-rules" \
    --nomad-addr "$NOMAD" --kernel-log off
expect_in "ls: the lost GPU's row, nothing of it measured" "$out" "│ ?   │ NVIDIA H100 80GB HBM3 │ ?    │ ?"
expect_in "ls: nomad_devices read" "$out" "nomad_devices read"
FAKE_SMI_DIR=$H100 run ls --json --nvidia-smi "$FAKES/nvidia-smi" --no-docker --node health-node --rules "$WORK/no-rules" \
    --nomad-addr "$NOMAD" --kernel-log off
expect_lua "ls --json: the lost GPU has no utilisation, memory, temperature, power or encoder field" "$out" \
    'local e = j.entries[2]; return e.missing == true and e.busId == "00000000:D8:00.0" and e.utilizationPct == nil and e.memoryUtilizationPct == nil and e.memoryUsedMiB == nil and e.memoryTotalMiB == nil and e.temperatureC == nil and e.powerW == nil and e.encoderSessions == nil and j.entries[1].utilizationPct ~= nil'
if FAKE_SMI_DIR=$H100 start_serve lost --listen 127.0.0.1:0 --nvidia-smi "$FAKES/nvidia-smi" --no-docker --node health-node \
    --rules "$WORK/no-rules" --nomad-addr "$NOMAD" --kernel-log off; then
    http GET "$URL/metrics"
    expect_in "/metrics: the lost GPU is listed" "$body" "gpuledger_gpu_info{node=\"health-node\",gpu=\"?\",uuid=\"$GONE\""
    for family in utilization_percent memory_used_bytes memory_total_bytes temperature_celsius power_watts encoder_sessions; do
        expect_in "/metrics: gpu 0 has its gpuledger_gpu_$family" "$body" "gpuledger_gpu_$family{node=\"health-node\",gpu=\"0\""
        expect_not_in "/metrics: no gpuledger_gpu_$family sample for the lost GPU" "$body" "gpuledger_gpu_$family{node=\"health-node\",gpu=\"?\""
    done
    stop_serve TERM
else
    fail "serve of the lost GPU starts" "$(cat "$SERVE_LOG")"
fi

# --- the driver changes under a running serve: the help is asked again -------------
# asked COUNT: the serve's nvidia-smi has been asked the health query COUNT times or more.
# shellcheck disable=SC2317 # called through wait_for
asked() { [ "$(grep -c -- '--query-gpu=index,uuid,pci.bus_id,driver_version' "$WORK/smi.log")" -ge "$1" ]; }
ln -s "$H100" "$WORK/driver"
: >"$WORK/smi.log"
if FAKE_SMI_DIR=$WORK/driver FAKE_SMI_LOG=$WORK/smi.log start_serve driver --listen 127.0.0.1:0 --interval 1s \
    "${BASE[@]}" --kernel-log off; then
    wait_for "serve refreshes on the R590 driver" 10 asked 3
    expect_eq "R590: the help asked once for three refreshes" "$(grep -c -- '--help-query-gpu' "$WORK/smi.log")" 1
    expect_eq "R590: --version asked once for three refreshes, with the help" "$(grep -cx -- '--version' "$WORK/smi.log")" 1
    http GET "$URL/ledger"
    expect_lua "R590: the driver's and CUDA's versions from --version" "$body" 'j.driverVersion == "590.48.01" and j.cudaVersion == "13.1"'
    ln -sfn "$OLD" "$WORK/driver"
    wait_for "the new driver's GPUs are served" 15 body_has "$URL/ledger" '"retiredPagesPending":true'
    expect_eq "older driver: the refused query asked the help again, once" "$(grep -c -- '--help-query-gpu' "$WORK/smi.log")" 2
    http GET "$URL/ledger"
    expect_lua "older driver: its version from the health query, and no CUDA version (its nvidia-smi has no --version)" \
        "$body" 'j.driverVersion == "470.256.02" and j.cudaVersion == nil'
    expect_eq "older driver: --version asked again with the help" "$(grep -cx -- '--version' "$WORK/smi.log")" 2
    http GET "$URL/metrics"
    printf '%s\n' "$body" >"$WORK/metrics.txt"
    stop_serve TERM
else
    fail "serve starts" "$(cat "$SERVE_LOG")"
fi

# --- the health alerts of deploy/prometheus ---------------------------------------
# promtool comes with Debian's prometheus package (installed when missing).
DEPLOY=$SRC/deploy/prometheus
if need_program promtool prometheus; then
    if said=$(promtool check rules "$DEPLOY/gpuledger-health.rules.yml" 2>&1); then
        pass "promtool check rules gpuledger-health"
    else
        fail "promtool check rules gpuledger-health" "$said"
    fi
    if said=$(cd "$DEPLOY" && promtool test rules gpuledger-health.rules.test.yml 2>&1); then
        pass "promtool test rules gpuledger-health"
    else
        fail "promtool test rules gpuledger-health" "${said:0:2000}"
    fi
    while read -r name; do # every metric the alerts use is one serve emits
        expect_in "the alerts' $name exists" "$(cat "$WORK/metrics.txt")" "# TYPE $name "
    done < <(grep -o 'gpuledger_[a-z_]*' "$DEPLOY/gpuledger-health.rules.yml" | sort -u)
else
    skip "the health alerts" "promtool (Debian prometheus) is not installed and cannot be: $(tail -n 1 "$WORK/apt.log")"
fi

# --- a snapshot holding every signal, replayed ------------------------------------
run check --json --replay "$TESTDATA/health/every-signal.json" --rules "$WORK/no-rules"
expect_rc "every signal: check --replay exits 0" 0
for code in gpu-lost gpu-requires-reset gpu-recovery-action row-remap-pending row-remap-failed retired-pages-pending \
    ecc-uncorrected xid-fatal nomad-schedules-failing-gpu row-remap-uncorrectable retired-pages-high ecc-disabled \
    xid-memory xid-app hw-slowdown power-brake pcie-degraded persistence-off mig-mode-pending; do
    expect_lua "every signal: $code" "$out" "for _, f in ipairs(j.findings) do if f.code == '$code' then return true end end; return false"
done
expect_lua "every signal: BAD health on reserved GPUs first, then on free ones" "$out" \
    'local seen_free = false; for _, f in ipairs(j.findings) do if f.level ~= "BAD" then break end; local reserved = f.message:find("— reserved by", 1, true) ~= nil; if reserved and seen_free then return false end; if not reserved then seen_free = true end end; return seen_free'
run snapshot --replay "$TESTDATA/health/every-signal.json"
expect_lua "every signal: the snapshot keeps the health sources" "$out" \
    'return j.sources.health.ok and #j.sources.kernel_log.records == 5 and #j.sources.nomad_devices.devices == 3'

finish
