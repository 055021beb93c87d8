#!/usr/bin/env bash
# A process that claims a container must be that container's (docs/sources.md,
# "Which cgroups prove a tenant"). A real dockerd runs a Nomad task's
# container (busybox, as root), reserved on a GPU by the fake Nomad; the fake
# nvidia-smi reports, by their real pids, three processes on that GPU: the
# container's main process, a process `docker exec` started in it as uid 4321
# (in the engine's cgroup for the container, not a descendant of its main
# process), and a process of uid 4322 in a cgroup of the same name that a
# service with a delegated subtree could make under /system.slice
# (`/system.slice/ci-runner.service/docker-<id>.scope`). The first two are
# the container's; the third is its own tenant, unmanaged, named by its uid,
# and the GPU is not held. The test makes that cgroup itself in the
# machine's cgroup2 mount and removes it; it skips (exit 77), saying why,
# where there is no cgroup2 mount, no right to make a cgroup there, or no
# dockerd.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/containers.sh
. "$SRC/tests/lib/containers.sh"
# shellcheck source=../lib/cgroups.sh
. "$SRC/tests/lib/cgroups.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

EXEC_UID=4321 SPOOF_UID=4322
mkdir "$WORK/no-rules"

if ! cgroup2_find; then
    skip "a process that claims a container" "$CG_WHY"
    finish
fi
made_system=""
[ -d "$CGROUP2/system.slice" ] || made_system=yes
service=$CGROUP2/system.slice/ci-runner-$$.service # a name no other run uses
if ! cgroup_make "$service"; then
    skip "a process that claims a container" "$CG_WHY"
    finish
fi
spoof="" spoof_scope=""
# Stops the spoofer, then removes its scope and the service (and the system
# slice when this test made it and nothing else uses it).
# shellcheck disable=SC2317 # called from the at_exit hook
remove_cgroups() {
    [ -z "$spoof" ] || stop_pid "$spoof"
    [ -z "$spoof_scope" ] || rmdir "$spoof_scope" 2>/dev/null
    rmdir "$service" 2>/dev/null
    [ -z "$made_system" ] || rmdir "$CGROUP2/system.slice" 2>/dev/null
    return 0
}
at_exit remove_cgroups

docker_node_nomad # TOKEN, G0, ALLOC_A (default/train, trainer, worker: reserved on G0)
engine_up_or_skip docker "$WORK/docker"
if ! id=$(docker_run_task "worker-$ALLOC_A" "com.hashicorp.nomad.alloc_id=$ALLOC_A" \
    com.hashicorp.nomad.job_name=train com.hashicorp.nomad.task_name=worker \
    com.hashicorp.nomad.namespace=default "--env=NVIDIA_VISIBLE_DEVICES=$G0" -- sleep 600); then
    fail "the task's container starts" "$(tail -n 5 "$WORK/docker/dockerd.log")"
    finish
fi
main=$(container_pid "worker-$ALLOC_A")
dk exec -d -u "$EXEC_UID" "worker-$ALLOC_A" sleep 601 >/dev/null
exec_pid=""
for _ in $(seq 50); do
    exec_pid=$(dk top "worker-$ALLOC_A" -o pid,uid | awk -v uid="$EXEC_UID" '$2 == uid { print $1 }')
    [ -n "$exec_pid" ] && break
    sleep 0.1
done
if [ -z "$exec_pid" ]; then
    fail "docker exec starts a process as uid $EXEC_UID" "$(dk top "worker-$ALLOC_A" 2>&1)"
    finish
fi
expect_in "the exec'd process is in the container's cgroup" "$(cat "/proc/$exec_pid/cgroup")" "$id"
parent=$(awk '/^PPid:/ { print $2 }' "/proc/$exec_pid/status")
if [ "$parent" != "$main" ]; then pass "the exec'd process is no child of the main process (its parent: $parent)"; else
    fail "the exec'd process is no child of the main process" "its parent is $main"; fi

spoof_scope=$service/docker-$id.scope
mkdir "$spoof_scope"
if ! cgroup_start "$spoof_scope" setpriv --reuid="$SPOOF_UID" --regid="$SPOOF_UID" --clear-groups sleep 300; then
    skip "a process that claims a container" "$CG_WHY"
    finish
fi
spoof=$CG_PID
expect_in "the spoofer's cgroup names the container, under /system.slice" "$(cat "/proc/$spoof/cgroup")" \
    "0::/system.slice/ci-runner-$$.service/docker-$id.scope"

fake_smi_gpus "$WORK/smi" "$G0"
printf '%s, %s, 2048, python3\n%s, %s, 1024, python3\n%s, %s, 512, python3\n' \
    "$G0" "$main" "$G0" "$exec_pid" "$G0" "$spoof" >"$WORK/smi/compute-apps.csv"
# gl ARGS...: gpuledger ARGS on this node.
gl() {
    FAKE_SMI_DIR=$WORK/smi MY_TOKEN=$TOKEN run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc /proc \
        --node claim-node --rules "$WORK/no-rules" --docker "$DOCKER" --podman off \
        --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
}

gl snapshot
expect_rc "snapshot: exit 0" 0
expect_lua "snapshot: the spoofer's record claims the container, in its own cgroup" "$out" \
    "local p = j.sources.proc.pids['$spoof']; return p.container_id == '$id' and p.container_cgroup == '0::/system.slice/ci-runner-$$.service/docker-$id.scope' and p.uid == $SPOOF_UID"
expect_lua "snapshot: the container's main process and user, as the engine says" "$out" \
    "local c = j.sources.docker.containers[1]; return c.State.Pid == $main and c.Config.User == ''"

gl ls --json
expect_rc "ls --json: exit 0" 0
expect_lua "ls: the container's tenant is its main and its exec'd process" "$out" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.allocId then return t.kind == 'nomad' and t.reserved == true and cjson.encode(t.pids) == '[$main,$exec_pid]' end end; return false"
expect_lua "ls: the spoofer is its own tenant, by uid $SPOOF_UID" "$out" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.owner == 'process' then return t.kind == 'host' and t.uid == $SPOOF_UID and t.containerId == nil and cjson.encode(t.pids) == '[$spoof]' end end; return false"
expect_lua "ls: the GPU is unaccounted, not held" "$out" "j.entries[1].state == 'unaccounted'"
gl check --json
expect_lua "check: BAD unmanaged-tenant naming uid $SPOOF_UID" "$out" \
    "for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' then return f.level == 'BAD' and f.message:find('(uid $SPOOF_UID)', 1, true) ~= nil end end; return false"
expect_lua "check: no held" "$out" "for _, f in ipairs(j.findings) do if f.code == 'held' then return false end end; return true"
finish
