#!/usr/bin/env bash
# The deploy files an operator runs. Each Nomad file (deploy/nomad/*.hcl) is
# parsed by HashiCorp's own HCL parser (npm's @cdktf/hcl2json: the Go HCL
# library built to WebAssembly, installed once into the build directory and
# run with the installed node), checked block by block against Nomad's job
# specification (tests/install/nomad-jobspec.json), and read as Nomad reads
# it with the variables an operator gives (hcl.js job): what its comments
# promise, for each variable; the fleet job finds the node agents the node
# job registers, for each service provider. The systemd unit passes
# `systemd-analyze verify` (with the man page it names) and carries its
# hardening; and every flag a job or the unit passes is given to the built
# binary, serving the demo node: it must start and answer /healthz. Exits 77
# when the npm registry cannot be reached.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
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

# --- the Nomad files parse, and are Nomad job files ----------------------------------------------
JOBS=$SRC/deploy/nomad
for file in "$JOBS"/*.hcl; do
    if json=$(hcl json "$file" 2>&1); then pass "$(basename "$file") parses"; else fail "$(basename "$file") parses" "$json"; fi
done
for file in "$JOBS"/*.nomad.hcl; do
    if said=$(hcl check "$file" 2>&1); then
        pass "$(basename "$file"): every block and attribute is in Nomad's job specification"
    else
        fail "$(basename "$file"): every block and attribute is in Nomad's job specification" "$said"
    fi
done
sed 's/ephemeral_disk {/ephemeral_disc {/; s/provider = service.value/providr = service.value/' \
    "$JOBS/gpuledger.nomad.hcl" >"$WORK/misspelled.nomad.hcl"
said=$(hcl check "$WORK/misspelled.nomad.hcl" 2>&1)
expect_in "a misspelled block is refused" "$said" 'group "ledger": Nomad'"'"'s job specification has no "ephemeral_disc" here'
expect_in "... and a misspelled attribute in a dynamic block's content" "$said" 'dynamic "service": Nomad'"'"'s job specification has no "providr" here'

# node_job VAR=VALUE...: the node job as Nomad reads it with those -var's.
node_job() { hcl job "$JOBS/gpuledger.nomad.hcl" checksum=sha256:0 "$@"; }
job=$(node_job)
group='local g = j.gpuledger[1].group.ledger[1] local t = g.task.gpuledger[1]'
expect_lua "node job: a system job in every node pool, no constraint" "$job" \
    'local job = j.gpuledger[1] return job.type == "system" and job.node_pool == "all" and job.constraint == nil'
expect_lua "node job: checksum is a variable without a default" "$(hcl json "$JOBS/gpuledger.nomad.hcl")" \
    'return j.variable.checksum ~= nil and j.variable.checksum[1].default == nil'
expect_in "node job: no checksum, no job" "$(hcl job "$JOBS/gpuledger.nomad.hcl" 2>&1)" "checksum"
expect_lua "node job: sticky ephemeral disk" "$job" "$group return g.ephemeral_disk[1].sticky == true"
expect_lua "node job: raw_exec" "$job" "$group return t.driver == 'raw_exec'"
expect_lua "node job: the binary is checked against var.checksum" "$job" \
    "$group return t.artifact[1].options[1].checksum == 'sha256:0' and t.artifact[1].source:find('/v0.1.0/gpuledger-v0.1.0-linux-amd64', 1, true) ~= nil"
expect_lua "node job: artifact_url replaces the release's URL" "$(node_job artifact_url=/srv/gpuledger)" \
    "$group return t.artifact[1].source == '/srv/gpuledger'"
expect_lua "node job: its workload identity is its token, by default" "$job" "$group return t.identity[1].env == true"
expect_lua "node job: -var workload_identity=false: none" "$(node_job workload_identity=false)" "$group return t.identity == nil"
expect_lua "node job: a service in Nomad's catalog with its /healthz check, by default" "$job" \
    "$group local s = g.service[1] return #g.service == 1 and s.provider == 'nomad' and s.name == 'gpuledger' and s.check[1].path == '/healthz'"
expect_lua "node job: -var service_provider=consul: in Consul" "$(node_job service_provider=consul)" \
    "$group return #g.service == 1 and g.service[1].provider == 'consul'"
expect_lua "node job: -var service_provider=none: no service" "$(node_job service_provider=none)" "$group return g.service == nil"
expect_in "node job: any other provider is refused" "$(node_job service_provider=kubernetes 2>&1)" \
    "The service_provider must be nomad, consul or none."
# shellcheck disable=SC2016 # ${node.class} and ${meta.…} are Nomad's, not the shell's
expect_lua "node job: -var node_class and node_meta constrain the nodes" "$(node_job node_class=gpu node_meta=has_gpu)" \
    'local c = j.gpuledger[1].constraint
     return #c == 2 and c[1].attribute == "${node.class}" and c[1].value == "gpu"
        and c[2].attribute == "${meta.has_gpu}" and c[2].operator == "is_set"'
expect_lua "node job: site rules as an artifact into local/rules.d only with rules_url" "$(node_job rules_url=https://rules.example/r.tgz)" \
    "$group return #t.artifact == 2 and t.artifact[2].destination == 'local/rules.d'"
expect_lua "node job: args --nomad-node-id \${node.unique.id}, the history in the alloc dir" "$job" \
    "$group local a = table.concat(t.config[1].args, ' ') return a:find('--nomad-node-id \${node.unique.id}', 1, true) ~= nil and a:find('--history \${NOMAD_ALLOC_DIR}/data/', 1, true) ~= nil"
fleet=$(hcl job "$JOBS/gpuledger-fleet.nomad.hcl" checksum=sha256:0)
expect_lua "fleet job: one fleet task, port 9878, with its workload identity" "$fleet" \
    'local g = j["gpuledger-fleet"][1].group.fleet[1]
     return g.count == 1 and g.network[1].port.http[1].static == 9878 and g.task.fleet[1].identity[1].env == true'
policy=$(hcl json "$JOBS/gpuledger.policy.hcl")
expect_lua "gpuledger.policy.hcl: agent read, node read, read-job in every namespace, nothing else" "$policy" \
    'local c = j.namespace["*"][1].capabilities
     return j.agent[1].policy == "read" and j.node[1].policy == "read" and #c == 1 and c[1] == "read-job"'

# --- every flag they pass, on the demo node ------------------------------------------------------
# serve_flags NAME ARGS...: gpuledger ARGS (--demo for serve), with the address made
# 127.0.0.1:0, must start serving and answer /healthz.
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
    # serve runs on the demo node; fleet serve reads the node agents it finds
    [ "$command" = fleet ] && command="fleet ${args[1]}" || args+=(--demo)
    echo "     gpuledger ${args[*]}"
    served=$((served + 1))
    if start_serving "serve-$served" "${args[@]}"; then
        http GET "$URL/healthz"
        expect_eq "$name: $command takes every flag and serves the demo node" "$status" 200
        stop_serve TERM
        return
    fi
    stop_serve TERM
    fail "$name: $command takes every flag and serves the demo node" "exit $SERVE_RC" "$(head -c 600 "$SERVE_LOG")"
}
mkdir -p "$WORK/alloc/data" "$WORK/local/rules.d"
# The fleet job must find the node agents where the node job registers them,
# for each provider: the node job's service (name and provider, as Nomad
# reads the job with -var service_provider=P) is registered in a fake Nomad
# catalog or a fake Consul, pointing at a serve of the demo node, and the
# fleet job's args with the same -var must find it: fleet serve's /healthz
# is 200 only once it has read a node.
if ! start_serve fleet-node --demo --listen 127.0.0.1:0; then
    fail "a node agent for the fleet job starts" "$(cat "$SERVE_LOG")"
    finish
fi
node_pid=$SERVE_PID node_port=${URL##*:}
name_of='j.gpuledger[1].group.ledger[1].service[1].name'
provider_of='j.gpuledger[1].group.ledger[1].service[1].provider'
nomad_service=$(jq_lua "$name_of" "$(node_job service_provider=nomad)")
consul_service=$(jq_lua "$name_of" "$(node_job service_provider=consul)")
expect_eq "node job: -var service_provider=nomad registers with Nomad" \
    "$(jq_lua "$provider_of" "$(node_job service_provider=nomad)")" nomad
cat >"$WORK/nomad.json" <<EOF
{"node_id": "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b", "acl": false, "services": [
 {"ServiceName": "$nomad_service", "Namespace": "default", "NodeID": "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b",
  "AllocID": "9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3", "Address": "127.0.0.1", "Port": $node_port, "Tags": null}]}
EOF
fake_nomad_up "$WORK/nomad.json"
cat >"$WORK/consul.json" <<EOF
{"instances": [{"node": "gpu-node-1", "address": "127.0.0.1", "service": "$consul_service", "port": $node_port, "status": "passing"}]}
EOF
if ! fake_start "$WORK/consul.stderr" "$WORK/consul.port" python3 "$FAKES/fake_consul.py" "$WORK/consul.json" \
    --port-file "$WORK/consul.port" --log "$WORK/consul.log" --max-seconds 300; then
    fail "fake Consul starts" "$(cat "$WORK/consul.stderr")"
    finish
fi
CONSUL=http://127.0.0.1:$(cat "$WORK/consul.port")
export NOMAD_ADDR=$NOMAD
# job_flags NAME FILE VAR=VALUE...: the args of FILE's task with those -var's
# (and the run time values of a node), served on the demo node.
job_flags() {
    local name=$1 file=$2 args
    shift 2
    if mapfile -t args < <(node_unique_id=5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b node_unique_name=gpu-node-1 \
        NOMAD_ALLOC_DIR="$WORK/alloc" NOMAD_TASK_DIR="$WORK/local" hcl args "$JOBS/$file" checksum=sha256:0 "$@") &&
        [ ${#args[@]} -gt 0 ]; then
        serve_flags "$name" "${args[@]}"
    else
        fail "$name: the task's args evaluate" "$(hcl args "$JOBS/$file" checksum=sha256:0 "$@" 2>&1 | tail -n 2)"
    fi
}
job_flags "node job" gpuledger.nomad.hcl
job_flags "fleet job, by default (Nomad's catalog, where the node job registers by default)" gpuledger-fleet.nomad.hcl
job_flags "fleet job with service_provider=consul (where the node job then registers)" gpuledger-fleet.nomad.hcl \
    service_provider=consul consul_addr="$CONSUL"
expect_in "... which asked Consul for the node job's service" "$(cat "$WORK/consul.log")" "/v1/health/service/$consul_service"
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
