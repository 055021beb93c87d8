# shellcheck shell=bash source-path=SCRIPTDIR disable=SC2154 # out: what testlib.sh's run leaves
# The checks of a test that puts a look-alike beside a real container
# (tests/cli/container_claim.sh with Docker, podman_claim.sh with Podman):
# a process of another uid in a cgroup that names the container, under one
# of the system's own roots, must be its own tenant, never the container's.
# Source it after testlib.sh; it sources the libraries it builds on.
# shellcheck source=containers.sh
. "$SRC/tests/lib/containers.sh"
# shellcheck source=cgroups.sh
. "$SRC/tests/lib/cgroups.sh"
# shellcheck source=fakes.sh
. "$SRC/tests/lib/fakes.sh"

EXEC_PID="" # set by claim_exec: the host pid of the process exec started

# claim_exec ENGINE NAME MAIN UID: has ENGINE (docker or podman: dk or pm)
# exec `sleep 601` as UID in the running container NAME, whose main process
# is MAIN, and leaves its host pid in EXEC_PID; checks that it is in the
# container's cgroup (whose name holds NAME's full id) and no child of MAIN.
# Fails and ends the script when no such process shows up in 5 s.
claim_exec() {
    local engine=$1 name=$2 main=$3 uid=$4 cli id parent
    case $engine in docker) cli=dk ;; *) cli=pm ;; esac
    id=$("$cli" inspect -f '{{.Id}}' "$name")
    "$cli" exec -d -u "$uid" "$name" sleep 601 >/dev/null
    EXEC_PID=""
    for _ in $(seq 50); do
        case $engine in
            docker) EXEC_PID=$(dk top "$name" -o pid,uid | awk -v uid="$uid" '$2 == uid { print $1 }') ;;
            *) EXEC_PID=$(pm top "$name" hpid user | awk -v uid="$uid" '$2 == uid { print $1 }') ;;
        esac
        [ -n "$EXEC_PID" ] && break
        sleep 0.1
    done
    if [ -z "$EXEC_PID" ]; then
        fail "$engine exec starts a process as uid $uid" "$("$cli" top "$name" 2>&1)"
        finish
    fi
    expect_in "the exec'd process is in the container's cgroup" "$(cat "/proc/$EXEC_PID/cgroup")" "$id"
    parent=$(awk '/^PPid:/ { print $2 }' "/proc/$EXEC_PID/status")
    if [ "$parent" != "$main" ]; then pass "the exec'd process is no child of the main process (its parent: $parent)"; else
        fail "the exec'd process is no child of the main process" "its parent is $main"; fi
}

# claim_look_alike CGROUP UID WHAT: starts `sleep 300` as UID in the cgroup
# CGROUP (a path from the cgroup2 root, CGROUP2, made already) and leaves
# its pid in CG_PID (cgroup_start); checks that /proc says it is there.
# Where it cannot be moved there, skips WHAT with the reason and ends the
# script.
claim_look_alike() {
    local root=${1#/}
    if ! cgroup_start "$CGROUP2$1" setpriv --reuid="$2" --regid="$2" --clear-groups sleep 300; then
        skip "$3" "$CG_WHY"
        finish
    fi
    expect_in "the spoofer's cgroup names the container, under /${root%%/*}" "$(cat "/proc/$CG_PID/cgroup")" "0::$1"
}

# expect_claims ENGINE ID CGROUP MAIN EXEC SPOOF SPOOF_UID GPU: has the fake
# nvidia-smi ($WORK/smi) report one GPU, GPU, that MAIN (the main process of
# the container ID, which ENGINE, docker or podman, runs for a Nomad task
# reserved on GPU), EXEC (a process `exec` started in it) and SPOOF (a
# process of SPOOF_UID in the cgroup CGROUP, which names ID) use; runs the
# caller's `gl ARGS...` (gpuledger ARGS on this node, FAKE_SMI_DIR=$WORK/smi)
# with snapshot, ls --json and check --json, and checks that the container's
# tenant is MAIN and EXEC, reserved; that SPOOF is its own tenant, BAD
# unmanaged-tenant by its uid; and that the GPU is not held.
expect_claims() {
    local engine=$1 id=$2 cgroup=$3 main=$4 exec_pid=$5 spoof=$6 spoof_uid=$7 gpu=$8
    fake_smi_gpus "$WORK/smi" "$gpu"
    printf '%s, %s, 2048, python3\n%s, %s, 1024, python3\n%s, %s, 512, python3\n' \
        "$gpu" "$main" "$gpu" "$exec_pid" "$gpu" "$spoof" >"$WORK/smi/compute-apps.csv"

    gl snapshot
    expect_rc "snapshot: exit 0" 0
    expect_lua "snapshot: the spoofer's record claims the container, in its own cgroup" "$out" \
        "local p = j.sources.proc.pids['$spoof']; return p.container_id == '$id' and p.container_cgroup == '0::$cgroup' and p.uid == $spoof_uid"
    expect_lua "snapshot: the container's main process and user, as the engine says" "$out" \
        "local c = j.sources.$engine.containers[1]; return c.State.Pid == $main and c.Config.User == ''"

    gl ls --json
    expect_rc "ls --json: exit 0" 0
    expect_lua "ls: the container's tenant is its main and its exec'd process" "$out" \
        "for _, t in ipairs(j.entries[1].tenants) do if t.allocId then return t.kind == 'nomad' and t.reserved == true and cjson.encode(t.pids) == '[$main,$exec_pid]' end end; return false"
    expect_lua "ls: the spoofer is its own tenant, by uid $spoof_uid" "$out" \
        "for _, t in ipairs(j.entries[1].tenants) do if t.owner == 'process' then return t.kind == 'host' and t.uid == $spoof_uid and t.containerId == nil and cjson.encode(t.pids) == '[$spoof]' end end; return false"
    expect_lua "ls: the GPU is unaccounted, not held" "$out" "j.entries[1].state == 'unaccounted'"

    gl check --json
    expect_lua "check: BAD unmanaged-tenant naming uid $spoof_uid" "$out" \
        "for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' then return f.level == 'BAD' and f.message:find('(uid $spoof_uid)', 1, true) ~= nil end end; return false"
    expect_lua "check: no held" "$out" "for _, f in ipairs(j.findings) do if f.code == 'held' then return false end end; return true"
}
