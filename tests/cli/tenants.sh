#!/usr/bin/env bash
# Who a GPU process belongs to when it is not a container: Nomad tasks of the
# exec, raw_exec, java and exec2 drivers in every cgroup form Nomad makes
# (docs/sources.md#proc; a custom cgroup_parent named by --cgroup-parent), systemd services, login
# sessions and bare processes, from the fixture tree testdata/proc (its
# README lists each form) and the user names of testdata/etc/passwd; a
# user's own scopes named like a Nomad task or a Nomad container, which are
# that user's; and never a process's arguments or environment, which that
# tree holds as bait.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$SRC/tests/lib/serve.sh"
URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID="" status="" headers="" body=""
out="" # what run leaves (with $err and $rc)

PROC=$TESTDATA/proc
mkdir "$WORK/no-rules"
U0=GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01 # Nomad tasks
U1=GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52 # host processes

smi_dir=$WORK/smi
fake_smi_gpus "$smi_dir" "$U0" "$U1"
cat >"$smi_dir/compute-apps.csv" <<EOF
$U0, 3131, 301, python3
$U0, 3232, 302, python3
$U0, 3333, 303, ffmpeg
$U0, 3434, 304, java
$U0, 3535, 305, python3
$U0, 3636, 306, blender
$U0, 3737, 307, ffmpeg
$U0, 3838, 308, ffmpeg
$U0, 1414, 309, python3
$U0, 1515, 310, python3
$U1, 2121, 401, ollama
$U1, 2222, 402, python3
$U1, 2323, 403, python3
$U1, 2424, 404, a.out
$U1, 6060, 405, python3
$U1, 6161, 406, python3
EOF
export FAKE_SMI_DIR=$smi_dir

ENGINES=(--no-nomad --podman off --docker "unix://$WORK/absent.sock")
proc_root=$PROC
gl() {
    run "$@" --nvidia-smi "$FAKES/nvidia-smi" --proc "$proc_root" --node tenants-node --rules "$WORK/no-rules" \
        --cgroup-parent /gpu-jobs.slice
}

# --- snapshot: each process's owner -----------------------------------------
gl snapshot "${ENGINES[@]}"
expect_rc "snapshot: exit 0" 0
snap=$out
expect_no_crash "snapshot"

# expect_owner PID WHAT LUA: the snapshot's record of PID (bound to p) makes LUA true.
expect_owner() {
    expect_lua "snapshot: pid $1 is $2" "$snap" "local p = j.sources.proc.pids['$1']; return p ~= nil and ($3)"
}
task() { printf "p.owner == 'nomad' and p.alloc_id == '%s' and p.task == '%s' and p.container_id == nil" "$1" "$2"; }
expect_owner 3131 "task worker (Nomad 1.7+, v2 share.slice)" "$(task 2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33 worker)"
expect_owner 3232 "task trainer (Nomad 1.7+, v2 reserve.slice)" "$(task 7c0e5a14-91b3-4f2d-a6e8-3d5b2c1f0e97 trainer)"
expect_owner 3333 "task encode (Nomad 1.3-1.6, v2)" "$(task e4a9d2b6-0c7f-4e31-8b5a-9f2c6d1e3a48 encode)"
expect_owner 3434 "task infer.v2 (custom cgroup_parent)" "$(task 51d3f8a2-6e0b-4c97-b2d4-8a1f5e3c7b06 infer.v2)"
expect_owner 3535 "task worker (Nomad 1.7+, v1 exec)" "$(task 9a6c2e8f-3b1d-4f70-85e9-c2d4a6b8e013 worker)"
expect_owner 3636 "task render (Nomad 1.7+, v1 raw_exec), not nomad.service" "$(task c3e1a7f5-2d9b-4806-9f3e-5b7d1c4a2e68 render)"
expect_owner 3737 "task transcode (Nomad 1.3-1.6, v1 reserved cpuset)" "$(task 0d8b4f62-a1e3-47c5-9d0f-6e2a8c4b1f39 transcode)"
expect_owner 3838 "a Nomad task whose cgroup names no allocation (Nomad 1.3-1.6, v1)" "p.owner == 'nomad' and p.alloc_id == '' and p.task == ''"
expect_owner 3434 "run by alice (uid 1000)" "p.uid == 1000 and p.user == 'alice'"
expect_owner 2121 "service ollama.service, user ollama (uid 998)" "p.owner == 'service' and p.unit == 'ollama.service' and p.uid == 998 and p.user == 'ollama'"
expect_owner 2222 "service jupyter@lab.service" "p.owner == 'service' and p.unit == 'jupyter@lab.service' and p.user == 'alice'"
expect_owner 2323 "bob's session (uid 1001), run as root" "p.owner == 'session' and p.session_uid == 1001 and p.session_user == 'bob' and p.uid == 0 and p.user == 'root'"
expect_owner 6060 "alice's session (uid 1000)" "p.owner == 'session' and p.session_uid == 1000 and p.session_user == 'alice' and p.uid == 1000"
expect_owner 2424 "a bare process of uid 4321, a uid passwd does not name" "p.owner == 'process' and p.uid == 4321 and p.user == nil"
expect_owner 6161 "a bare process of root" "p.owner == 'process' and p.uid == 0 and p.user == 'root'"
bobs_own="p.owner == 'session' and p.session_uid == 1001 and p.session_user == 'bob' and p.uid == 1001 and p.alloc_id == nil and p.container_id == nil"
expect_owner 1414 "bob's own scope named like task worker is bob's session, no Nomad task" "$bobs_own"
expect_owner 1515 "bob's own scope named like a Nomad container is bob's session, no container" "$bobs_own"
for secret in hunter2 ffffffff-ffff NOMAD_TOKEN --token; do
    expect_not_in "snapshot: nothing of a process's arguments or environment ($secret)" "$snap" "$secret"
done

# --- a custom cgroup_parent proves a task only where the operator names it -----
run snapshot "${ENGINES[@]}" --nvidia-smi "$FAKES/nvidia-smi" --proc "$PROC" --node tenants-node --rules "$WORK/no-rules"
expect_lua "without --cgroup-parent, /gpu-jobs.slice proves no task" "$out" \
    "local p = j.sources.proc.pids['3434']; return p.owner == 'process' and p.alloc_id == nil and p.uid == 1000"
for bad in relative.slice /user.slice/user-1001.slice "/a//b"; do
    run snapshot "${ENGINES[@]}" --nvidia-smi "$FAKES/nvidia-smi" --proc "$PROC" --cgroup-parent "$bad"
    expect_rc "--cgroup-parent $bad: a usage error" 2
    expect_in "--cgroup-parent $bad: says what is wrong" "$err" "--cgroup-parent \"$bad\""
done

# --- the passwd beside the proc root, and none ----------------------------------
cp -r "$PROC" "$WORK/proc"
proc_root=$WORK/proc
gl snapshot "${ENGINES[@]}"
expect_rc "no etc/passwd beside the proc root: exit 0" 0
expect_lua "no etc/passwd beside the proc root: uids without names" "$out" \
    "local p = j.sources.proc.pids['2121']; return p.uid == 998 and p.user == nil and p.unit == 'ollama.service'"
mkdir "$WORK/etc"
printf 'someone:x:998:998::/:/bin/sh\n' >"$WORK/etc/passwd"
proc_root=$WORK/proc/
gl snapshot "${ENGINES[@]}"
expect_lua "the etc/passwd beside --proc DIR/ names the uid" "$out" "j.sources.proc.pids['2121'].user == 'someone'"

# --- the ledger: Nomad tasks joined to their allocations ----------------------
# testdata/nomad/exec-node.json: worker, infer.v2, worker (v1) and render
# reserve gpu0; trainer and transcode reserve nothing; encode is in a
# namespace the token cannot read.
export EXEC_TOKEN=d4e8a1c7-5b2f-4e90-8a63-1f7c9b2d4e50
fake_nomad_up "$TESTDATA/nomad/exec-node.json"
proc_root=$PROC
NOMAD_FLAGS=(--nomad-addr "$NOMAD" --nomad-token-env EXEC_TOKEN --podman off --docker "unix://$WORK/absent.sock")
gl ls --json "${NOMAD_FLAGS[@]}"
expect_rc "ls --json with Nomad: exit 0" 0
ledger=$out
# expect_tenant GPU ALLOC WHAT LUA: the tenant of allocation ALLOC on GPU (bound to t) makes LUA true.
expect_tenant() {
    expect_lua "ls: on gpu$1, $3" "$ledger" \
        "for _, t in ipairs(j.entries[$1 + 1].tenants) do if t.allocId == '$2' then return $4 end end; return false"
}
expect_tenant 0 2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33 "train/worker (exec, v2) is a reserved Nomad tenant" \
    "t.kind == 'nomad' and t.taskName == 'worker' and t.jobName == 'train' and t.namespace == 'ml' and t.reserved == true and t.container == nil and #t.pids == 1 and t.pids[1] == 3131"
expect_tenant 0 51d3f8a2-6e0b-4c97-b2d4-8a1f5e3c7b06 "infer/infer.v2 (custom cgroup_parent) is reserved" \
    "t.kind == 'nomad' and t.taskName == 'infer.v2' and t.jobName == 'infer' and t.reserved == true"
expect_tenant 0 9a6c2e8f-3b1d-4f70-85e9-c2d4a6b8e013 "batch/worker (exec, v1) is reserved" "t.reserved == true"
expect_tenant 0 c3e1a7f5-2d9b-4806-9f3e-5b7d1c4a2e68 "render/render (raw_exec, v1) is reserved" "t.reserved == true and t.taskName == 'render'"
expect_tenant 0 7c0e5a14-91b3-4f2d-a6e8-3d5b2c1f0e97 "train/trainer, visible but reserving nothing, is not reserved" \
    "t.kind == 'nomad' and t.reserved == false and t.allocVisible == true"
expect_tenant 0 e4a9d2b6-0c7f-4e31-8b5a-9f2c6d1e3a48 "encode, hidden from the token, is not visible" \
    "t.kind == 'nomad' and t.taskName == 'encode' and t.reserved == false and t.allocVisible == false"
expect_lua "ls: gpu1's host processes are one tenant per service, user and process" "$ledger" \
    "local names = {}; for _, t in ipairs(j.entries[2].tenants) do names[#names + 1] = t.kind .. ':' .. (t.service or t.user or '') .. ':' .. string.format('%d', t.uid) end; table.sort(names); return table.concat(names, ' ') == 'host::4321 host:alice:1000 host:bob:1001 host:jupyter@lab.service:1000 host:ollama.service:998 host:root:0'"
expect_lua "ls: the service tenant" "$ledger" \
    "for _, t in ipairs(j.entries[2].tenants) do if t.service == 'ollama.service' then return t.kind == 'host' and t.owner == 'service' and cjson.encode(t.pids) == '[2121]' and t.usedMemoryMiB == 401 end end; return false"
expect_lua "ls: gpu0's scopes named by bob are bob's tenant, not train/worker's or a container's" "$ledger" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.owner == 'user' then return t.kind == 'host' and t.uid == 1001 and t.user == 'bob' and cjson.encode(t.pids) == '[1414,1515]' and t.allocId == nil and t.containerId == nil end end; return false"
expect_lua "ls: train/worker holds only its own pid" "$ledger" \
    "for _, t in ipairs(j.entries[1].tenants) do if t.allocId == '2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33' then return cjson.encode(t.pids) == '[3131]' end end; return false"
expect_lua "ls: alice's session holds pid 6060" "$ledger" \
    "for _, t in ipairs(j.entries[2].tenants) do if t.owner == 'user' and t.uid == 1000 then return t.user == 'alice' and cjson.encode(t.pids) == '[6060]' end end; return false"

gl check --json "${NOMAD_FLAGS[@]}"
findings=$out
# expect_finding NAME LUA: some finding (bound to f) makes LUA true.
expect_finding() {
    expect_lua "check: $1" "$findings" "for _, f in ipairs(j.findings) do if $2 then return true end end; return false"
}
expect_lua "check: on gpu0, one unmanaged-tenant, bob: none for a Nomad task" "$findings" \
    "local found = {}; for _, f in ipairs(j.findings) do if f.code == 'unmanaged-tenant' and f.gpu:find('^gpu0') then found[#found + 1] = f.message end end; return #found == 1 and found[1]:find('^user bob %(uid 1001%) ') ~= nil"
expect_finding "a task whose cgroup names no allocation cannot be judged: source-unavailable, ERROR" \
    "f.code == 'source-unavailable' and f.message:find('^a Nomad task running %[ffmpeg%] %(pids %[3838%]%) holds this GPU, but its cgroup does not name its allocation')"
expect_finding "train/trainer is an unreserved-tenant, BAD" \
    "f.code == 'unreserved-tenant' and f.level == 'BAD' and f.message:find('train/trainer (alloc 7c0e5a14', 1, true)"
expect_finding "transcode is an unreserved-tenant, BAD" \
    "f.code == 'unreserved-tenant' and f.message:find('transcode/transcode (alloc 0d8b4f62', 1, true)"
expect_finding "encode, hidden, is source-unavailable, ERROR, naming its task" \
    "f.code == 'source-unavailable' and f.level == 'ERROR' and f.message:find('allocation e4a9d2b6 of task encode', 1, true)"
expect_finding "the service is named as who to talk to" \
    "f.code == 'unmanaged-tenant' and f.message:find('^service ollama.service ')"
expect_finding "alice's session is named as who to talk to" \
    "f.code == 'unmanaged-tenant' and f.message:find('^user alice %(uid 1000%) ')"
expect_finding "a bare process is named with its uid" \
    "f.code == 'unmanaged-tenant' and f.message:find('^process a.out %(uid 4321%) ')"
expect_not_in "check: the token never shows" "$findings" "$EXEC_TOKEN"

# --- serve: /metrics of many host tenants and Nomad tasks --------------------------
gl snapshot "${NOMAD_FLAGS[@]}"
printf '%s\n' "$out" >"$WORK/node.json"
if command -v curl >/dev/null && start_serve tenants --replay "$WORK/node.json" --listen 127.0.0.1:0 --interval 1s --rules "$WORK/no-rules"; then
    http GET "$URL/metrics"
    expect_eq "/metrics: 200" "$status" 200
    metrics_text=$body
    expect_eq "/metrics: no two samples share a name and labels" \
        "$(grep -v '^#' <<<"$metrics_text" | sed 's/} .*/}/' | sort | uniq -d | head -3)" ""
    expect_in "/metrics: gpu0's unreserved tasks, by card" "$metrics_text" \
        "gpuledger_gpu_finding{node=\"tenants-node\",gpu=\"0\",uuid=\"$U0\",code=\"unreserved-tenant\",level=\"BAD\"} 2"
    expect_in "/metrics: gpu1's six unmanaged host tenants" "$metrics_text" \
        "gpuledger_gpu_finding{node=\"tenants-node\",gpu=\"1\",uuid=\"$U1\",code=\"unmanaged-tenant\",level=\"BAD\"} 6"
    expect_in "/metrics: the host tenants of gpu1 are one tenant series" "$metrics_text" \
        "gpuledger_tenant_memory_bytes{node=\"tenants-node\",gpu=\"1\",uuid=\"$U1\",kind=\"host\",container=\"\",container_id=\"\",nomad_job=\"\",task=\"\",alloc=\"\",namespace=\"\"} $(((401 + 402 + 403 + 404 + 405 + 406) * 1048576))"
    expect_in "/metrics: an exec task's series" "$metrics_text" \
        "gpuledger_tenant_reserved{node=\"tenants-node\",gpu=\"0\",uuid=\"$U0\",kind=\"nomad\",container=\"\",container_id=\"\",nomad_job=\"train\",task=\"worker\",alloc=\"2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33\",namespace=\"ml\"} 1"
    expect_in "/metrics: docker failed" "$metrics_text" 'gpuledger_source_up{node="tenants-node",source="docker"} 0'
    expect_in "/metrics: nomad read" "$metrics_text" 'gpuledger_source_up{node="tenants-node",source="nomad"} 1'
    for secret in alice ollama python3 2121 hunter2; do
        expect_not_in "/metrics: no user, unit, process or pid ($secret)" "$metrics_text" "$secret"
    done
    if command -v promtool >/dev/null; then
        lint=$(promtool check metrics <<<"$metrics_text" 2>&1)
        expect_eq "/metrics: promtool check metrics is clean" "$?:$lint" "0:"
    else
        skip "promtool check metrics" "promtool is not installed (Debian's prometheus package has it)"
    fi
    stop_serve TERM
    expect_eq "serve: exit 0" "$SERVE_RC" 0
else
    fail "serve --replay of the tenants node starts" "$(cat "$SERVE_LOG" 2>/dev/null)"
fi

finish
