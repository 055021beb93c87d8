#!/usr/bin/env bash
# gpuledger against the fake Nomad agent (docs/sources.md#nomad, bad input each with a
# test): which allocations reserve a GPU (nvidia
# gpu devices of running and pending allocations only), each Nomad error
# named (403 → the capability, 500 → the body, not JSON, a server-only
# agent), --nomad-node-id, Nomad unread (--no-nomad, Nomad down: no task
# judged on reservations), and TLS: CA file, CA directory, the NOMAD_* TLS
# variables, wrong CA, expired certificate, server name, client
# certificates, half a key pair. The token never appears in any output.
#
# The node (testdata/engine/nomad-node, testdata/nomad/nomad-node.json):
#   gpu0  reserved by train/worker (running)                   → reserved-idle
#   gpu1  named only by allocations that reserve nothing: an amd gpu, an
#         nvidia fpga, a complete allocation, and next to them one with
#         AllocatedResources null                             → free (idle)
#   gpu2  reserved by render/blender (pending, Vendor "NVIDIA") → reserved-idle
#   gpu3  held by container enc-77770000… (fake Docker engine, labels, no
#         process), whose allocation Nomad returns without any device
#                                                              → unreserved-tenant
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

BASE=$TESTDATA/nomad/nomad-node.json
NODE_ID=5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b
TOKEN=c1a5e7f0-2b4d-4c68-8e9a-0b1c2d3e4f50          # agent:read, node:read, read-job *
NO_AGENT_TOKEN=c1a5e7f0-0000-4000-8000-00000000a9e1 # no agent:read
NO_NODE_TOKEN=c1a5e7f0-0000-4000-8000-000000000de0  # no node:read
UNKNOWN_TOKEN=c1a5e7f0-0000-4000-8000-0000000bad00  # not in the config
G0=GPU-f0f0f0f0-0000-4000-8000-0000000000f0
G2=GPU-f2f2f2f2-2222-4222-8222-2222222222f2
mkdir "$WORK/no-rules"

# variant NAME JSON: writes $WORK/NAME.json, the base config with the
# top-level keys of JSON replaced.
variant() {
    python3 -c 'import json, sys
config = json.load(open(sys.argv[1]))
config.update(json.loads(sys.argv[2]))
json.dump(config, open(sys.argv[3], "w"))' "$BASE" "$2" "$WORK/$1.json"
}

# nomad_up CONFIG ARGS...: (re)starts the fake Nomad on CONFIG with ARGS
# (TLS), an empty request log in $WORK/nomad.log. Sets nomad_pid, nomad_port.
nomad_pid=""
nomad_up() {
    local config=$1
    shift
    nomad_down
    rm -f "$WORK/nomad.port"
    : >"$WORK/nomad.log"
    if ! fake_nomad_start "$config" --max-seconds 120 "$@"; then
        fail "fake Nomad starts ($config $*)" "$(tail -n 5 "$WORK/nomad.stderr")"
        finish
    fi
}
nomad_down() { [ -z "$nomad_pid" ] || stop_pid "$nomad_pid"; nomad_pid=""; }

# The fake Docker engine: the container of escape/enc.
if ! fake_engine_start engine --fixture "$TESTDATA/engine/nomad-task.json" --max-seconds 300; then
    fail "fake engine starts" "$(cat "$WORK/engine.stderr")"
    finish
fi

mkdir "$WORK/smi"
cp "$TESTDATA/engine/nomad-node/query-gpu.csv" "$WORK/smi/"

# gl ARGS...: runs gpuledger ARGS on this node (no Nomad address: give
# one). Every output is kept, to look for the tokens in at the end.
gl() {
    FAKE_SMI_DIR=$WORK/smi run "$@" --nvidia-smi "$FAKES/nvidia-smi" --node test-node --rules "$WORK/no-rules" \
        --docker "unix://$WORK/engine.sock" --podman off
    printf '%s\n%s\n' "$out" "$err" >>"$WORK/all-output"
}

# both ARGS...: `check --json ARGS` (leaving $out, $err, $rc) and then, in
# the same environment, `ls --json ARGS` (leaving $ls_out and $ls_rc).
ls_out="" ls_rc=""
both() {
    local check_out check_err check_rc
    gl check --json "$@"
    check_out=$out check_err=$err check_rc=$rc
    gl ls --json "$@"
    ls_out=$out ls_rc=$rc
    out=$check_out err=$check_err rc=$check_rc
}

# nomad_error NAME LUA-COND: the last `check --json` has exactly one
# source-unavailable, node-level, starting "nomad " and satisfying LUA-COND
# (over m, the message), and no task was judged on reservations (no
# unreserved-tenant, no read-job, no reserved-idle, no held). When `both`
# ran it, `ls --json` also kept the whole ledger: four GPUs, the task on
# gpu3, Nomad failed, no reservation.
nomad_error() {
    expect_rc "$1: check exits 0" 0
    expect_lua "$1: one source-unavailable from nomad" "$out" \
        'local n, m = 0, "" for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then n = n + 1 m = f.message if f.gpu then return false end end end
         if n ~= 1 or m:sub(1, 6) ~= "nomad " then return false end local said = ('"$2"') return said ~= nil and said ~= false'
    expect_lua "$1: no task judged on reservations" "$out" \
        'for _, f in ipairs(j.findings) do if f.code ~= "source-unavailable" and f.code ~= "idle" then return false end end return j.worst == "ERROR"'
    if [ -n "$ls_out" ]; then
        expect_eq "$1: ls --json exits 0" "$ls_rc" 0
        expect_lua "$1: ls --json keeps the ledger, Nomad failed" "$ls_out" \
            'if #j.entries ~= 4 or j.nomadRead ~= false or j.sources.nomad ~= "failed" or #j.errors ~= 1 or j.errors[1]:sub(1, 6) ~= "nomad " then return false end
             for _, e in ipairs(j.entries) do if #e.reservations ~= 0 then return false end end
             local t = j.entries[4].tenants[1] return t.kind == "nomad" and t.allocVisible == false and t.reserved == false and j.entries[4].state == "unaccounted"'
    fi
    ls_out=""
}

# tls_error NAME: the last check --json failed on TLS: one source-unavailable
# from nomad whose message says TLS or certificate.
tls_error() {
    nomad_error "$1" 'm:lower():find("tls", 1, true) or m:lower():find("certificate", 1, true)'
}

# nomad_ok NAME: the last check --json read Nomad: no source-unavailable, the
# reservations judged (reserved-idle on gpu0); when `both` ran it, ls --json
# says Nomad was read.
nomad_ok() {
    expect_rc "$1: check exits 0" 0
    expect_lua "$1: Nomad read, no error" "$out" \
        'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end
         for _, f in ipairs(j.findings) do if f.code == "reserved-idle" and f.gpu == "gpu0 GPU-f0f0f0f0" then return true end end return false'
    if [ -n "$ls_out" ]; then
        expect_lua "$1: ls --json: Nomad read" "$ls_out" \
            'j.nomadRead == true and j.sources.nomad == "read" and j.errors == nil and #j.entries[1].reservations == 1'
    fi
    ls_out=""
}

# --- the reservations ---------------------------------------------------------------
nomad_up "$BASE"
NOMAD=http://127.0.0.1:$nomad_port
MY_TOKEN=$TOKEN gl ls --json --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
expect_rc "ls --json: exit 0" 0
json=$out
expect_lua "ls --json: Nomad read, no errors" "$json" 'j.nomadRead == true and j.errors == nil and j.sources.nomad == "read"'
expect_lua "gpu0: one reservation, train/worker (the task with the device, not its sidecar)" "$json" \
    'local r = j.entries[1].reservations return #r == 1 and r[1].allocId == "11110000-0000-4000-8000-000000000001" and r[1].jobId == "train" and r[1].taskGroup == "trainer" and r[1].task == "worker" and r[1].namespace == "default" and r[1].clientStatus == "running" and cjson.encode(r[1].deviceIds) == "[\"'"$G0"'\"]"'
expect_lua "gpu0: reserved-idle" "$json" 'j.entries[1].state == "reserved-idle" and #j.entries[1].tenants == 0'
expect_lua "gpu1: amd, fpga, complete, AllocatedResources null: no reservation, free" "$json" \
    '#j.entries[2].reservations == 0 and j.entries[2].state == "free"'
expect_lua "gpu2: pending, Vendor NVIDIA (any case): reserved, namespace kept empty" "$json" \
    'local r = j.entries[3].reservations return #r == 1 and r[1].jobId == "render" and r[1].task == "blender" and r[1].clientStatus == "pending" and r[1].namespace == "" and cjson.encode(r[1].deviceIds) == "[\"'"$G2"'\"]" and j.entries[3].state == "reserved-idle"'
expect_lua "gpu3: the escaped task, nomad, visible, not reserved" "$json" \
    'local t = j.entries[4].tenants[1] return #j.entries[4].reservations == 0 and t.kind == "nomad" and t.allocVisible == true and t.reserved == false and t.jobName == "escape" and #t.pids == 0 and j.entries[4].state == "unaccounted"'
expect_not_in "ls --json: null never stands for an empty list" "$json" "null"

MY_TOKEN=$TOKEN gl check --json --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
expect_rc "check --json: exit 0" 0
expect_lua "check: reserved-idle gpu0 and gpu2, idle gpu1, unreserved-tenant gpu3, nothing else" "$out" \
    'local codes = {} for _, f in ipairs(j.findings) do codes[#codes + 1] = f.code .. "@" .. (f.gpu or "node") end table.sort(codes)
     return table.concat(codes, " ") == "idle@gpu1 GPU-f1f1f1f1 reserved-idle@gpu0 GPU-f0f0f0f0 reserved-idle@gpu2 GPU-f2f2f2f2 unreserved-tenant@gpu3 GPU-f3f3f3f3"'
expect_lua "check: the unreserved-tenant message" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "unreserved-tenant" then return f.message == "Nomad task escape/enc (alloc 77770000, container enc-77770000-0000-4000-8000-000000000007) uses this GPU but was not allocated it — check NVIDIA_VISIBLE_DEVICES and the job'"'"'s device stanza" end end return false'
log=$(cat "$WORK/nomad.log")
expect_in "log: agent/self asked" "$log" '"path": "/v1/agent/self"'
expect_in "log: this node's allocations asked" "$log" "\"path\": \"/v1/node/$NODE_ID/allocations\""
expect_not_in "log: the token only ever in X-Nomad-Token" "$log" '"x_nomad_token_is_expected": false'
expect_not_in "log: never an Authorization header" "$log" '"authorization_present": true'
expect_not_in "log: never the token in the request line" "$log" '"expected_token_in_target": true'

# NOMAD_ADDR fills --nomad-addr; NOMAD_TOKEN is the default variable.
NOMAD_ADDR=$NOMAD NOMAD_TOKEN=$TOKEN gl check --json
nomad_ok "NOMAD_ADDR and NOMAD_TOKEN by default"
NOMAD_ADDR=http://127.0.0.1:1 NOMAD_TOKEN=$TOKEN gl check --json --nomad-addr "$NOMAD/"
nomad_ok "--nomad-addr (trailing /) beats NOMAD_ADDR"

# --- --nomad-node-id skips /v1/agent/self --------------------------------------------
: >"$WORK/nomad.log"
MY_TOKEN=$TOKEN gl check --json --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN --nomad-node-id "$NODE_ID"
nomad_ok "--nomad-node-id"
log=$(cat "$WORK/nomad.log")
expect_not_in "--nomad-node-id: agent/self never asked" "$log" "/v1/agent/self"
expect_in "--nomad-node-id: the allocations of that node asked" "$log" "/v1/node/$NODE_ID/allocations"
# With it, a token without agent:read is enough.
MY_TOKEN=$NO_AGENT_TOKEN gl check --json --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN --nomad-node-id "$NODE_ID"
nomad_ok "--nomad-node-id with a token lacking agent:read"

# --- 403s name the capability ----------------------------------------------------------
MY_TOKEN=$NO_AGENT_TOKEN both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 on agent/self" \
    'm:find("/v1/agent/self", 1, true) and m:find("403", 1, true) and m:find("agent:read", 1, true) and m:find("'"$NOMAD"'", 1, true)'
MY_TOKEN=$UNKNOWN_TOKEN both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 for an unknown token" 'm:find("403", 1, true) and m:find("agent:read", 1, true)'
: >"$WORK/nomad.log"
both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 without a token (variable unset)" \
    'm:find("agent:read", 1, true) and m:sub(-44) == " (sent without a token: MY_TOKEN is not set)"'
expect_not_in "variable unset: no X-Nomad-Token header" "$(cat "$WORK/nomad.log")" '"x_nomad_token_present": true'
: >"$WORK/nomad.log"
MY_TOKEN="" both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 without a token (variable empty)" \
    'm:find("agent:read", 1, true) and m:find("(sent without a token: MY_TOKEN is not set)", 1, true)'
expect_not_in "variable empty: no X-Nomad-Token header" "$(cat "$WORK/nomad.log")" '"x_nomad_token_present": true'
both --nomad-addr "$NOMAD"
nomad_error "403 without a token (NOMAD_TOKEN, the default, unset)" \
    'm:find("agent:read", 1, true) and m:find("(sent without a token: NOMAD_TOKEN is not set)", 1, true)'
MY_TOKEN=$UNKNOWN_TOKEN both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 for a token that was sent: no note" 'm:find("agent:read", 1, true) and not m:find("sent without", 1, true)'
MY_TOKEN=$NO_NODE_TOKEN both --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
nomad_error "403 on allocations" \
    'm:find("/v1/node/'"$NODE_ID"'/allocations", 1, true) and m:find("403", 1, true) and m:find("node:read", 1, true)'
MY_TOKEN=$NO_NODE_TOKEN gl ls --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
expect_rc "403 on allocations: ls exits 0" 0
expect_in "403 on allocations: ls says node:read on stderr" "$err" "node:read"
expect_in "403 on allocations: ls shows the GPUs" "$out" "4 GPU(s)"
expect_in "403 on allocations: ls shows the task, unjudged" "$out" "nomad:escape/enc (0 MiB)"

# A JSON null among the allocations (the fake's fault answers this body) is
# named, and the allocations after it still reserve their GPUs (render's
# pending one reserves gpu2).
python3 - "$BASE" >"$WORK/null-alloc.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
listed = config["allocations"][:1] + [None] + config["allocations"][1:]
config["faults"] = {"allocations": {"status": 200, "content_type": "application/json", "body": json.dumps(listed)}}
print(json.dumps(config))
PY
nomad_up "$WORK/null-alloc.json"
MY_TOKEN=$TOKEN gl ls --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
expect_rc "a null allocation: ls exits 0" 0
expect_lua "a null allocation: the one after it still reserves gpu2" "$out" \
    'return j.entries[3].reservations[1].jobId == "render" and j.entries[3].state == "reserved-idle" and j.entries[1].reservations[1].jobId == "train"'
expect_lua "a null allocation: one error naming Nomad, its address and the null" "$out" \
    'return #j.errors == 1 and j.errors[1] == "nomad http://127.0.0.1:'"$nomad_port"': unexpected answer: allocations[2] is null, want an object"'

# An object where the allocations' list belongs is Nomad's error, naming its address.
python3 - "$BASE" >"$WORK/object-allocs.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
keyed = {a["ID"]: a for a in config["allocations"]}
config["faults"] = {"allocations": {"status": 200, "content_type": "application/json", "body": json.dumps(keyed)}}
print(json.dumps(config))
PY
nomad_up "$WORK/object-allocs.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "allocations as an object" \
    'm == "nomad http://127.0.0.1:'"$nomad_port"': GET /v1/node/'"$NODE_ID"'/allocations: unexpected answer: the answer is an object, want a list"'

# JSON of another type where an object or a list belongs (false, a number, a
# list, a string) is Nomad's error naming the request and the type, never a
# Lua error or "does not say why".
wrong_type() { # NAME FAULT_ENDPOINT BODY
    variant "$1" '{"faults": {"'"$2"'": {"status": 200, "content_type": "application/json", "body": "'"$3"'"}}}'
    nomad_up "$WORK/$1.json"
}
for case in 'false|a boolean' '5|a number' '[]|a list' '\"up\"|a string'; do
    body=${case%%|*} what=${case#*|}
    wrong_type self-wrong agent_self "$body"
    MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
    nomad_error "agent/self answering $what" \
        'm == "nomad http://127.0.0.1:'"$nomad_port"': GET /v1/agent/self: unexpected answer: the answer is '"$what"', want an object"'
done
wrong_type allocs-false allocations false
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "allocations answering false" \
    'm == "nomad http://127.0.0.1:'"$nomad_port"': GET /v1/node/'"$NODE_ID"'/allocations: unexpected answer: the answer is a boolean, want a list"'
wrong_type node-false node false
MY_TOKEN=$TOKEN gl ls --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
expect_rc "the node answering false: ls exits 0" 0
expect_lua "the node answering false: nomad_devices failed, naming the request and the type" "$out" \
    'return j.sources.nomad_devices == "failed" and j.sources.nomad == "read" and #j.errors == 1 and j.errors[1] == "nomad http://127.0.0.1:'"$nomad_port"': GET /v1/node/'"$NODE_ID"': unexpected answer: the answer is a boolean, want an object"'

# Asked without a token (its variable unset), Nomad's anonymous policy hides
# the escaped task's allocation: the finding says the variable is not set.
variant anonymous-reads '{"anonymous": {"agent:read": true, "node:read": true, "read_job": ["ml"]}}'
nomad_up "$WORK/anonymous-reads.json"
gl check --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env UNSET_NOMAD_TOKEN
expect_rc "a hidden allocation, no token: check exits 0" 0
expect_lua "a hidden allocation, no token: the finding names the unset variable" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.gpu then return f.message:find("it was asked without a token (UNSET_NOMAD_TOKEN is not set); one needs read-job on namespace \"default\"", 1, true) ~= nil end end return false'
gl ls --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env UNSET_NOMAD_TOKEN
expect_lua "a hidden allocation, no token: the ledger says which variable was not set" "$out" \
    'return j.nomadRead == true and j.nomadTokenUnset == "UNSET_NOMAD_TOKEN" and j.entries[4].tenants[1].allocVisible == false'
MY_TOKEN=$TOKEN gl ls --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
expect_lua "with a token: no nomadTokenUnset" "$out" 'return j.nomadRead == true and j.nomadTokenUnset == nil'

variant acl-not-found '{"unknown_token_body": "ACL token not found"}'
nomad_up "$WORK/acl-not-found.json"
MY_TOKEN=$UNKNOWN_TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "403 ACL token not found: the status and its reason, never the body" \
    'm:find("HTTP 403 (Forbidden)", 1, true) and not m:find("ACL token", 1, true) and m:find("agent:read", 1, true)'

# A server that echoes the token in its errors, in every form it might: after a
# 403 its body is never printed, so neither is any form of it, the token cut
# in two anywhere included; in another error it is, with every form
# expect_no_token looks for masked.
ECHO_ALL='{token} {token_upper} {token_url} {token_json} {token_b64} {token_half1} and {token_half2}'
variant acl-echo '{"unknown_token_body": "ACL token '"$ECHO_ALL"', {token_splits} not found"}'
nomad_up "$WORK/acl-echo.json"
MY_TOKEN=$UNKNOWN_TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "403 echoing the token" 'm:find("HTTP 403 (Forbidden)", 1, true) and not m:find("ACL token", 1, true)'
expect_no_token "403 echoing the token: check" "$UNKNOWN_TOKEN" "$out$err"
expect_no_token "403 echoing the token: ls --json" "$UNKNOWN_TOKEN" "$ls_out"
MY_TOKEN=$UNKNOWN_TOKEN gl ls --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
expect_no_token "403 echoing the token: ls's table and stderr" "$UNKNOWN_TOKEN" "$out$err"
# echoing_500 FILE TOKEN BODY: writes FILE, the base fake's config with TOKEN
# known as $TOKEN is and the allocations answering 500 with BODY (its
# {token…} forms echo the token the request carried).
echoing_500() {
    python3 - "$BASE" "$2" "$TOKEN" "$3" >"$1" <<'PY'
import json, sys
base, token, known, body = sys.argv[1:]
config = json.load(open(base))
config["tokens"][token] = config["tokens"][known]
config["faults"] = {"allocations": {"status": 500, "body": body}}
print(json.dumps(config))
PY
}
# A token with a slash and a quote, echoed JSON-escaped too, in a 500's body.
ODD_TOKEN='s3cr/et"-4c1d-9e2b-7a6f0e8d5c3b'
echoing_500 "$WORK/odd-echo.json" "$ODD_TOKEN" "No cluster leader for $ECHO_ALL"
nomad_up "$WORK/odd-echo.json"
MY_TOKEN=$ODD_TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "500 echoing the token in every form" \
    'm:find("HTTP 500 (No cluster leader for <redacted>", 1, true) and m:find(" and <redacted>)", 1, true)'
expect_no_token "500 echoing the token: check" "$ODD_TOKEN" "$out$err"
expect_not_in "500 echoing the token: check, JSON-escaped" "$out$err" 's3cr\\/et'
expect_no_token "500 echoing the token: ls --json" "$ODD_TOKEN" "$ls_out"
# A token with & < > in a 500's JSON message, echoed as Go, Python and a
# server that writes every character as \uXXXX escape it: the message is
# decoded after redaction, so each escaped form must be masked too.
HTML_TOKEN='pa&ss<w0rd>/"-4c1d-9e2b-7a6f0e8d'
echoing_500 "$WORK/html-echo.json" "$HTML_TOKEN" '{"message": "No cluster leader for {token_json_go} {token_json_ascii} {token_json_u}"}'
nomad_up "$WORK/html-echo.json"
MY_TOKEN=$HTML_TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "500 echoing the token in JSON \\u escapes" \
    'm:find("No cluster leader for <redacted> <redacted> <redacted>", 1, true)'
expect_no_token "500 echoing the token in \\u escapes: check" "$HTML_TOKEN" "$out$err"
expect_no_token "500 echoing the token in \\u escapes: ls --json" "$HTML_TOKEN" "$ls_out"
expect_not_in "500 echoing the token in \\u escapes: not decoded into the check" "$out$err" 'pa&ss<w0rd>'
expect_not_in "500 echoing the token in \\u escapes: not decoded into ls --json" "$ls_out" 'pa&ss<w0rd>'

# --- 500, not JSON, a server-only agent, a hang ---------------------------------------------
variant alloc-500 '{"faults": {"allocations": {"status": 500, "body": "No cluster leader"}}}'
nomad_up "$WORK/alloc-500.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "500 on allocations" 'm:find("HTTP 500", 1, true) and m:find("No cluster leader", 1, true) and m:find("allocations", 1, true)'

variant self-500 '{"faults": {"agent_self": {"status": 500, "body": "rpc error: failed to get conn: dial tcp 10.0.0.11:4647: i/o timeout"}}}'
nomad_up "$WORK/self-500.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "500 on agent/self" 'm:find("HTTP 500", 1, true) and m:find("rpc error: failed to get conn", 1, true)'

variant alloc-bad-json '{"faults": {"allocations": {"invalid_json": true}}}'
nomad_up "$WORK/alloc-bad-json.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "allocations not JSON" 'm:find("allocations", 1, true) and m:find("JSON", 1, true)'

variant self-text '{"faults": {"agent_self": {"status": 200, "body": "<html>proxy login</html>", "content_type": "text/html"}}}'
nomad_up "$WORK/self-text.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "agent/self answered HTML" 'm:find("agent/self", 1, true) and m:find("JSON", 1, true)'

variant server-only '{"role": "server"}'
nomad_up "$WORK/server-only.json"
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
nomad_error "server-only agent" 'm:find("not a client", 1, true) and m:find("127.0.0.1:'"$nomad_port"'", 1, true)'
expect_not_in "server-only agent: allocations never asked" "$(cat "$WORK/nomad.log")" "/allocations"

variant self-hang '{"faults": {"agent_self": {"hang_mid_body": true, "hang_seconds": 60}}}'
nomad_up "$WORK/self-hang.json"
start=$(date +%s%N)
MY_TOKEN=$TOKEN gl check --json --nomad-addr "http://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
nomad_error "agent/self hanging mid-answer" 'm:find("timed out", 1, true)'
if [ "$elapsed_ms" -lt 9000 ]; then pass "hanging: done within the 5 s timeout + margin (${elapsed_ms} ms)"; else fail "hanging: within 9 s" "took ${elapsed_ms} ms"; fi
nomad_down

# --- Nomad unread: no task judged on reservations ----------------------------------------
: >"$WORK/nomad.log"
MY_TOKEN=$TOKEN gl check --json --no-nomad --nomad-addr "$NOMAD" --nomad-token-env MY_TOKEN
expect_rc "--no-nomad: exit 0" 0
expect_lua "--no-nomad: no error, no unreserved-tenant, only idle GPUs" "$out" \
    'local codes = {} for _, f in ipairs(j.findings) do codes[#codes + 1] = f.code .. "@" .. (f.gpu or "node") end
     return table.concat(codes, " ") == "idle@gpu0 GPU-f0f0f0f0 idle@gpu1 GPU-f1f1f1f1 idle@gpu2 GPU-f2f2f2f2"'
MY_TOKEN=$TOKEN gl ls --json --no-nomad
expect_lua "--no-nomad: nomad off, nomadRead false, the task unjudged on gpu3" "$out" \
    'local t = j.entries[4].tenants[1] return j.sources.nomad == "off" and j.nomadRead == false and j.errors == nil and t.kind == "nomad" and t.reserved == false and t.allocVisible == false and j.entries[4].state == "unaccounted"'
expect_eq "--no-nomad: no request to Nomad" "$(cat "$WORK/nomad.log")" ""
# Nomad down: a port that refuses.
refusing_port 127.0.0.1
down_port=$REFUSING_PORT
MY_TOKEN=$TOKEN both --nomad-addr "http://127.0.0.1:$down_port" --nomad-token-env MY_TOKEN
nomad_error "Nomad down" 'm:find("http://127.0.0.1:'"$down_port"'", 1, true) and (m:find("refused", 1, true) or m:find("connect", 1, true))'
both --nomad-addr "http://127.0.0.1:$down_port"
nomad_error "Nomad down, NOMAD_TOKEN unset by default: no note, nothing was refused" \
    '(m:find("refused", 1, true) or m:find("connect", 1, true)) and not m:find("sent without", 1, true)'
both --nomad-addr "http://127.0.0.1:$down_port" --nomad-token-env MY_TOKEN
nomad_error "Nomad down, MY_TOKEN named and unset: noted" \
    '(m:find("refused", 1, true) or m:find("connect", 1, true)) and m:find("(sent without a token: MY_TOKEN is not set)", 1, true)'

# --- TLS --------------------------------------------------------------------------------------
CERTS=$WORK/certs
if ! sh "$FAKES/make_certs.sh" "$CERTS" 2>"$WORK/certs.err"; then
    fail "make_certs.sh" "$(cat "$WORK/certs.err")"
    finish
fi
mkdir "$WORK/ca-dir" "$WORK/no-ca-dir"
cp "$CERTS/ca.pem" "$WORK/ca-dir/ca.pem"
echo "not a certificate" >"$WORK/ca-dir/README.txt"
echo "not a certificate" >"$WORK/no-ca-dir/README.txt"

# tls ARGS...: check --json against the HTTPS fake with the token.
tls() { MY_TOKEN=$TOKEN both --nomad-addr "https://127.0.0.1:$nomad_port" --nomad-token-env MY_TOKEN "$@"; }

nomad_up "$BASE" --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key"
tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_ok "HTTPS, --nomad-ca-cert"
tls --nomad-ca-path "$WORK/ca-dir"
nomad_ok "HTTPS, --nomad-ca-path (ca.pem and an unrelated file)"
NOMAD_CACERT=$CERTS/ca.pem tls
nomad_ok "HTTPS, NOMAD_CACERT"
NOMAD_CAPATH=$WORK/ca-dir tls
nomad_ok "HTTPS, NOMAD_CAPATH"
NOMAD_CACERT=$CERTS/wrong-ca.pem tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_ok "HTTPS, --nomad-ca-cert beats NOMAD_CACERT"
tls
tls_error "HTTPS, no CA (system roots)"
tls --nomad-ca-cert "$CERTS/wrong-ca.pem"
tls_error "HTTPS, wrong CA"
NOMAD_CACERT=$CERTS/ca.pem tls --nomad-ca-cert "$CERTS/wrong-ca.pem"
tls_error "HTTPS, a wrong --nomad-ca-cert beats a right NOMAD_CACERT"
# Configuration errors (TLS flags): named by the flag, and no request made.
: >"$WORK/nomad.log"
tls --nomad-ca-path "$WORK/no-ca-dir"
nomad_error "--nomad-ca-path without a .pem or .crt" \
    'm:find("--nomad-ca-path '"$WORK"'/no-ca-dir", 1, true) and m:find("no .pem or .crt file", 1, true)'
tls --nomad-ca-path "$WORK/absent-dir"
nomad_error "--nomad-ca-path missing" 'm:find("--nomad-ca-path '"$WORK"'/absent-dir", 1, true)'
tls --nomad-ca-cert "$WORK/ca-dir/README.txt"
nomad_error "--nomad-ca-cert not PEM" \
    'm:find("--nomad-ca-cert '"$WORK"'/ca-dir/README.txt", 1, true) and m:find("no PEM certificate", 1, true)'
expect_eq "CA configuration errors: no request made" "$(cat "$WORK/nomad.log")" ""
# Half a key pair, by flag or by variable: refused before any request.
: >"$WORK/nomad.log"
tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-client-cert "$CERTS/client.pem"
nomad_error "half a key pair (cert only)" 'm:find("--nomad-client-cert", 1, true) and m:find("--nomad-client-key", 1, true)'
tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-client-key "$CERTS/client.key"
nomad_error "half a key pair (key only)" 'm:find("--nomad-client-cert", 1, true) and m:find("--nomad-client-key", 1, true)'
NOMAD_CLIENT_KEY=$CERTS/client.key tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_error "half a key pair (NOMAD_CLIENT_KEY)" 'm:find("--nomad-client-cert", 1, true) and m:find("--nomad-client-key", 1, true)'
expect_eq "half a key pair: no request made" "$(cat "$WORK/nomad.log")" ""

nomad_up "$BASE" --tls-cert "$CERTS/wrong-server.pem" --tls-key "$CERTS/wrong-server.key"
tls --nomad-ca-cert "$CERTS/ca.pem"
tls_error "HTTPS, server certificate from another CA"

nomad_up "$BASE" --tls-cert "$CERTS/expired.pem" --tls-key "$CERTS/expired.key"
tls --nomad-ca-cert "$CERTS/ca.pem"
tls_error "HTTPS, expired certificate"

nomad_up "$BASE" --tls-cert "$CERTS/nomad.pem" --tls-key "$CERTS/nomad.key"
tls --nomad-ca-cert "$CERTS/ca.pem"
tls_error "HTTPS, server name mismatch (server.global.nomad at 127.0.0.1)"
tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-tls-server-name server.global.nomad
nomad_ok "HTTPS, --nomad-tls-server-name server.global.nomad"
NOMAD_TLS_SERVER_NAME=server.global.nomad tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_ok "HTTPS, NOMAD_TLS_SERVER_NAME kept when only --nomad-ca-cert is given"
NOMAD_TLS_SERVER_NAME=server.global.nomad NOMAD_CACERT=$CERTS/wrong-ca.pem tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_ok "HTTPS, NOMAD_TLS_SERVER_NAME kept, NOMAD_CACERT overridden"
NOMAD_TLS_SERVER_NAME=wrong.global.nomad tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-tls-server-name server.global.nomad
nomad_ok "HTTPS, --nomad-tls-server-name beats NOMAD_TLS_SERVER_NAME"

nomad_up "$BASE" --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key" --client-ca "$CERTS/ca.pem"
tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-client-cert "$CERTS/client.pem" --nomad-client-key "$CERTS/client.key"
nomad_ok "HTTPS, client certificate required and given"
NOMAD_CLIENT_CERT=$CERTS/client.pem NOMAD_CLIENT_KEY=$CERTS/client.key tls --nomad-ca-cert "$CERTS/ca.pem"
nomad_ok "HTTPS, client certificate from NOMAD_CLIENT_CERT/NOMAD_CLIENT_KEY"
tls --nomad-ca-cert "$CERTS/ca.pem"
tls_error "HTTPS, client certificate required and not given"
tls --nomad-ca-cert "$CERTS/ca.pem" --nomad-client-cert "$CERTS/client.pem" --nomad-client-key "$CERTS/server.key"
nomad_error "HTTPS, client key not the certificate's" \
    'm:find("'"$CERTS"'/server.key", 1, true) and m:lower():find("certificate", 1, true)'
nomad_down

# --- the tokens, nowhere -----------------------------------------------------------------
all=$(cat "$WORK/all-output")
for token in "$TOKEN" "$NO_AGENT_TOKEN" "$NO_NODE_TOKEN" "$UNKNOWN_TOKEN"; do
    expect_not_in "token ${token:0:8}… in no output or error" "$all" "$token"
done
expect_not_in "no sanitizer report in any run" "$(cat "$WORK/all-output")" "Sanitizer"
expect_not_in "no undefined behaviour reported in any run" "$(cat "$WORK/all-output")" "runtime error:"

finish
