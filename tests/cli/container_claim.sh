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
# claims.sh sources containers.sh, cgroups.sh and fakes.sh.
# shellcheck source=../lib/claims.sh
. "$SRC/tests/lib/claims.sh"
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
claim_exec docker "worker-$ALLOC_A" "$main" "$EXEC_UID"
exec_pid=$EXEC_PID

look_alike=/system.slice/ci-runner-$$.service/docker-$id.scope # under $service
spoof_scope=$CGROUP2$look_alike
mkdir "$spoof_scope"
claim_look_alike "$look_alike" "$SPOOF_UID" "a process that claims a container"
spoof=$CG_PID

# gl ARGS...: gpuledger ARGS on this node.
gl() {
    FAKE_SMI_DIR=$WORK/smi MY_TOKEN=$TOKEN run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc /proc \
        --node claim-node --rules "$WORK/no-rules" --docker "$DOCKER" --podman off \
        --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
}
expect_claims docker "$id" "$look_alike" "$main" "$exec_pid" "$spoof" "$SPOOF_UID" "$G0"
finish
