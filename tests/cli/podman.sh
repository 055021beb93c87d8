#!/usr/bin/env bash
# gpuledger with Podman (--podman, docs/sources.md#docker-and-podman):
# the podman-driver container named <task>-<alloc uuid>, with no Nomad
# label, is Nomad's only when Nomad returns that allocation (allocFromName);
# Podman is listed beside Docker; a --podman endpoint named explicitly that
# cannot be reached is a source-unavailable, `--podman auto` without the
# default socket is simply no Podman.
#
# First what needs no Podman at all (fake engines), then a real `podman
# system service` on a private socket (skipped, with podman_up's reason,
# where it cannot run) whose container process is reported by the fake
# nvidia-smi with its real host pid, so the libpod cgroup is read for real.
# The Docker side is fake_engine.py with one plain container on gpu1.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/containers.sh
. "$SRC/tests/lib/containers.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

TOKEN=2f9e8d7c-6b5a-4c3d-9e1f-0a1b2c3d4e5f         # read-job on every namespace
DEFAULT_TOKEN=2f9e8d7c-0000-4000-8000-0000000d3fa1 # read-job on "default" only
ALLOC=9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3         # media/transcode, encoders, enc: gpu0
TASK_NAME=enc-$ALLOC
G0=GPU-e0e0e0e0-0000-4000-8000-0000000000e0
mkdir "$WORK/no-rules"

# engine NAME ARGS...: starts fake_engine.py on $WORK/NAME.sock with ARGS.
engine() {
    local name=$1
    shift
    if ! fake_engine_start "$name" --max-seconds 300 "$@"; then
        fail "fake engine $name starts" "$(cat "$WORK/$name.stderr")"
        finish
    fi
}

# --- the fakes ---------------------------------------------------------------------
engine docker --fixture "$TESTDATA/engine/docker-side.json"
DOCKER=unix://$WORK/docker.sock
fake_nomad_up "$TESTDATA/nomad/podman-node.json"

# The fake nvidia-smi: two L4s; compute-apps is written once a process exists.
mkdir "$WORK/smi"
cp "$TESTDATA/engine/small-node/query-gpu.csv" "$WORK/smi/"
: >"$WORK/smi/compute-apps.csv"

# gl PODMAN ARGS...: runs gpuledger ARGS with --podman PODMAN, the fake
# Docker and the fake Nomad (token variable MY_TOKEN). Every output is
# kept, to look for the tokens in at the end.
gl() {
    local podman=$1
    shift
    FAKE_SMI_DIR=$WORK/smi run "$@" --nvidia-smi "$FAKES/nvidia-smi" --node test-node --rules "$WORK/no-rules" \
        --docker "$DOCKER" --podman "$podman" --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
    printf '%s\n%s\n' "$out" "$err" >>"$WORK/all-output"
}

# --- --podman named but unreachable, auto, off ------------------------------------------
MY_TOKEN=$TOKEN gl "unix://$WORK/absent.sock" check --json
expect_rc "absent --podman: check exits 0" 0
expect_lua "absent --podman: one source-unavailable, starting \"podman \" and naming the socket" "$out" \
    'local n, m = 0, "" for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then n = n + 1 m = f.message end end
     return n == 1 and m:find("podman unix://'"$WORK"'/absent.sock", 1, true) == 1'
MY_TOKEN=$TOKEN gl "unix://$WORK/absent.sock" ls --json
expect_rc "absent --podman: ls --json exits 0" 0
expect_lua "absent --podman: podman failed, docker and nomad read, the docker container listed" "$out" \
    'return j.sources.podman == "failed" and j.sources.docker == "read" and j.sources.nomad == "read" and #j.errors == 1 and j.entries[2].tenants[1].container == "docker-side"'
MY_TOKEN=$TOKEN gl "unix://$WORK/absent.sock" ls
expect_rc "absent --podman: ls exits 0" 0
expect_in "absent --podman: ls says it on stderr" "$err" "gpuledger: podman unix://$WORK/absent.sock"

if [ -e /run/podman/podman.sock ]; then
    skip "--podman auto without /run/podman/podman.sock" "this machine has /run/podman/podman.sock"
else
    for podman in auto off ""; do
        MY_TOKEN=$TOKEN gl "$podman" ls --json
        expect_rc "--podman '$podman': ls --json exits 0" 0
        expect_lua "--podman '$podman': no podman source, no error" "$out" \
            'j.sources.podman == "off" and j.errors == nil and j.sources.docker == "read"'
    done
    MY_TOKEN=$TOKEN gl auto check --json
    expect_lua "--podman auto: no source-unavailable" "$out" \
        'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end return true'
fi

# --- a fake Podman (fake_engine --mode podman): the podman-driver name ----------------------
engine podman-fake --mode podman --fixture "$TESTDATA/engine/podman-fake.json"
MY_TOKEN=$TOKEN gl "unix://$WORK/podman-fake.sock" ls --json
expect_rc "fake Podman: ls --json exits 0" 0
expect_lua "fake Podman: enc-<alloc> holds gpu0 (NVIDIA_VISIBLE_DEVICES), nomad, from its name, reserved" "$out" \
    'local t = j.entries[1].tenants[1] return j.errors == nil and j.sources.podman == "read" and t.kind == "nomad" and t.allocFromName == true and t.allocId == "'"$ALLOC"'" and t.taskName == "enc" and t.reserved == true and t.allocVisible == true and #t.pids == 0 and j.entries[1].state == "held"'
expect_lua "fake Podman: Docker's container beside it on gpu1" "$out" 'j.entries[2].tenants[1].container == "docker-side"'

# --- a real Podman ------------------------------------------------------------------------------
at_exit "podman_down '$WORK/podman'"
if ! podman_up "$WORK/podman"; then
    skip "real podman" "$CT_WHY"
    # Where Podman cannot run the test counts as skipped, once the
    # checks above have passed.
    [ "$failed" -eq 0 ] || finish
    printf '%d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
    exit 77
fi
if ! podman_run_task "$TASK_NAME" -- sleep 600 >/dev/null; then
    fail "podman run $TASK_NAME" "$CT_WHY"
    finish
fi
pod_pid=$(container_pid "$TASK_NAME")
pod_id=$(pm inspect -f '{{.Id}}' "$TASK_NAME")
expect_in "the container's process is in a libpod cgroup" "$(cat "/proc/$pod_pid/cgroup" 2>&1)" "libpod-$pod_id"
echo "$G0, $pod_pid, 3072, /usr/bin/ffmpeg -i /media/secret-input.ts" >"$WORK/smi/compute-apps.csv"
PODMAN=unix://$WORK/podman/podman.sock

# Nomad returns the allocation: held, from the name alone.
: >"$WORK/nomad.log"
MY_TOKEN=$TOKEN gl "$PODMAN" ls --json
expect_rc "real Podman: ls --json exits 0" 0
ls_json=$out
expect_lua "real Podman: no errors, both engines read" "$ls_json" \
    'j.errors == nil and j.sources.docker == "read" and j.sources.podman == "read" and j.nomadRead == true'
expect_lua "real Podman: gpu0 held by the podman task" "$ls_json" \
    'local e = j.entries[1] local t = e.tenants[1] return e.state == "held" and #e.tenants == 1 and t.kind == "nomad" and t.allocFromName == true and t.taskName == "enc" and t.allocId == "'"$ALLOC"'" and t.reserved == true and t.allocVisible == true and t.container == "'"$TASK_NAME"'" and t.containerId == "'"${pod_id:0:12}"'"'
expect_lua "real Podman: the real pid, the process name only" "$ls_json" \
    'local t = j.entries[1].tenants[1] return cjson.encode(t.pids) == "['"$pod_pid"']" and cjson.encode(t.processes) == "[\"ffmpeg\"]" and t.usedMemoryMiB == 3072'
expect_lua "real Podman: no job or namespace made up (no labels)" "$ls_json" \
    'local t = j.entries[1].tenants[1] return t.jobName == nil and t.namespace == nil'
expect_lua "real Podman: gpu0 reservation of transcode/enc" "$ls_json" \
    'local r = j.entries[1].reservations return #r == 1 and r[1].allocId == "'"$ALLOC"'" and r[1].task == "enc" and r[1].namespace == "media"'
expect_lua "real Podman: Docker's container beside it (gpu1)" "$ls_json" \
    'local t = j.entries[2].tenants[1] return t.kind == "docker" and t.container == "docker-side" and #t.pids == 0'
expect_not_in "real Podman: the process arguments stay on the node" "$ls_json" "secret-input"

MY_TOKEN=$TOKEN gl "$PODMAN" check --json
expect_rc "real Podman: check --json exits 0" 0
check_json=$out
expect_lua "real Podman: held OK on gpu0; the Docker container unmanaged on gpu1; nothing else" "$check_json" \
    'local codes = {} for _, f in ipairs(j.findings) do codes[#codes + 1] = f.level .. ":" .. f.code .. "@" .. (f.gpu or "node") end
     return table.concat(codes, " ") == "BAD:unmanaged-tenant@gpu1 GPU-e1e1e1e1 OK:held@gpu0 GPU-e0e0e0e0"'

MY_TOKEN=$TOKEN gl "$PODMAN" ls
expect_rc "real Podman: ls exits 0" 0
expect_in "real Podman: ls lists the podman task" "$out" "nomad:$TASK_NAME (3072 MiB)"
expect_not_in "real Podman: the podman task is not flagged" "$out" "nomad:$TASK_NAME (3072 MiB) !"
expect_in "real Podman: ls lists Docker's container" "$out" "docker:docker-side (0 MiB) !unmanaged"
expect_in "real Podman: both engines read" "$out" "docker read · podman read"

# Snapshot and replay.
MY_TOKEN=$TOKEN gl "$PODMAN" snapshot
expect_rc "real Podman: snapshot exits 0" 0
printf '%s\n' "$out" >"$WORK/snap.json"
expect_in "snapshot: the podman container is in it" "$out" "$TASK_NAME"
expect_not_in "snapshot: not the suite's non-Nomad label" "$out" '"gpuledger-test"'
expect_not_in "snapshot: no environment value but NVIDIA_VISIBLE_DEVICES" "$out" "PATH="
gl "$PODMAN" check --json --replay "$WORK/snap.json"
same_json "--replay gives the live findings" "$out" "$check_json"

# Nomad does not return the allocation (the token cannot read-job "media"):
# the task stays nomad, Nomad's silence is said, never unreserved-tenant.
MY_TOKEN=$DEFAULT_TOKEN gl "$PODMAN" check --json
expect_rc "alloc not returned: check --json exits 0" 0
expect_lua "alloc not returned: source-unavailable on gpu0 naming read-job and the alloc" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then local m = f.message return f.gpu == "gpu0 GPU-e0e0e0e0" and f.level == "ERROR" and m:find("allocation 9eab414d", 1, true) ~= nil and m:find("container '"$TASK_NAME"'", 1, true) ~= nil and m:find("read-job on namespace its namespace", 1, true) ~= nil end end return false'
expect_lua "alloc not returned: never unreserved-tenant, not held" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "unreserved-tenant" or f.code == "held" then return false end end return true'
MY_TOKEN=$DEFAULT_TOKEN gl "$PODMAN" ls --json
expect_lua "alloc not returned: still nomad, allocFromName, not visible, not reserved" "$out" \
    'local t = j.entries[1].tenants[1] return t.kind == "nomad" and t.allocFromName == true and t.allocVisible == false and t.reserved == false and j.entries[1].state == "unaccounted" and #j.entries[1].reservations == 0'

# Nomad unread (--no-nomad): no judgement on reservations, no error.
MY_TOKEN=$TOKEN gl "$PODMAN" check --json --no-nomad
expect_lua "--no-nomad: neither read-job nor unreserved-tenant for the podman task" "$out" \
    'for _, f in ipairs(j.findings) do if f.gpu == "gpu0 GPU-e0e0e0e0" or f.code == "source-unavailable" then return false end end return true'

# --no-docker asks neither engine: the process is a host process.
MY_TOKEN=$TOKEN gl "$PODMAN" ls --json --no-docker
expect_lua "--no-docker: podman not asked, the process is a host tenant" "$out" \
    'local t = j.entries[1].tenants[1] return j.sources.podman == "off" and j.sources.docker == "off" and t.kind == "host" and t.pids[1] == '"$pod_pid"

expect_not_in "no token in any output or error" "$(cat "$WORK/all-output")" "$TOKEN"
expect_not_in "no token in any output or error (default-only token)" "$(cat "$WORK/all-output")" "$DEFAULT_TOKEN"
expect_not_in "no sanitizer report in any run" "$(cat "$WORK/all-output")" "Sanitizer"
expect_not_in "no undefined behaviour reported in any run" "$(cat "$WORK/all-output")" "runtime error:"

# --- cleanup leaves nothing behind ----------------------------------------------------------
dir=$(readlink -m "$WORK/podman")
daemon_pids=()
for proc in /proc/[0-9]*; do
    case $(cat "$proc/comm" 2>/dev/null) in podman | conmon) ;; *) continue ;; esac
    tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "$dir/" && daemon_pids+=("${proc#/proc/}")
done
podman_down "$WORK/podman" 2>/dev/null
left=()
for pid in "${daemon_pids[@]}" "$pod_pid"; do
    ct_alive "$pid" && left+=("$pid ($(cat "/proc/$pid/comm" 2>/dev/null))")
done
expect_eq "podman_down: no podman service, conmon or container process left" "${left[*]}" ""
expect_eq "podman_down: no mount left under the test's directory" \
    "$(awk -v d="$dir" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)" ""

finish
