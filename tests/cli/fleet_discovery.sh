#!/usr/bin/env bash
# fleet discovery (docs/contract.md#fleet): Consul's health API (passing
# instances only, the token in a header from the variable named, HTTPS with
# a client certificate, the Consul CLI's variables, CONSUL_HTTP_SSL), Nomad's
# service registrations (namespace, token, read-job), the precedence
# --targets > --nomad-service > --consul, and a discovery failure as one
# unreachable pseudo-node with a source-unavailable ERROR, never a failed
# command. Two real `gpuledger serve` processes are the nodes.
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"

command -v python3 >/dev/null || { skip "fleet discovery" "needs python3 for the fake Consul and Nomad"; finish; }
command -v openssl >/dev/null || { skip "fleet discovery" "needs openssl for the test certificates"; finish; }
mkdir "$WORK/rules"
export GPULEDGER_RULES=$WORK/rules
SECRET=consul-tok-5f3a9c41-SECRET
NOMAD_SECRET=c1a5e7f0-2b4d-4c68-8e9a-0b1c2d3e4f50
sh "$FAKES/make_certs.sh" "$WORK/certs" >"$WORK/certs.log" 2>&1 || { fail "make_certs.sh" "$(cat "$WORK/certs.log")"; finish; }

start_serve a --demo --node gpua --listen 127.0.0.1:0 --interval 1h || { fail "serve a starts" "$(cat "$SERVE_LOG")"; finish; }
PORT_A=${URL##*:}
start_serve b --replay "$TESTDATA/site-rules/snapshots/ci-node.json" --listen 127.0.0.1:0 --interval 1h ||
    { fail "serve b starts" "$(cat "$SERVE_LOG")"; finish; }
PORT_B=${URL##*:}
refusing_port 127.0.0.1
DEAD_PORT=$REFUSING_PORT

# A refused token is echoed back in the 403, in every form a server might.
cat >"$WORK/consul.json" <<EOF
{"token": "$SECRET",
 "refusal_body": "ACL not found: {token} {token_upper} {token_url} {token_json} {token_b64} {token_splits}",
 "instances": [
  {"node": "consul-a", "address": "127.0.0.1", "service_address": "", "port": $PORT_A, "status": "passing"},
  {"node": "consul-b", "address": "10.9.9.9", "service_address": "127.0.0.1", "port": $PORT_B, "status": "passing"},
  {"node": "consul-dead", "address": "127.0.0.1", "port": $DEAD_PORT, "status": "passing"},
  {"node": "consul-sick", "address": "127.0.0.1", "port": $PORT_A, "status": "critical"},
  {"node": "other", "service": "web", "address": "127.0.0.1", "port": $PORT_A}
 ]}
EOF

# consul_up NAME ARGS...: a fake Consul; sets CONSUL_PORT.
consul_up() {
    local name=$1
    shift
    if ! fake_start "$WORK/$name.stderr" "$WORK/$name.port" python3 "$FAKES/fake_consul.py" "$WORK/consul.json" \
        --port-file "$WORK/$name.port" --log "$WORK/$name.log" --max-seconds 300 "$@"; then
        fail "fake Consul $name starts" "$(cat "$WORK/$name.stderr")"
        finish
    fi
    CONSUL_PORT=$(cat "$WORK/$name.port")
}
consul_up plain
PLAIN=127.0.0.1:$CONSUL_PORT
consul_up tls --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server.key" --client-ca "$WORK/certs/ca.pem"
TLS=127.0.0.1:$CONSUL_PORT

no_secret() {
    expect_not_in "$1: the token is not printed" "$out$err" "$SECRET"
    expect_not_in "$1: the Nomad token is not printed" "$out$err" "$NOMAD_SECRET"
}

# ---- Consul -----------------------------------------------------------------
MY_CONSUL=$SECRET run fleet ls --consul "$PLAIN" --consul-token-env MY_CONSUL
expect_rc "fleet ls via Consul exits 0" 0
expect_in "passing instances only, one dead: 3 nodes, 1 unreachable" "$out" "gpuledger fleet · 3 node(s), 1 unreachable · 7 GPU(s)"
expect_in "the service address wins over the node's" "$out" "│ gpu-ci-02 "
expect_in "the dead instance is named by Consul's node name" "$out" "│ consul-dead │ ERROR │ 0   │ 1     │ -"
expect_not_in "a critical instance is left out" "$out" "consul-sick"
expect_in "the dead instance's error line names its address and the cause" "$out" \
    "consul-dead: unreachable: http://127.0.0.1:$DEAD_PORT/ledger: Couldn't connect"
no_secret "Consul"
log=$(cat "$WORK/plain.log")
expect_in "asks the health API for passing instances" "$log" '"path": "/v1/health/service/gpuledger", "query": ["passing"]'
expect_in "sends the token as X-Consul-Token" "$log" '"x_consul_token_is_expected": true'
expect_not_in "never in the URL" "$log" '"expected_token_in_target": true'

CONSUL_HTTP_ADDR=http://$PLAIN CONSUL_HTTP_TOKEN=$SECRET run fleet ls --json
expect_rc "CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN by default" 0
expect_lua "the Consul CLI's variables: 3 nodes" "$out" '#j.summary.nodes == 3'

REFUSED=wrong-tok-7e1b0d93-REFUSED
MY_CONSUL=$REFUSED run fleet check --json --consul "$PLAIN" --consul-token-env MY_CONSUL --exit-on error
expect_rc "a refused token: the check's worst is ERROR (exit 3), not a failed command" 3
expect_lua "a refused token: one pseudo-node consul with the 403" "$out" \
    'return #j.findings == 1 and j.findings[1].node == "consul" and j.findings[1].message:find("HTTP 403 (Forbidden)", 1, true) ~= nil and not j.findings[1].message:find("ACL not found", 1, true)'
expect_no_token "a refused token echoed in its 403" "$REFUSED" "$out$err"

run fleet ls --json --consul "$PLAIN" --consul-token-env NO_SUCH_VARIABLE
expect_lua "no token: Consul shows nothing, which is said, naming Consul's address and the unset variable" "$out" \
    'return j.summary.nodes[1].node == "consul" and j.summary.nodes[1].error == "consul http://'"$PLAIN"': no passing instance of service \"gpuledger\" (sent without a token: NO_SUCH_VARIABLE is not set)"'
NO_SUCH_VARIABLE="" run fleet ls --json --consul "$PLAIN" --consul-token-env NO_SUCH_VARIABLE
expect_lua "an empty token variable is said as an unset one" "$out" \
    'return j.summary.nodes[1].error:find("(sent without a token: NO_SUCH_VARIABLE is not set)", 1, true) ~= nil'
run fleet ls --json --consul "$PLAIN"
expect_lua "CONSUL_HTTP_TOKEN unset by default: no note where Consul refused nothing" "$out" \
    'return j.summary.nodes[1].error == "consul http://'"$PLAIN"': no passing instance of service \"gpuledger\""'
run fleet check --json --consul "$PLAIN" --consul-token-env CONSUL_HTTP_TOKEN --exit-on error
expect_lua "CONSUL_HTTP_TOKEN named by its flag: noted" "$out" \
    'return j.findings[1].message:find("(sent without a token: CONSUL_HTTP_TOKEN is not set)", 1, true) ~= nil'

run fleet ls --consul "127.0.0.1:$DEAD_PORT"
expect_rc "Consul down: fleet ls still exits 0" 0
expect_in "Consul down: one unreachable pseudo-node named consul" "$out" "│ consul │ ERROR │ 0   │ 1     │ -"
expect_in "Consul down: the error names consul and the cause" "$out" "consul http://127.0.0.1:$DEAD_PORT: GET /v1/health/service/gpuledger?passing=true: Couldn't connect"
expect_no_crash "Consul down"
run fleet check --consul "127.0.0.1:$DEAD_PORT"
expect_in "Consul down: the finding names Consul, its address and the cause, not a gpuledger" "$out" \
    "the fleet's nodes could not be listed: consul http://127.0.0.1:$DEAD_PORT: GET /v1/health/service/gpuledger?passing=true: Couldn't connect"
expect_not_in "Consul down: no \"gpuledger at\"" "$out" "gpuledger at"

# A Consul answering JSON of another type: said, not "no passing instance".
printf '{"Node": "gpu-a"}' >"$WORK/object.json"
if fake_file_start object "$WORK/object.json"; then
    OBJECT=127.0.0.1:$file_port
    run fleet ls --consul "$OBJECT"
    expect_in "a JSON object from Consul: the error names Consul, its address and the type" "$out" \
        "consul: unreachable: consul http://$OBJECT: unexpected answer: the answer is an object, want a list"
    expect_not_in "a JSON object from Consul is not \"no passing instance\"" "$out" "no passing instance"
else
    fail "fake Consul answering an object starts" "$(cat "$WORK/object.stderr")"
fi

# A bare false from Consul or from Nomad's service list: the type said, not
# a failure without a cause (the answer is JSON, and false).
printf 'false' >"$WORK/false.json"
if fake_file_start false "$WORK/false.json"; then
    FALSE=127.0.0.1:$file_port
    run fleet ls --consul "$FALSE"
    expect_in "false from Consul: the error names Consul, its address and the type" "$out" \
        "consul: unreachable: consul http://$FALSE: unexpected answer: the answer is a boolean, want a list"
    run fleet ls --json --nomad-service gpuledger --nomad-addr "http://$FALSE"
    expect_lua "false from Nomad's services: the error names Nomad, its address and the type" "$out" \
        'return j.summary.nodes[1].error == "nomad http://'"$FALSE"': unexpected answer: the answer is a boolean, want a list"'
else
    fail "fake Consul answering false starts" "$(cat "$WORK/false.stderr")"
fi

# HTTPS with a client certificate, flags and the Consul CLI's variables.
MY_CONSUL=$SECRET run fleet ls --json --consul "https://$TLS" --consul-token-env MY_CONSUL \
    --consul-ca-cert "$WORK/certs/ca.pem" --consul-client-cert "$WORK/certs/client.pem" --consul-client-key "$WORK/certs/client.key"
expect_lua "Consul over HTTPS with a client certificate" "$out" '#j.summary.nodes == 3'
no_secret "Consul over HTTPS"
CONSUL_HTTP_SSL=true CONSUL_CACERT=$WORK/certs/ca.pem CONSUL_CLIENT_CERT=$WORK/certs/client.pem \
    CONSUL_CLIENT_KEY=$WORK/certs/client.key CONSUL_HTTP_TOKEN=$SECRET run fleet ls --json --consul "$TLS"
expect_lua "CONSUL_HTTP_SSL=true makes a bare address https; CONSUL_CACERT and the client pair by default" "$out" '#j.summary.nodes == 3'
MY_CONSUL=$SECRET run fleet ls --json --consul "https://$TLS" --consul-token-env MY_CONSUL --consul-ca-cert "$WORK/certs/ca.pem"
expect_lua "HTTPS without the client certificate: a TLS error on the pseudo-node" "$out" \
    'local e = j.summary.nodes[1].error:lower() return j.summary.nodes[1].node == "consul" and (e:find("tls", 1, true) or e:find("certificate", 1, true)) ~= nil'
MY_CONSUL=$SECRET run fleet ls --json --consul "https://$TLS" --consul-token-env MY_CONSUL \
    --consul-ca-cert "$WORK/certs/wrong-ca.pem" --consul-client-cert "$WORK/certs/client.pem" --consul-client-key "$WORK/certs/client.key"
expect_lua "a server certificate from another CA is refused" "$out" \
    'return j.summary.nodes[1].node == "consul" and (j.summary.nodes[1].error:find("certificate", 1, true) ~= nil)'
run fleet ls --json --consul "https://$TLS" --consul-client-cert "$WORK/certs/client.pem"
expect_lua "half a client pair is refused before any request, naming the flags" "$out" \
    'return j.summary.nodes[1].error:find("--consul-client-cert and --consul-client-key go together", 1, true) ~= nil'

# ---- Nomad service discovery ------------------------------------------------
cat >"$WORK/nomad.json" <<EOF
{"node_id": "f7476465-4d6e-c0de-26d0-e383c49be941", "acl": true, "expected_token": "$NOMAD_SECRET",
 "tokens": {"$NOMAD_SECRET": {"agent:read": true, "node:read": true, "read_job": ["default", "gpu"]}},
 "anonymous": {},
 "services": [
  {"ID": "_nomad-task-1-ledger-gpuledger-http", "ServiceName": "gpuledger", "Namespace": "gpu",
   "NodeID": "n1", "Datacenter": "dc1", "JobID": "gpuledger", "AllocID": "1", "Tags": null,
   "Address": "127.0.0.1", "Port": $PORT_A, "CreateIndex": 14, "ModifyIndex": 24},
  {"ID": "_nomad-task-2-ledger-gpuledger-http", "ServiceName": "gpuledger", "Namespace": "gpu",
   "NodeID": "n2", "Datacenter": "dc1", "JobID": "gpuledger", "AllocID": "2", "Tags": ["metrics"],
   "Address": "127.0.0.1", "Port": $PORT_B, "CreateIndex": 14, "ModifyIndex": 24}
 ]}
EOF
fake_nomad_up "$WORK/nomad.json"
MY_NOMAD=$NOMAD_SECRET run fleet ls --nomad-service gpuledger --nomad-namespace gpu --nomad-addr "$NOMAD" --nomad-token-env MY_NOMAD
expect_rc "fleet ls via Nomad's service discovery exits 0" 0
expect_in "both registrations read" "$out" "gpuledger fleet · 2 node(s) · 7 GPU(s)"
no_secret "Nomad services"
expect_in "asks /v1/service/gpuledger with the namespace, the token in X-Nomad-Token" "$(cat "$WORK/nomad.log")" \
    '"path": "/v1/service/gpuledger", "query_keys": ["namespace"]'
MY_NOMAD=$NOMAD_SECRET run fleet ls --json --nomad-service gpuledger --nomad-addr "$NOMAD" --nomad-token-env MY_NOMAD
expect_lua "no registration in namespace default: said, as a pseudo-node nomad" "$out" \
    'return j.summary.nodes[1].node == "nomad" and j.summary.nodes[1].error == "nomad '"$NOMAD"': no registration of service \"gpuledger\" in namespace \"default\""'
run fleet check --json --nomad-service gpuledger --nomad-namespace gpu --nomad-addr "$NOMAD" --nomad-token-env NO_SUCH
expect_lua "no token: 403 naming read-job on the namespace" "$out" \
    'return j.worst == "ERROR" and j.findings[1].node == "nomad" and j.findings[1].message:find("read-job on namespace \"gpu\"", 1, true) ~= nil'

# ---- precedence ---------------------------------------------------------------
MY_NOMAD=$NOMAD_SECRET run fleet ls --json --targets "127.0.0.1:$PORT_A" --nomad-service gpuledger --nomad-namespace gpu \
    --nomad-addr "$NOMAD" --nomad-token-env MY_NOMAD --consul "127.0.0.1:$DEAD_PORT"
expect_lua "--targets wins over --nomad-service and --consul" "$out" '#j.summary.nodes == 1 and j.summary.nodes[1].node == "gpua"'
MY_NOMAD=$NOMAD_SECRET run fleet ls --json --nomad-service gpuledger --nomad-namespace gpu \
    --nomad-addr "$NOMAD" --nomad-token-env MY_NOMAD --consul "127.0.0.1:$DEAD_PORT"
expect_lua "--nomad-service wins over --consul" "$out" '#j.summary.nodes == 2 and j.summary.total.unreachable == nil'
finish
