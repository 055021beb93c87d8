#!/usr/bin/env bash
# A process that claims a Podman container must be that container's
# (docs/sources.md, "Which cgroups prove a tenant"), as container_claim.sh
# proves it for Docker. A real `podman system service` runs a Nomad task's
# container (podman driver: named enc-<alloc>, no labels; busybox, as root),
# which the fake Nomad reserved a GPU for; the fake nvidia-smi reports, by
# their real pids, three processes on that GPU: the container's main
# process, a process `podman exec -u 4321` started in it (in the container's
# libpod cgroup, not a descendant of its main process), and a process of
# uid 4322 in a cgroup of the container's name under the machine slice,
# where systemd's Podman would put it (`/machine.slice/libpod-<id>.scope`),
# while this Podman (cgroupfs) put the container under /libpod_parent. The
# first two are the container's; the third is its own tenant, unmanaged,
# named by its uid, and the GPU is not held. The Docker side is a fake
# engine that runs nothing. The test makes the look-alike cgroup itself in
# the machine's cgroup2 mount and removes it; it skips (exit 77), saying
# why, where there is no cgroup2 mount, no right to make a cgroup there, no
# Podman, or where this Podman itself uses that cgroup.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# claims.sh sources containers.sh, cgroups.sh and fakes.sh.
# shellcheck source=../lib/claims.sh
. "$SRC/tests/lib/claims.sh"
out="" err="" rc=0 # what run leaves

TOKEN=2f9e8d7c-6b5a-4c3d-9e1f-0a1b2c3d4e5f # in testdata/nomad/podman-node.json: read-job everywhere
ALLOC=9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3 # media/transcode, encoders, enc: reserved on G0
TASK_NAME=enc-$ALLOC
G0=GPU-e0e0e0e0-0000-4000-8000-0000000000e0
EXEC_UID=4321 SPOOF_UID=4322
mkdir "$WORK/no-rules"
what="a process that claims a Podman container"

if ! cgroup2_find; then
    skip "$what" "$CG_WHY"
    finish
fi
made_machine=""
[ -d "$CGROUP2/machine.slice" ] || made_machine=yes
spoof="" spoof_scope=""
# Stops the spoofer, then removes its scope (and the machine slice when this
# test made it and nothing else uses it).
# shellcheck disable=SC2317 # called from the at_exit hook
remove_cgroups() {
    [ -z "$spoof" ] || stop_pid "$spoof"
    [ -z "$spoof_scope" ] || rmdir "$spoof_scope" 2>/dev/null
    [ -z "$made_machine" ] || rmdir "$CGROUP2/machine.slice" 2>/dev/null
    return 0
}
at_exit remove_cgroups

fake_nomad_up "$TESTDATA/nomad/podman-node.json"
echo '{"containers": []}' >"$WORK/no-containers.json"
if ! fake_engine_start docker --fixture "$WORK/no-containers.json" --max-seconds 300; then
    fail "fake engine starts" "$(cat "$WORK/docker.stderr")"
    finish
fi
engine_up_or_skip podman "$WORK/podman"
if ! id=$(podman_run_task "$TASK_NAME" -- sleep 600); then
    fail "the task's container starts" "$CT_WHY"
    finish
fi
main=$(container_pid "$TASK_NAME")
claim_exec podman "$TASK_NAME" "$main" "$EXEC_UID"
exec_pid=$EXEC_PID

look_alike=/machine.slice/libpod-$id.scope
if grep -qF ":$look_alike" "/proc/$main/cgroup"; then
    skip "$what" "this Podman runs the container in $look_alike itself"
    finish
fi
spoof_scope=$CGROUP2$look_alike
if ! cgroup_make "$spoof_scope"; then
    spoof_scope=""
    skip "$what" "$CG_WHY"
    finish
fi
claim_look_alike "$look_alike" "$SPOOF_UID" "$what"
spoof=$CG_PID

# gl ARGS...: gpuledger ARGS on this node.
gl() {
    FAKE_SMI_DIR=$WORK/smi MY_TOKEN=$TOKEN run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc /proc \
        --node claim-node --rules "$WORK/no-rules" --docker "unix://$WORK/docker.sock" --podman "$PODMAN" \
        --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
}
expect_claims podman "$id" "$look_alike" "$main" "$exec_pid" "$spoof" "$SPOOF_UID" "$G0"
gl ls --json
expect_lua "ls: both engines read, no errors; the tenant is the task, from the container's name" "$out" \
    "if j.errors ~= nil or j.sources.docker ~= 'read' or j.sources.podman ~= 'read' then return false end; for _, t in ipairs(j.entries[1].tenants) do if t.allocId then return t.allocFromName == true and t.container == '$TASK_NAME' end end; return false"
finish
