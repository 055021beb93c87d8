#!/usr/bin/env bash
# A node where every source misbehaves at once (each source has one
# deadline per refresh, docs/sources.md): nvidia-smi answers its main and process queries
# and hangs on the optional query (the health and thermal fields), Docker lists
# at once and drips every inspect a byte a second, and Nomad answers
# agent/self and hangs on the allocations. Each source has one deadline for everything it
# is asked (nvidia-smi 10 s; Docker's list and inspects 5 s, at once; Nomad's
# calls 5 s; Docker and Nomad at the same time), so `check` ends in about
# 15 s, names every source that did not answer with what it did not answer,
# and calls nobody unmanaged for want of an answer: the GPU of the process
# whose container could not be inspected gets a source-unavailable ERROR.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

G1=GPU-e1e1e1e1-1111-4111-8111-1111111111e1
LISTED=e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1
NODE_ID=5a8c0de1-0000-4000-8000-00000000e1e1
mkdir "$WORK/no-rules"

# nvidia-smi: two L4s, the test's own `sleep` on gpu1; the optional queries
# and the health query hang for a minute.
sleep 600 &
gpu_pid=$!
at_exit "stop_pid $gpu_pid"
mkdir "$WORK/smi"
cp "$TESTDATA/engine/small-node/query-gpu.csv" "$WORK/smi/"
echo "$G1, $gpu_pid, 4096, python3" >"$WORK/smi/compute-apps.csv"
for kind in tlimit clocks_event_reasons clocks_throttle_reasons health; do
    echo 60 >"$WORK/smi/$kind.sleep"
done

# /proc: the process is in the listed container whose inspect drips.
mkdir -p "$WORK/proc/$gpu_pid"
printf '0::/system.slice/docker-%s.scope\n' "$LISTED" >"$WORK/proc/$gpu_pid/cgroup"

if ! fake_engine_start engine --mode drip-inspects --fixture "$TESTDATA/engine/containers.json" --max-seconds 120; then
    fail "the dripping engine starts" "$(tail -n 5 "$WORK/engine.stderr")"
    finish
fi
cat >"$WORK/nomad.json" <<EOF
{"node_id": "$NODE_ID", "acl": false, "allocations": [],
 "faults": {"allocations": {"hang_seconds": 60}}}
EOF
fake_nomad_up "$WORK/nomad.json"

start=$(date +%s%N)
FAKE_SMI_DIR=$WORK/smi run check --json --nvidia-smi "$FAKES/nvidia-smi" --node slow-node --rules "$WORK/no-rules" \
    --docker "unix://$WORK/engine.sock" --podman off --nomad-addr "$NOMAD" --proc "$WORK/proc" --kernel-log off
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect_rc "check exits 0 (no --exit-on)" 0
if [ "$elapsed_ms" -ge 14000 ] && [ "$elapsed_ms" -lt 20000 ]; then # room for a loaded or sanitized run
    pass "check ends in about 15 s: nvidia-smi's 10 s, then Docker's and Nomad's 5 s together (${elapsed_ms} ms)"
else
    fail "check ends in about 15 s: nvidia-smi's 10 s, then Docker's and Nomad's 5 s together" "took ${elapsed_ms} ms"
fi

# source_error LUA-CONDITION: a node-level source-unavailable ERROR whose
# message m satisfies the condition.
source_error() {
    printf 'for _, f in ipairs(j.findings) do local m = f.message if f.code == "source-unavailable" and f.level == "ERROR" and f.gpu == nil and (%s) then return true end end return false' "$1"
}
expect_lua "nvidia-smi named: the health query that hung past the deadline" "$out" \
    "$(source_error 'm:find("^nvidia%-smi health: ") and m:find("its deadline passed", 1, true)')"
expect_lua "nvidia-smi named: the thermal margin, asked in the same optional query" "$out" \
    "$(source_error 'm:find("^nvidia%-smi tlimit: ") and m:find("its deadline passed", 1, true)')"
expect_lua "Docker named: the inspect that did not answer in time" "$out" \
    "$(source_error 'm:find("docker unix://'"$WORK"'/engine.sock: GET /containers/'"$LISTED"'/json: ", 1, true) == 1 and m:find("imeout", 1, true)')"
expect_lua "Nomad named: the allocations it did not answer" "$out" \
    "$(source_error 'm:find("nomad '"$NOMAD"': GET /v1/node/'"$NODE_ID"'/allocations: ", 1, true) == 1')"
expect_lua "nobody is called unmanaged for want of an answer" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" or f.code == "unreserved-tenant" then return false end end return true'
expect_lua "gpu1, held by the process in the container not inspected, has a source-unavailable ERROR" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.uuid == "'"$G1"'" and f.level == "ERROR" then return true end end return false'
expect_lua "worst ERROR; nothing else is said of gpu1, the GPU no finding could vouch for" "$out" \
    'for _, f in ipairs(j.findings) do if f.uuid == "'"$G1"'" and f.code ~= "source-unavailable" then return false end end return j.worst == "ERROR"'
expect_in "every inspect was asked (the engine's log)" "$(cat "$WORK/engine.log")" "/containers/$LISTED/json"
expect_not_in "no Lua error on stderr" "$err" "stack traceback"
expect_not_in "no sanitizer report" "$out$err" "Sanitizer"
expect_not_in "no undefined behaviour reported" "$out$err" "runtime error:"
finish
