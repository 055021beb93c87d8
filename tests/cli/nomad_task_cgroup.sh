#!/usr/bin/env bash
# A real process in a real cgroup v2 named as Nomad names a task of the exec,
# raw_exec, java or exec2 drivers (`nomad.slice/share.slice/<alloc>.<task>.scope`,
# Nomad 1.7+; docs/sources.md#proc), held on a fake GPU (the fake nvidia-smi reports its real
# pid), read through the real /proc: it comes out as that allocation's task,
# and with the fake Nomad reserving the GPU for that allocation the GPU is
# held, with no BAD finding. Then two real processes in a user's own
# systemd manager (`user.slice/user-<uid>.slice/user@<uid>.service/app.slice/`),
# one in a scope named like that task and one in a scope named like a Nomad
# container the engine runs: neither is taken for the task or the container;
# each is that user's, an unmanaged tenant. The test makes the cgroups itself (systemd-run needs
# systemd as pid 1, which these machines lack) in the machine's cgroup2
# mount, and removes it; it skips (exit 77), saying why, where there is no
# cgroup2 mount or no right to make a cgroup in it.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/cgroups.sh
. "$SRC/tests/lib/cgroups.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" # what run leaves (with $err and $rc)

mkdir "$WORK/no-rules"
GPU="GPU-5e1d7a3c-9b2f-4c68-a0e4-7f3b1d9c2e85"
ALLOC=$(cat /proc/sys/kernel/random/uuid) # a fresh one: runs never share a cgroup
TASK=worker

if ! cgroup2_find; then
    skip "a process in a Nomad task cgroup" "$CG_WHY"
    finish
fi
slice=$CGROUP2/nomad.slice
scope=$slice/share.slice/$ALLOC.$TASK.scope
made_slice=""
[ -d "$slice" ] || made_slice=yes
# A user's own manager: a uid no other run uses (this shell's pid).
FAKE_UID=$$
CONTAINER_ID=$(printf '%s' "$ALLOC" | sha256sum | cut -c1-64)
user_slice=$CGROUP2/user.slice/user-$FAKE_UID.slice
app_slice=$user_slice/user@$FAKE_UID.service/app.slice
user_task_scope=$app_slice/$ALLOC.$TASK.scope
user_container_scope=$app_slice/docker-$CONTAINER_ID.scope
made_users=""
[ -d "$CGROUP2/user.slice" ] || made_users=yes
if ! cgroup_make "$scope"; then
    skip "a process in a Nomad task cgroup" "$CG_WHY"
    finish
fi
# Stops the holder, then removes the scope, and the slices when this test
# made them and nothing else uses them (rmdir refuses a cgroup that is not
# empty).
holder="" task_spoof="" container_spoof=""
# shellcheck disable=SC2317 # called from the at_exit hook
remove_cgroups() {
    local pid
    for pid in "$holder" "$task_spoof" "$container_spoof"; do
        [ -z "$pid" ] || stop_pid "$pid"
    done
    rmdir "$user_task_scope" "$user_container_scope" "$app_slice" "$user_slice/user@$FAKE_UID.service" \
        "$user_slice" 2>/dev/null
    [ -z "$made_users" ] || rmdir "$CGROUP2/user.slice" 2>/dev/null
    rmdir "$scope" 2>/dev/null
    if [ -n "$made_slice" ]; then
        rmdir "$slice/share.slice" "$slice" 2>/dev/null
    fi
    return 0
}
at_exit remove_cgroups

if ! cgroup_start "$scope" sleep 300; then
    skip "a process in a Nomad task cgroup" "$CG_WHY"
    finish
fi
holder=$CG_PID
expect_in "the holder's /proc/<pid>/cgroup names the task's scope" "$(cat "/proc/$holder/cgroup")" \
    "/nomad.slice/share.slice/$ALLOC.$TASK.scope"

fake_smi_gpus "$WORK/smi" "$GPU"
printf '%s, %s, 2048, /usr/bin/python3 train.py --token=hunter2\n' "$GPU" "$holder" >"$WORK/smi/compute-apps.csv"
export FAKE_SMI_DIR=$WORK/smi

run snapshot --nvidia-smi "$FAKES/nvidia-smi" --proc /proc --node real-node --rules "$WORK/no-rules" \
    --no-nomad --podman off --docker "unix://$WORK/absent.sock"
expect_rc "snapshot: exit 0" 0
expect_lua "snapshot: the holder is task $TASK of allocation $ALLOC" "$out" \
    "local p = j.sources.proc.pids['$holder']; return p ~= nil and p.owner == 'nomad' and p.alloc_id == '$ALLOC' and p.task == '$TASK'"
expect_lua "snapshot: with its real uid" "$out" "j.sources.proc.pids['$holder'].uid == $(id -u)"
expect_not_in "snapshot: none of its arguments" "$out" "hunter2"

# --- joined to its allocation, which reserved the GPU ---------------------------
NODE_ID=6d2f9b41-3c8e-4a7d-9e15-b0c4a8f2d637
python3 - "$NODE_ID" "$ALLOC" "$GPU" >"$WORK/nomad.json" <<'PY'
import json, sys
node, alloc, gpu = sys.argv[1:]
print(json.dumps({"node_id": node, "role": "client", "acl": False, "allocations": [{
    "ID": alloc, "Namespace": "default", "Name": "train.trainer[0]", "NodeID": node, "JobID": "train",
    "TaskGroup": "trainer", "DesiredStatus": "run", "ClientStatus": "running",
    "AllocatedResources": {"Tasks": {"worker": {"Devices": [
        {"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA L4", "DeviceIDs": [gpu]}]}}},
    "CreateIndex": 10, "ModifyIndex": 11}]}))
PY
fake_nomad_up "$WORK/nomad.json"
# A Docker engine that runs no container (the fake: no real dockerd needed).
echo '{"containers": []}' >"$WORK/no-containers.json"
if ! fake_engine_start engine --fixture "$WORK/no-containers.json" --max-seconds 300; then
    fail "fake engine starts" "$(cat "$WORK/engine.stderr")"
    finish
fi
gl_nomad() {
    run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc /proc --node real-node --rules "$WORK/no-rules" \
        --nomad-addr "$NOMAD" --nomad-node-id "$NODE_ID" --podman off --docker "unix://$WORK/engine.sock"
}
gl_nomad ls --json
expect_rc "ls --json: exit 0" 0
expect_lua "ls: the holder is a reserved Nomad tenant, train/worker" "$out" \
    "local t = j.entries[1].tenants[1]; return #j.entries[1].tenants == 1 and t.kind == 'nomad' and t.allocId == '$ALLOC' and t.jobName == 'train' and t.taskName == 'worker' and t.reserved == true and t.pids[1] == $holder"
expect_lua "ls: the GPU is held" "$out" "j.entries[1].state == 'held'"
gl_nomad check --json --exit-on warn
expect_rc "check: exit 0, nothing to warn of" 0
expect_lua "check: one finding, held, OK" "$out" "#j.findings == 1 and j.findings[1].code == 'held' and j.findings[1].level == 'OK'"

# --- a user's own scopes named like the task and like a Nomad container -------
if ! cgroup_make "$user_task_scope" "$user_container_scope"; then
    fail "make a user's own scopes" "$CG_WHY"
    finish
fi
if ! cgroup_start "$user_task_scope" sleep 300; then
    fail "move the spoofers into a user's own scopes" "$CG_WHY"
    finish
fi
task_spoof=$CG_PID
if ! cgroup_start "$user_container_scope" sleep 300; then
    fail "move the spoofers into a user's own scopes" "$CG_WHY"
    finish
fi
container_spoof=$CG_PID
expect_in "the task spoofer's cgroup is in the user's manager" "$(cat "/proc/$task_spoof/cgroup")" \
    "/user.slice/user-$FAKE_UID.slice/user@$FAKE_UID.service/app.slice/$ALLOC.$TASK.scope"
printf '%s, %s, 1024, python3\n%s, %s, 512, python3\n' "$GPU" "$task_spoof" "$GPU" "$container_spoof" \
    >>"$WORK/smi/compute-apps.csv"
# The engine runs the container the second spoofer names, labelled as a task
# of the allocation (it holds no GPU itself).
python3 - "$CONTAINER_ID" "$ALLOC" >"$WORK/nomad-container.json" <<'PY'
import json, sys
cid, alloc = sys.argv[1:]
print(json.dumps({"containers": [{
    "Id": cid, "Name": "/worker-" + alloc, "Image": "sha256:" + "7" * 64,
    "State": {"Status": "running", "Running": True, "Pid": 1},
    "Config": {"Image": "registry.example/worker:1", "Env": [],
               "Labels": {"com.hashicorp.nomad.alloc_id": alloc, "com.hashicorp.nomad.job_name": "train",
                          "com.hashicorp.nomad.task_name": "worker", "com.hashicorp.nomad.namespace": "default"}},
    "HostConfig": {"NetworkMode": "host"}}]}))
PY
stop_pid "$engine_pid"
if ! fake_engine_start engine2 --fixture "$WORK/nomad-container.json" --max-seconds 300; then
    fail "fake engine with the Nomad container starts" "$(cat "$WORK/engine2.stderr")"
    finish
fi
run snapshot --nvidia-smi "$FAKES/nvidia-smi" --proc /proc --node real-node --rules "$WORK/no-rules" \
    --no-nomad --podman off --docker "unix://$WORK/engine2.sock"
for pid in "$task_spoof" "$container_spoof"; do
    expect_lua "snapshot: $pid, in uid $FAKE_UID's own manager, is that user's session" "$out" \
        "local p = j.sources.proc.pids['$pid']; return p.owner == 'session' and p.session_uid == $FAKE_UID and p.alloc_id == nil and p.container_id == nil"
done
run ls --json --nvidia-smi "$FAKES/nvidia-smi" --proc /proc --node real-node --rules "$WORK/no-rules" \
    --nomad-addr "$NOMAD" --nomad-node-id "$NODE_ID" --podman off --docker "unix://$WORK/engine2.sock"
expect_rc "ls --json with the spoofers: exit 0" 0
expect_lua "ls: train/worker holds only the task's process" "$out" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.allocId then return t.kind == 'nomad' and cjson.encode(t.pids) == '[$holder]' end end; return false"
expect_lua "ls: both spoofers are one unmanaged tenant, uid $FAKE_UID's" "$out" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.owner == 'user' then return t.kind == 'host' and t.uid == $FAKE_UID and t.containerId == nil and cjson.encode(t.pids) == '[$task_spoof,$container_spoof]' end end; return false"
expect_lua "ls: the GPU is unaccounted, not held" "$out" "j.entries[1].state == 'unaccounted'"
run check --json --nvidia-smi "$FAKES/nvidia-smi" --proc /proc --node real-node --rules "$WORK/no-rules" \
    --nomad-addr "$NOMAD" --nomad-node-id "$NODE_ID" --podman off --docker "unix://$WORK/engine2.sock"
expect_lua "check: BAD unmanaged-tenant naming the user" "$out" \
    "for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' then return f.level == 'BAD' and f.message:find('(uid $FAKE_UID)', 1, true) ~= nil end end; return false"

finish
