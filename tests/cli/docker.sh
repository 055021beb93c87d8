#!/usr/bin/env bash
# gpuledger against a real dockerd and the fake Nomad (docs/sources.md#docker-and-podman,
# docs/contract.md#the-join). Real containers run busybox `sleep`; the fake
# nvidia-smi reports the real host pids of their processes and of one host
# process, so the whole chain (real pid → real /proc/<pid>/cgroup → real
# Engine API answer → Nomad allocation) is exercised.
#
# Six GPUs, each with one story:
#   gpu0  Nomad task train/worker (labels), reserved on gpu0     → held
#   gpu1  plain container gpu1-holder, NVIDIA_VISIBLE_DEVICES=gpu1,
#         no process on the GPU                                  → unmanaged-tenant, pids []
#   gpu2  reservation of batch/render, nothing running           → reserved-idle
#   gpu3  container by-hand (2 processes) + a host process +
#         Nomad task encode/enc reserved on gpu4                 → unmanaged ×2,
#                                                                  unreserved-tenant, contended
#   gpu4  encode/enc's reservation, nothing on it                → reserved-idle
#   gpu5  Nomad task hidden/miner in namespace "secret" that the
#         token cannot read-job                                  → source-unavailable read-job
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/containers.sh
. "$SRC/tests/lib/containers.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

SECRET_ENV=env-secret-93c1d    # an environment value that must never be read
SECRET_LABEL=label-secret-5f0a # a non-Nomad label value that must never be kept
mkdir "$WORK/no-rules"
expect_lua_shown=2000 # a failing expect_lua shows more of the six-GPU documents

# --- the fake Nomad: TOKEN, G0…G5, ALLOC_A, ALLOC_B, ALLOC_H ------------------------
docker_node_nomad

# --- the real dockerd and its containers --------------------------------------------
engine_up_or_skip docker "$WORK/docker"

# worker-… carries the token in its environment, as a task with a workload
# identity does: gpuledger must read no environment value but
# NVIDIA_VISIBLE_DEVICES, so it must never show.
started=1
docker_run_task "worker-$ALLOC_A" "com.hashicorp.nomad.alloc_id=$ALLOC_A" com.hashicorp.nomad.job_name=train \
    com.hashicorp.nomad.task_name=worker com.hashicorp.nomad.namespace=default \
    "--env=NVIDIA_VISIBLE_DEVICES=$G0" "--env=NOMAD_TOKEN=$TOKEN" -- sleep 600 >/dev/null || started=0
docker_run_task by-hand "app.owner=$SECRET_LABEL" "--env=API_KEY=$SECRET_ENV" \
    -- sh -c 'sleep 600 & exec sleep 601' >/dev/null || started=0
docker_run_task gpu1-holder "--env=NVIDIA_VISIBLE_DEVICES=$G1" -- sleep 600 >/dev/null || started=0
docker_run_task "enc-$ALLOC_B" "com.hashicorp.nomad.alloc_id=$ALLOC_B" com.hashicorp.nomad.job_name=encode \
    com.hashicorp.nomad.task_name=enc com.hashicorp.nomad.namespace=ml \
    "--env=NVIDIA_VISIBLE_DEVICES=$G3" -- sleep 600 >/dev/null || started=0
docker_run_task "miner-$ALLOC_H" "com.hashicorp.nomad.alloc_id=$ALLOC_H" com.hashicorp.nomad.job_name=hidden \
    com.hashicorp.nomad.task_name=miner com.hashicorp.nomad.namespace=secret \
    "--env=NVIDIA_VISIBLE_DEVICES=$G5" -- sleep 600 >/dev/null || started=0
if [ "$started" = 0 ]; then
    fail "the test containers start" "$(tail -n 5 "$WORK/docker/dockerd.log")"
    finish
fi
pid_a=$(container_pid "worker-$ALLOC_A")
pid_b=$(container_pid "enc-$ALLOC_B")
pid_h=$(container_pid "miner-$ALLOC_H")
# by-hand runs two processes: its init and the sleep it started (give the
# shell a moment to start it).
for _ in 1 2 3 4 5 6 7 8 9 10; do
    mapfile -t hand_pids < <(dk top by-hand -o pid | tail -n +2 | sort -n)
    [ "${#hand_pids[@]}" -ge 2 ] && break
    sleep 0.2
done
sleep 600 &
host_pid=$!
at_exit "stop_pid $host_pid"
expect_eq "by-hand runs two processes" "${#hand_pids[@]}" 2
for pid in "$pid_a" "$pid_b" "$pid_h" "${hand_pids[@]}"; do
    expect_in "pid $pid is in a docker cgroup" "$(cat "/proc/$pid/cgroup" 2>&1)" "docker"
done

# The fake nvidia-smi: six L4s, the processes above on their GPUs.
mkdir "$WORK/smi"
cp "$TESTDATA/engine/docker-node/query-gpu.csv" "$WORK/smi/"
cat >"$WORK/smi/compute-apps.csv" <<EOF
$G0, $pid_a, 2048, /usr/bin/python3 train.py --data /secret/dataset
$G3, ${hand_pids[0]}, 2048, ffmpeg -i /data/secret.mp4
$G3, ${hand_pids[1]}, 2048, ffmpeg -i /data/secret.mp4
$G3, $host_pid, 512, sleep
$G3, $pid_b, 1024, /opt/enc/encoder
$G5, $pid_h, 8192, xmrig
EOF

COMMON=(--nvidia-smi "$FAKES/nvidia-smi" --node test-node --rules "$WORK/no-rules" --docker "$DOCKER" --podman off
    --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN)
# gl ARGS...: runs gpuledger ARGS on this node; every output is kept to
# look for the token in at the end.
gl() {
    FAKE_SMI_DIR=$WORK/smi run "$@" "${COMMON[@]}"
    printf '%s\n%s\n' "$out" "$err" >>"$WORK/all-output"
}

# --- check --json: every finding on the right card ----------------------------------
: >"$WORK/nomad.log"
MY_TOKEN=$TOKEN gl check --json
expect_rc "check --json: exit 0" 0
expect_eq "check --json: nothing on stderr" "$err" ""
check_json=$out
expect_lua "check: worst ERROR" "$check_json" 'j.worst == "ERROR" and j.node == "test-node" and j.schema == 1'
expect_lua "check: no node-level error (every source read)" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.gpu == nil then return false end end return true'
# A Lua prelude: count(code, gpu) = how many findings with that code on that
# GPU label (gpu nil: node-level ones).
COUNT='local function count(code, gpu) local n = 0 for _, f in ipairs(j.findings) do if f.code == code and f.gpu == gpu then n = n + 1 end end return n end'
expect_lua "check: held on gpu0, OK" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "held" then return f.gpu == "gpu0 GPU-0c0ffee0" and f.level == "OK" and f.message == "1 tenant(s), all reserved by Nomad, 61% util" end end return false'
expect_lua "check: only gpu0 is held" "$check_json" \
    'local n = 0 for _, f in ipairs(j.findings) do if f.code == "held" then n = n + 1 end end return n == 1'
expect_lua "check: reserved-idle on gpu2 (batch/render)" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "reserved-idle" and f.gpu == "gpu2 GPU-2c0ffee2" then return f.level == "WARN" and f.message == "reserved by batch/render (alloc cccc0000) but no process or container holds it" end end return false'
expect_lua "check: reserved-idle on gpu4 (encode/enc, whose task escaped)" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "reserved-idle" and f.gpu == "gpu4 GPU-4c0ffee4" then return f.message == "reserved by encode/enc (alloc bbbb0000) but no process or container holds it" end end return false'
expect_lua "check: unreserved-tenant on gpu3 for encode/enc" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "unreserved-tenant" then return f.gpu == "gpu3 GPU-3c0ffee3" and f.level == "BAD" and f.message == "Nomad task encode/enc (alloc bbbb0000, container enc-'"$ALLOC_B"') uses this GPU but was not allocated it — check NVIDIA_VISIBLE_DEVICES and the job'"'"'s device stanza" end end return false'
expect_lua "check: exactly one unreserved-tenant" "$check_json" \
    'local n = 0 for _, f in ipairs(j.findings) do if f.code == "unreserved-tenant" then n = n + 1 end end return n == 1'
expect_lua "check: unmanaged-tenant on gpu3 for by-hand, both pids" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" and f.message:find("container by-hand", 1, true) then return f.gpu == "gpu3 GPU-3c0ffee3" and f.level == "BAD" and f.message == "container by-hand (gpuledger-test/busybox:1) holds this GPU outside Nomad — 4096 MiB, pids ['"${hand_pids[0]} ${hand_pids[1]}"']" end end return false'
# The host process is this test's own sleep: named by what /proc says of it
# (a bare process of this uid here; a login session or a service elsewhere).
expect_lua "check: unmanaged-tenant on gpu3 for the host process, named by who runs it" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" and f.message:find("pids ['"$host_pid"']", 1, true) then return f.gpu == "gpu3 GPU-3c0ffee3" and (f.message:find("^process sleep .*%(uid '"$(id -u)"'%) ") or f.message:find("^user ") or f.message:find("^service ")) ~= nil and f.message:find(" holds this GPU outside any container and Nomad — .*512 MiB, pids %['"$host_pid"'%]$") ~= nil end end return false'
expect_lua "check: unmanaged-tenant on gpu1 for gpu1-holder, no pids" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" and f.gpu == "gpu1 GPU-1c0ffee1" then return f.message == "container gpu1-holder (gpuledger-test/busybox:1) holds this GPU outside Nomad — 0 MiB, pids []" end end return false'
expect_lua "check: three unmanaged-tenant findings in all" "$check_json" \
    'local n = 0 for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" then n = n + 1 end end return n == 3'
expect_lua "check: contended on gpu3, 3 tenants by memory" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "contended" then return f.gpu == "gpu3 GPU-3c0ffee3" and f.level == "WARN" and f.message:find("^3 tenants share this GPU: %[by%-hand encode/enc process .+%]$") ~= nil end end return false'
expect_lua "check: source-unavailable on gpu5 names read-job, \"secret\" and the alloc" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return f.gpu == "gpu5 GPU-5c0ffee5" and f.level == "ERROR" and f.message == "Nomad did not return allocation dddd0000 of hidden/miner (container miner-'"$ALLOC_H"'): the token needs read-job on namespace \"secret\" — whether this GPU is reserved for it cannot be told" end end return false'
expect_lua "check: nothing judged unreserved on gpu5" "$check_json" "$COUNT return count('unreserved-tenant', 'gpu5 GPU-5c0ffee5') == 0"
expect_lua "check: nine findings, ERROR first, OK last" "$check_json" \
    '#j.findings == 9 and j.findings[1].level == "ERROR" and j.findings[9].code == "held"'
expect_lua "check: no idle (no GPU is free)" "$check_json" \
    'for _, f in ipairs(j.findings) do if f.code == "idle" then return false end end return true'

# The token went only in X-Nomad-Token, every time.
log=$(cat "$WORK/nomad.log")
expect_in "nomad log: agent/self was read" "$log" '"path": "/v1/agent/self"'
expect_in "nomad log: this node's allocations were read" "$log" '"path": "/v1/node/3f6c1a2b-8d4e-4f70-9a1b-2c3d4e5f6a7b/allocations"'
expect_not_in "nomad log: never without the token" "$log" '"x_nomad_token_is_expected": false'
expect_not_in "nomad log: never an Authorization header" "$log" '"authorization_present": true'
expect_not_in "nomad log: never the token in the request line" "$log" '"expected_token_in_target": true'

MY_TOKEN=$TOKEN gl check
expect_rc "check: exit 0" 0
expect_in "check: counts" "$out" "9 findings: 1 OK, 3 WARN, 4 BAD, 1 ERROR"
expect_in "check: read-job line" "$out" "read-job on namespace \"secret\""
MY_TOKEN=$TOKEN gl check --exit-on bad
expect_rc "check --exit-on bad: exit 3 (an ERROR)" 3

# --- ls: names, kinds, reserved, allocVisible ------------------------------------
MY_TOKEN=$TOKEN gl ls
expect_rc "ls: exit 0" 0
expect_in "ls: six GPUs" "$out" "gpuledger · test-node · 6 GPU(s) · "
expect_not_in "ls: no source error" "$out" "source error"
expect_in "ls: the Nomad task by job/task, reserved" "$out" "nomad:train/worker (2048 MiB)"
expect_not_in "ls: train/worker is not flagged" "$out" "nomad:train/worker (2048 MiB) !"
expect_in "ls: the hand-started container by name" "$out" "docker:by-hand (4096 MiB) !unmanaged"
expect_in "ls: the container without a process" "$out" "docker:gpu1-holder (0 MiB) !unmanaged"
expect_eq "ls: the host process" "$(grep -c ' (512 MiB) !unmanaged' <<<"$out")" 1
expect_in "ls: the escaped task" "$out" "nomad:encode/enc (1024 MiB) !unreserved"
expect_in "ls: the hidden task is marked as hidden, not unreserved" "$out" "nomad:hidden/miner (8192 MiB) ?alloc hidden from the token"
expect_in "ls: reserved by batch/render" "$out" "batch/render"
expect_in "ls: sources line" "$out" "sources: nvidia read · health read · mig off · kernel_log off · proc read · docker read · podman off · nomad read · nomad_devices read"
expect_not_in "ls: no process argument" "$out" "secret.mp4"
expect_not_in "ls: no process argument (2)" "$out" "/secret/dataset"

MY_TOKEN=$TOKEN gl ls --json
expect_rc "ls --json: exit 0" 0
ls_json=$out
expect_lua "ls --json: nomadRead, no errors, six entries" "$ls_json" 'j.nomadRead == true and j.errors == nil and #j.entries == 6'
expect_lua "ls --json: states per GPU" "$ls_json" \
    'local want = {"held", "unaccounted", "reserved-idle", "unaccounted", "reserved-idle", "unaccounted"} for i, e in ipairs(j.entries) do if e.state ~= want[i] then return false end end return true'
expect_lua "ls --json: gpu0 tenant is the Nomad task, reserved and visible" "$ls_json" \
    'local t = j.entries[1].tenants[1] return #j.entries[1].tenants == 1 and t.kind == "nomad" and t.reserved == true and t.allocVisible == true and t.allocId == "'"$ALLOC_A"'" and t.jobName == "train" and t.taskName == "worker" and t.namespace == "default" and t.container == "worker-'"$ALLOC_A"'" and t.image == "gpuledger-test/busybox:1" and t.allocFromName == nil'
expect_lua "ls --json: gpu0 tenant pid and process name" "$ls_json" \
    'local t = j.entries[1].tenants[1] return cjson.encode(t.pids) == "['"$pid_a"']" and cjson.encode(t.processes) == "[\"python3\"]" and t.usedMemoryMiB == 2048'
expect_lua "ls --json: gpu0 containerId is the first 12 of the real id" "$ls_json" \
    'j.entries[1].tenants[1].containerId == "'"$(dk inspect -f '{{.Id}}' "worker-$ALLOC_A" | cut -c1-12)"'"'
expect_lua "ls --json: gpu0 reservation of train/worker" "$ls_json" \
    'local r = j.entries[1].reservations[1] return #j.entries[1].reservations == 1 and r.allocId == "'"$ALLOC_A"'" and r.jobId == "train" and r.taskGroup == "trainer" and r.task == "worker" and r.namespace == "default" and r.clientStatus == "running" and cjson.encode(r.deviceIds) == "[\"'"$G0"'\"]"'
expect_lua "ls --json: gpu1 tenant has no process: pids [] and processes []" "$ls_json" \
    'local t = j.entries[2].tenants[1] return #j.entries[2].tenants == 1 and t.kind == "docker" and t.container == "gpu1-holder" and t.usedMemoryMiB == 0 and t.reserved == false and t.allocVisible == false'
expect_in "ls --json: an empty pids list is []" "$ls_json" '"pids":[]'
expect_lua "ls --json: gpu2 pending reservation, no tenant" "$ls_json" \
    'local e = j.entries[3] return #e.tenants == 0 and #e.reservations == 1 and e.reservations[1].clientStatus == "pending" and e.reservations[1].task == "render"'
expect_lua "ls --json: gpu3 tenants by memory: by-hand, enc, host" "$ls_json" \
    'local t = j.entries[4].tenants return #t == 3 and t[1].container == "by-hand" and t[2].container == "enc-'"$ALLOC_B"'" and t[3].kind == "host"'
expect_lua "ls --json: gpu3 by-hand is docker, two pids" "$ls_json" \
    'local t = j.entries[4].tenants[1] return t.kind == "docker" and cjson.encode(t.pids) == "['"${hand_pids[0]},${hand_pids[1]}"']" and cjson.encode(t.processes) == "[\"ffmpeg\",\"ffmpeg\"]" and t.allocId == nil and t.reserved == false'
expect_lua "ls --json: gpu3 encode/enc is nomad, visible, not reserved" "$ls_json" \
    'local t = j.entries[4].tenants[2] return t.kind == "nomad" and t.reserved == false and t.allocVisible == true and t.namespace == "ml" and cjson.encode(t.processes) == "[\"encoder\"]"'
expect_lua "ls --json: gpu3 host tenant" "$ls_json" \
    'local t = j.entries[4].tenants[3] return t.kind == "host" and cjson.encode(t.pids) == "['"$host_pid"']" and t.container == nil and t.containerId == nil'
expect_lua "ls --json: gpu3 has no reservation" "$ls_json" '#j.entries[4].reservations == 0'
expect_lua "ls --json: gpu4 reserved by encode/enc, no tenant" "$ls_json" \
    'local e = j.entries[5] return #e.tenants == 0 and #e.reservations == 1 and e.reservations[1].allocId == "'"$ALLOC_B"'"'
expect_lua "ls --json: gpu5 hidden task: nomad, not visible, not reserved" "$ls_json" \
    'local e = j.entries[6] local t = e.tenants[1] return #e.tenants == 1 and #e.reservations == 0 and t.kind == "nomad" and t.allocVisible == false and t.reserved == false and t.namespace == "secret"'
expect_lua "ls --json: sources all read, podman off" "$ls_json" \
    'local s = j.sources return s.nvidia == "read" and s.proc == "read" and s.docker == "read" and s.podman == "off" and s.nomad == "read"'
expect_not_in "ls --json: no process argument" "$ls_json" "secret.mp4"
expect_not_in "ls --json: no environment value" "$ls_json" "$SECRET_ENV"

# --- snapshot and --replay ---------------------------------------------------------
MY_TOKEN=$TOKEN gl snapshot
expect_rc "snapshot: exit 0" 0
snap=$out
printf '%s\n' "$snap" >"$WORK/snap.json"
expect_in "snapshot: keeps NVIDIA_VISIBLE_DEVICES" "$snap" "NVIDIA_VISIBLE_DEVICES=$G0"
expect_not_in "snapshot: no other environment value" "$snap" "$SECRET_ENV"
expect_not_in "snapshot: no other environment name" "$snap" "API_KEY"
expect_not_in "snapshot: no PATH from the image" "$snap" "PATH="
expect_not_in "snapshot: no NOMAD_TOKEN environment entry" "$snap" "NOMAD_TOKEN"
expect_not_in "snapshot: no non-Nomad label value" "$snap" "$SECRET_LABEL"
expect_not_in "snapshot: no non-Nomad label key" "$snap" "app.owner"
expect_not_in "snapshot: not the suite's own label" "$snap" '"gpuledger-test"'
expect_in "snapshot: keeps the Nomad labels" "$snap" "com.hashicorp.nomad.alloc_id"
expect_not_in "snapshot: no process argument" "$snap" "secret.mp4"
expect_not_in "snapshot: no job spec from Nomad" "$snap" "job-secret-0451"
expect_not_in "snapshot: no token" "$snap" "$TOKEN"
# An empty list is [] in our JSON, the snapshot's too (the
# Engine API sends arrays or null there, never objects).
empty_objects=$(grep -E -c '"(Env|DeviceRequests|DeviceIDs|containers|allocations)": *\{\}' "$WORK/snap.json")
expect_eq "snapshot: empty Env/DeviceRequests lists are [], not {}" "$empty_objects" 0

MY_TOKEN=$TOKEN gl check --json
live_json=$out
gl check --json --replay "$WORK/snap.json"
expect_rc "check --replay: exit 0" 0
same_json "check --replay gives the live findings" "$out" "$live_json"
same_json "check --replay gives the findings of the first check" "$out" "$check_json"
gl ls --json --replay "$WORK/snap.json"
same_json "ls --replay gives the live ledger" "$out" "$ls_json"

# --- no token, empty token ------------------------------------------------------
: >"$WORK/nomad.log"
gl check --json
expect_rc "unset token: exit 0" 0
expect_lua "unset token: a source-unavailable naming agent:read and 403" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.gpu == nil then return f.message:find("agent:read", 1, true) ~= nil and f.message:find("403", 1, true) ~= nil and f.message:find("MY_TOKEN", 1, true) ~= nil end end return false'
expect_lua "unset token: Nomad unread, so no read-job and no unreserved-tenant" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "unreserved-tenant" or (f.code == "source-unavailable" and f.gpu ~= nil) or f.code == "reserved-idle" or f.code == "held" then return false end end return true'
expect_lua "unset token: the rest of the ledger is there (unmanaged on gpu1 and gpu3)" "$out" \
    "$COUNT return count('unmanaged-tenant', 'gpu1 GPU-1c0ffee1') + count('unmanaged-tenant', 'gpu3 GPU-3c0ffee3') == 3"
log=$(cat "$WORK/nomad.log")
expect_in "unset token: agent/self was asked" "$log" '/v1/agent/self'
expect_not_in "unset token: no X-Nomad-Token header" "$log" '"x_nomad_token_present": true'
expect_not_in "unset token: no Authorization header" "$log" '"authorization_present": true'

: >"$WORK/nomad.log"
MY_TOKEN="" gl check --json
expect_lua "empty token: a source-unavailable naming agent:read" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.gpu == nil then return f.message:find("agent:read", 1, true) ~= nil end end return false'
log=$(cat "$WORK/nomad.log")
expect_in "empty token: agent/self was asked" "$log" '/v1/agent/self'
expect_not_in "empty token: no X-Nomad-Token header" "$log" '"x_nomad_token_present": true'
MY_TOKEN="" gl ls
expect_rc "empty token: ls exits 0" 0
expect_in "empty token: ls says so on stderr" "$err" "agent:read"
expect_in "empty token: ls still lists the containers" "$out" "docker:by-hand"

# --- the token, nowhere ------------------------------------------------------------
expect_not_in "token in no output or error of any run" "$(cat "$WORK/all-output")" "$TOKEN"
expect_not_in "token not in the snapshot file" "$(cat "$WORK/snap.json")" "$TOKEN"
expect_not_in "token not in the fake Nomad's log" "$(cat "$WORK/nomad.log")" "$TOKEN"
expect_not_in "no sanitizer report in any run" "$(cat "$WORK/all-output")" "Sanitizer"
expect_not_in "no undefined behaviour reported in any run" "$(cat "$WORK/all-output")" "runtime error:"

# --- cleanup leaves nothing behind --------------------------------------------------
dir=$(readlink -m "$WORK/docker")
daemon_pids=()
for proc in /proc/[0-9]*; do
    case $(cat "$proc/comm" 2>/dev/null) in dockerd | containerd | containerd-shim*) ;; *) continue ;; esac
    tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -qF -- "$dir/" && daemon_pids+=("${proc#/proc/}")
done
if [ "${#daemon_pids[@]}" -ge 2 ]; then
    pass "dockerd and its helpers run under $dir (${#daemon_pids[@]} processes)"
else
    fail "dockerd and its helpers run under $dir" "found: ${daemon_pids[*]}"
fi
docker_down "$WORK/docker" 2>/dev/null
left=()
for pid in "${daemon_pids[@]}" "$pid_a" "$pid_b" "$pid_h" "${hand_pids[@]}"; do
    ct_alive "$pid" && left+=("$pid ($(cat "/proc/$pid/comm" 2>/dev/null))")
done
expect_eq "docker_down: no dockerd, containerd, shim or container process left" "${left[*]}" ""
expect_eq "docker_down: no mount left under the test's directory" \
    "$(awk -v d="$dir" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)" ""
if [ -e "$dir" ]; then fail "docker_down removes $dir"; else pass "docker_down removes $dir"; fi

finish
