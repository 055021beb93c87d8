#!/usr/bin/env bash
# The deploy files an operator runs. Each Nomad file (deploy/nomad/*.hcl) is
# parsed by HashiCorp's own HCL parser (npm's @cdktf/hcl2json: the Go HCL
# library built to WebAssembly, installed once into the build directory and
# run with the installed node) and checked for what its comments promise;
# the systemd unit passes `systemd-analyze verify` (with the man page it
# names) and carries its hardening; and every flag a job or the unit passes
# is given to the built binary, serving the demo node: it must start and
# answer /healthz (the fleet job's fleet serve finds one node agent through
# the fake Nomad's service registration). Exits 77 when the npm registry
# cannot be reached.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
unset GPULEDGER_RULES GPULEDGER_SCRIPTS NOMAD_ADDR NOMAD_TOKEN DOCKER_HOST
PARSER=@cdktf/hcl2json@0.21.0
NPM_DIR=${GPULEDGER_BUILD_DIR:-$WORK}/npm

if ! need_program node nodejs || ! need_program npm npm; then
    echo "skip: node and npm cannot be installed: $(tail -n 3 "$WORK/apt.log")"
    exit 77
fi
if [ ! -d "$NPM_DIR/node_modules/@cdktf/hcl2json" ]; then
    if ! timeout 300 npm install --prefix "$NPM_DIR" --no-audit --no-fund --no-save "$PARSER" >"$WORK/npm.log" 2>&1; then
        echo "skip: npm install $PARSER failed (no npm registry?): $(tail -n 3 "$WORK/npm.log")"
        exit 77
    fi
fi
echo "HCL parser: $PARSER (node $(node --version))"
export NODE_PATH=$NPM_DIR/node_modules
hcl() { node "$SRC/tests/install/hcl.js" "$@"; }

# --- the Nomad files parse, and say what their comments promise ----------------------------------
JOBS=$SRC/deploy/nomad
for file in "$JOBS"/*.hcl; do
    if json=$(hcl json "$file" 2>&1); then pass "$(basename "$file") parses"; else fail "$(basename "$file") parses" "$json"; fi
done
job=$(hcl json "$JOBS/gpuledger.nomad.hcl")
node_job_checks() {
    local name=$1 json=$2
    expect_lua "$name: system job gpuledger" "$json" 'return j.job.gpuledger[1].type == "system"'
    expect_lua "$name: checksum is a variable without a default" "$json" \
        'return j.variable.checksum ~= nil and j.variable.checksum[1].default == nil'
    expect_lua "$name: consul is a variable, true by default" "$json" 'return j.variable.consul[1].default == true'
    local group='local g = j.job.gpuledger[1].group.ledger[1] local t = g.task.gpuledger[1]'
    expect_lua "$name: sticky ephemeral disk" "$json" "$group return g.ephemeral_disk[1].sticky == true"
    expect_lua "$name: raw_exec" "$json" "$group return t.driver == 'raw_exec'"
    expect_lua "$name: the artifact is checked against var.checksum" "$json" \
        "$group return t.artifact[1].options[1].checksum == '\${var.checksum}' and t.artifact[1].source:find('linux-amd64', 1, true) ~= nil"
    expect_lua "$name: the Consul service with its /healthz check only when var.consul" "$json" \
        "$group local s = g.dynamic.service[1] return s.for_each:find('var.consul', 1, true) ~= nil and s.content[1].check[1].path == '/healthz'"
    expect_lua "$name: site rules as an artifact into local/rules.d" "$json" \
        "$group return t.dynamic.artifact[1].content[1].destination == 'local/rules.d'"
    expect_lua "$name: args --nomad-node-id \${node.unique.id}, the history in the alloc dir" "$json" \
        "$group local a = table.concat(t.config[1].args, ' ') return a:find('--nomad-node-id \${node.unique.id}', 1, true) ~= nil and a:find('--history \${NOMAD_ALLOC_DIR}/data/', 1, true) ~= nil"
}
node_job_checks gpuledger.nomad.hcl "$job"
wi=$(hcl json "$JOBS/gpuledger.wi.nomad.hcl")
node_job_checks gpuledger.wi.nomad.hcl "$wi"
expect_lua "gpuledger.wi.nomad.hcl: workload identity in env" "$wi" \
    'return j.job.gpuledger[1].group.ledger[1].task.gpuledger[1].identity[1].env == true'
fleet=$(hcl json "$JOBS/gpuledger-fleet.nomad.hcl")
expect_lua "gpuledger-fleet.nomad.hcl: one fleet task, port 9878 by default" "$fleet" \
    'return j.job["gpuledger-fleet"][1].group.fleet[1].count == 1 and j.variable.port[1].default == 9878'
expect_lua "gpuledger-fleet.nomad.hcl: discovery is a variable (--nomad-service gpuledger)" "$fleet" \
    'local d = j.variable.discovery[1].default return d[1] == "--nomad-service" and d[2] == "gpuledger"'
policy=$(hcl json "$JOBS/gpuledger.policy.hcl")
expect_lua "gpuledger.policy.hcl: agent read, node read, read-job in every namespace, nothing else" "$policy" \
    'local c = j.namespace["*"][1].capabilities
     return j.agent[1].policy == "read" and j.node[1].policy == "read" and #c == 1 and c[1] == "read-job"'

# --- every flag they pass, on the demo node ------------------------------------------------------
# serve_flags NAME ARGS...: gpuledger ARGS --demo, with serve's address made
# 127.0.0.1:0, must start serving and answer /healthz. A command this version
# does not have yet (fleet) must get past the flags: parsed, then refused as
# "not available in this version".
served=0
serve_flags() {
    local name=$1 args=() arg
    shift
    while [ $# -gt 0 ]; do
        arg=$1
        shift
        if [ "$arg" = --listen ]; then
            args+=(--listen 127.0.0.1:0)
            shift
        else
            args+=("$arg")
        fi
    done
    local command=${args[0]}
    [ "$command" = fleet ] && command="fleet ${args[1]}"
    echo "     gpuledger ${args[*]} --demo"
    served=$((served + 1))
    if start_serving "serve-$served" "${args[@]}" --demo; then
        http GET "$URL/healthz"
        expect_eq "$name: $command takes every flag and serves the demo node" "$status" 200
        stop_serve TERM
        return
    fi
    stop_serve TERM
    fail "$name: $command takes every flag and serves the demo node" "exit $SERVE_RC" "$(head -c 600 "$SERVE_LOG")"
}
mkdir -p "$WORK/alloc/data" "$WORK/local/rules.d"
# The fleet job finds the node agents through Nomad's service gpuledger: a
# fake Nomad (NOMAD_ADDR, as the job's env sets it) registers one node
# agent, a serve of the demo node.
if ! start_serve fleet-node --demo --listen 127.0.0.1:0; then
    fail "a node agent for the fleet job starts" "$(cat "$SERVE_LOG")"
    finish
fi
node_pid=$SERVE_PID node_port=${URL##*:}
cat >"$WORK/nomad.json" <<EOF
{"node_id": "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b", "acl": false, "services": [
 {"ServiceName": "gpuledger", "Namespace": "default", "NodeID": "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b",
  "AllocID": "9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3", "Address": "127.0.0.1", "Port": $node_port, "Tags": null}]}
EOF
fake_nomad_up "$WORK/nomad.json"
export NOMAD_ADDR=$NOMAD
for file in gpuledger.nomad.hcl gpuledger.wi.nomad.hcl gpuledger-fleet.nomad.hcl; do
    if mapfile -t args < <(node_unique_id=5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b node_unique_name=gpu-node-1 \
        NOMAD_ALLOC_DIR="$WORK/alloc" NOMAD_TASK_DIR="$WORK/local" hcl args "$JOBS/$file") && [ ${#args[@]} -gt 0 ]; then
        serve_flags "$file" "${args[@]}"
    else
        fail "$file: the task's args evaluate" "$(hcl args "$JOBS/$file" 2>&1 | tail -n 2)"
    fi
done
stop_pid "$node_pid"
unset NOMAD_ADDR

# --- the systemd unit ----------------------------------------------------------------------------
UNIT=$SRC/deploy/systemd/gpuledger.service
if need_program systemd-analyze systemd; then
    # verify looks for the binary and the man page the unit names: the build's.
    mkdir -p "$WORK/man/man1"
    cp "$GPULEDGER_BUILD_DIR/gpuledger.1.gz" "$WORK/man/man1/"
    sed "s|/usr/bin/gpuledger|$(realpath "$GPULEDGER")|" "$UNIT" >"$WORK/gpuledger.service"
    said=$(MANPATH=$WORK/man systemd-analyze verify "$WORK/gpuledger.service" 2>&1)
    expect_eq "gpuledger.service: systemd-analyze verify says nothing" "$said" ""
else
    skip "gpuledger.service: systemd-analyze verify" "systemd-analyze cannot be installed"
fi
unit=$(cat "$UNIT")
for setting in User=gpuledger NoNewPrivileges=yes ProtectSystem=strict ReadWritePaths=/var/lib/gpuledger \
    StateDirectory=gpuledger ProtectHome=yes PrivateTmp=yes CapabilityBoundingSet= EnvironmentFile=-/etc/default/gpuledger; do
    expect_in "gpuledger.service: $setting" "$unit" "
$setting
"
done
# ExecStart as systemd runs it: $GPULEDGER_OPTS from /etc/default/gpuledger,
# split at spaces; the paths moved under $WORK/fs.
exec_start=$(sed -n 's|^ExecStart=/usr/bin/gpuledger ||p' "$UNIT")
opts=$(
    # shellcheck source=../../deploy/systemd/gpuledger.default
    . "$SRC/deploy/systemd/gpuledger.default"
    echo "$GPULEDGER_OPTS"
)
mkdir -p "$WORK/fs/var/lib/gpuledger" "$WORK/fs/etc/gpuledger/rules.d" "$WORK/fs/etc/gpuledger/scripts"
read -r -a args <<<"${exec_start//\$GPULEDGER_OPTS/$opts}"
for i in "${!args[@]}"; do
    case ${args[$i]} in /*) args[i]=$WORK/fs${args[$i]} ;; esac
done
serve_flags "gpuledger.service with /etc/default/gpuledger" "${args[@]}"
finish
