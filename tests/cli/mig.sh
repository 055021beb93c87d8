#!/usr/bin/env bash
# gpuledger on an H100 in MIG mode: the fake nvidia-smi answers with the
# real capture (testdata/nvidia/h100-mig-590.48.01: -L, -q, the CSV
# queries), its processes replaced by real containers' processes on a real
# dockerd, and the fake Nomad answers allocations and the node's devices
# with MIG UUIDs in the shape Nomad's NVIDIA plugin gives them.
#
#   slice mig0 3g.40gb  train/trainer reserved it; its container
#                       (NVIDIA_VISIBLE_DEVICES=MIG-0000…) holds three
#                       processes there (GI 2, CI 0)              → held
#   slice mig1 2g.20gb  infer/server reserved it, nothing on it   → reserved-idle
#   slice mig2 1g.10gb  a container outside Nomad names it        → unmanaged-tenant
#   slice mig3 1g.10gb  infer/server's container runs a process
#                       there, on a slice it was not given        → unreserved-tenant
# Then the first scene alone (the issue's "done means"), and -q failing
# and hanging, and -L answering no GPU: a named source error, never a verdict.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/containers.sh
. "$SRC/tests/lib/containers.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

CAPTURE=$TESTDATA/nvidia/h100-mig-590.48.01
GPU="GPU-00000000-0000-0000-0000-000000000000"
M0=MIG-00000000-0000-0000-0000-000000000000
M2=MIG-00000002-0000-0000-0000-000000000002
TRAIN=aaaaaaaa-1111-4000-8000-000000000001
INFER=bbbbbbbb-2222-4000-8000-000000000002
mkdir "$WORK/no-rules"

fake_nomad_up "$TESTDATA/nomad/mig-node.json"

engine_up_or_skip docker "$WORK/docker"

started=1
docker_run_task "trainer-$TRAIN" "com.hashicorp.nomad.alloc_id=$TRAIN" com.hashicorp.nomad.job_name=train \
    com.hashicorp.nomad.task_name=trainer com.hashicorp.nomad.namespace=ml "--env=NVIDIA_VISIBLE_DEVICES=$M0" \
    -- sh -c 'sleep 600 & sleep 601 & exec sleep 602' >/dev/null || started=0
docker_run_task "server-$INFER" "com.hashicorp.nomad.alloc_id=$INFER" com.hashicorp.nomad.job_name=infer \
    com.hashicorp.nomad.task_name=server com.hashicorp.nomad.namespace=ml \
    "--env=NVIDIA_VISIBLE_DEVICES=MIG-00000003-0000-0000-0000-000000000003" -- sleep 600 >/dev/null || started=0
docker_run_task by-hand "--env=NVIDIA_VISIBLE_DEVICES=$M2" -- sleep 600 >/dev/null || started=0
if [ "$started" = 0 ]; then
    fail "the test containers start" "$(tail -n 5 "$WORK/docker/dockerd.log")"
    finish
fi
for _ in $(seq 50); do
    mapfile -t train_pids < <(dk top "trainer-$TRAIN" -o pid | tail -n +2 | sort -n)
    [ "${#train_pids[@]}" -ge 3 ] && break
    sleep 0.2
done
expect_eq "trainer runs three processes" "${#train_pids[@]}" 3
pid_server=$(container_pid "server-$INFER")

# The capture, its three processes (21180, 21181, 21198 on GI 2 CI 0) now the
# trainer's, and the server's process on mig3 (GI 10, CI 0).
mkdir "$WORK/smi"
cp -r "$CAPTURE/." "$WORK/smi/"
sed -e "s/21180/${train_pids[0]}/; s/21181/${train_pids[1]}/; s/21198/${train_pids[2]}/" \
    "$CAPTURE/compute-apps.csv" >"$WORK/smi/compute-apps.csv"
echo "$GPU, $pid_server, 9, /usr/bin/python3" >>"$WORK/smi/compute-apps.csv"
sed -e "s/: 21180$/: ${train_pids[0]}/; s/: 21181$/: ${train_pids[1]}/; s/: 21198$/: ${train_pids[2]}/" \
    "$CAPTURE/query.txt" | awk -v pid="$pid_server" '
        /^    Capabilities$/ && !done {
            print "        GPU instance ID                   : 10"
            print "        Compute instance ID               : 0"
            print "        Process ID                        : " pid
            print "            Type                          : C"
            print "            Name                          : /usr/bin/python3"
            print "            Used GPU Memory               : 9 MiB"
            done = 1 }
        { print }' >"$WORK/smi/query.txt"

COMMON=(--nvidia-smi "$FAKES/nvidia-smi" --node mig-node --rules "$WORK/no-rules" --docker "$DOCKER" --podman off
    --nomad-addr "$NOMAD" --kernel-log off)
gl() { FAKE_SMI_DIR=${SMI:-$WORK/smi} run "$@" "${COMMON[@]}"; }
# finding CODE GPU: the Lua test that a finding of CODE names GPU (its label)
finding() { echo "for _, f in ipairs(j.findings) do if f.code == '$1' and f.gpu == '$2' then return true end end return false"; }

# --- every verdict, each on its slice -----------------------------------------------
gl check --json
expect_rc "check --json: exit 0" 0
check_json=$out
expect_lua "held: train/trainer on its slice, with migUuid" "$check_json" \
    "for _, f in ipairs(j.findings) do if f.code == 'held' then return f.gpu == 'gpu0/mig0 MIG-00000000 3g.40gb' and f.migUuid == '$M0' and f.migProfile == '3g.40gb' end end return false"
expect_lua "reserved-idle: infer/server's slice" "$check_json" "$(finding reserved-idle 'gpu0/mig1 MIG-00000001 2g.20gb')"
expect_lua "unmanaged-tenant: the container outside Nomad, on the slice it names" "$check_json" \
    "for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' then return f.gpu == 'gpu0/mig2 MIG-00000002 1g.10gb' and f.migUuid == '$M2' and f.message:find('container by-hand', 1, true) ~= nil end end return false"
expect_lua "unreserved-tenant: infer/server on a slice it was not given" "$check_json" \
    "for _, f in ipairs(j.findings) do if f.code == 'unreserved-tenant' then return f.gpu == 'gpu0/mig3 MIG-00000003 1g.10gb' and f.job == 'infer' and f.message:find('uses this MIG slice but was not allocated it', 1, true) ~= nil end end return false"
expect_lua "no finding about the GPU itself, and Nomad's slices match the driver's" "$check_json" \
    "for _, f in ipairs(j.findings) do if f.gpu == 'gpu0 GPU-00000000' or f.code:find('^mig%-slice') then return false end end return true"

gl ls --json
expect_lua "ls --json: four slices, each with its state, the GPU's from them" "$out" \
    "local s = j.entries[1].migDevices return #s == 4 and s[1].state == 'held' and s[2].state == 'reserved-idle' and s[3].state == 'unaccounted' and s[4].state == 'unaccounted' and j.entries[1].state == 'unaccounted' and j.sources.mig == 'read'"
expect_lua "ls --json: the trainer's three pids on its slice, the GPU's utilisation absent (not 0)" "$out" \
    "local t = j.entries[1].migDevices[1].tenants[1] return #t.pids == 3 and t.jobName == 'train' and t.reserved and j.entries[1].utilizationPct == nil"
gl ls
expect_in "ls: a line for the held slice" "$out" "│ 0/mig0 │ MIG 3g.40gb "
expect_in "ls: the GPU's utilisation shown as n/a (not measured under MIG)" "$out" "│ 0      │ NVIDIA H100 80GB HBM3 │ n/a  │"

# --- the issue's scene: only the trainer, and a second reserved slice ------------------
dk rm -f by-hand "server-$INFER" >/dev/null 2>&1
mkdir "$WORK/smi-done"
cp -r "$WORK/smi/." "$WORK/smi-done/"
grep -v ", $pid_server, " "$WORK/smi/compute-apps.csv" >"$WORK/smi-done/compute-apps.csv"
sed -e "/^        GPU instance ID                   : 10$/,/Used GPU Memory               : 9 MiB$/d" \
    "$WORK/smi/query.txt" >"$WORK/smi-done/query.txt"
SMI=$WORK/smi-done gl check --json
expect_lua "done means: held for train/trainer on its slice, reserved-idle for the second, nothing BAD" "$out" \
    "local held, idle = false, false for _, f in ipairs(j.findings) do if f.level == 'BAD' or f.level == 'ERROR' then return false end held = held or (f.code == 'held' and f.gpu == 'gpu0/mig0 MIG-00000000 3g.40gb') idle = idle or (f.code == 'reserved-idle' and f.gpu == 'gpu0/mig1 MIG-00000001 2g.20gb') end return held and idle"

# --- -q failing, and hanging: a named source error, never a verdict ------------------
mkdir "$WORK/smi-fail"
cp -r "$WORK/smi-done/." "$WORK/smi-fail/"
echo 15 >"$WORK/smi-fail/query.exit"
echo "Unable to determine the device handle for GPU0000:00:09.0: Unknown Error" >"$WORK/smi-fail/query.txt"
SMI=$WORK/smi-fail gl check --json
expect_lua "-q failing: source-unavailable naming it, on the GPU too; nothing BAD" "$out" \
    "local named, on_gpu = false, false for _, f in ipairs(j.findings) do if f.level == 'BAD' then return false end named = named or (f.code == 'source-unavailable' and f.gpu == nil and f.message:find('^nvidia%-smi %-q: .*exit status 15') ~= nil) on_gpu = on_gpu or (f.code == 'source-unavailable' and f.gpu == 'gpu0 GPU-00000000') end return named and on_gpu"
mkdir "$WORK/smi-hang"
cp -r "$WORK/smi-done/." "$WORK/smi-hang/"
echo 30 >"$WORK/smi-hang/query.sleep"
SMI=$WORK/smi-hang gl check --json
expect_lua "-q hanging: bounded by nvidia-smi's deadline, a named source error; nothing BAD" "$out" \
    "local named = false for _, f in ipairs(j.findings) do if f.level == 'BAD' then return false end named = named or (f.code == 'source-unavailable' and f.message:find('^nvidia%-smi %-q: ') ~= nil) end return named"

mkdir "$WORK/smi-garbage"
cp -r "$WORK/smi-done/." "$WORK/smi-garbage/"
echo "No devices were found" >"$WORK/smi-garbage/list.txt"
SMI=$WORK/smi-garbage gl check --json
expect_lua "-L answering no GPU: source-unavailable naming the query and the binary" "$out" \
    "for _, f in ipairs(j.findings) do if f.code == 'source-unavailable' and f.gpu == nil then return f.message == 'nvidia-smi -L: $FAKES/nvidia-smi: unexpected answer: no GPU listed' end end return false"

# --- mig.mode.pending changing, and a GPU leaving MIG mode ----------------------------------
mkdir "$WORK/smi-pending"
cp -r "$WORK/smi-done/." "$WORK/smi-pending/"
awk -F', ' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mig.mode.pending") c = i; print; next }
    { OFS = ", "; $c = "Disabled"; print }' "$WORK/smi-done/query-gpu-table.csv" >"$WORK/smi-pending/query-gpu-table.csv"
SMI=$WORK/smi-pending gl check --json
expect_lua "mig.mode.pending Disabled: mig-mode-pending, the slices still judged" "$out" \
    "local pending, held = false, false for _, f in ipairs(j.findings) do pending = pending or (f.code == 'mig-mode-pending' and f.message:find('MIG mode becomes Disabled', 1, true) ~= nil) held = held or f.code == 'held' end return pending and held"
mkdir "$WORK/smi-off"
cp -r "$WORK/smi-done/." "$WORK/smi-off/"
rm "$WORK/smi-off/list.txt" "$WORK/smi-off/query.txt" # asked, the fake would fail
awk -F', ' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mig.mode.current") c = i; print; next }
    { OFS = ", "; $c = "Disabled"; print }' "$WORK/smi-done/query-gpu-table.csv" >"$WORK/smi-off/query-gpu-table.csv"
: >"$WORK/smi.log"
FAKE_SMI_LOG=$WORK/smi.log SMI=$WORK/smi-off gl ls --json
expect_lua "MIG mode off: no slices, -L and -q not asked" "$out" "return j.entries[1].migDevices == nil and j.sources.mig == 'off'"
expect_eq "MIG mode off: nvidia-smi -L and -q not asked" "$(grep -cx -e -L -e -q "$WORK/smi.log")" 0

finish
