#!/usr/bin/env bash
# A hostile node among good ones: fleet ls, fleet check and fleet serve over
# a real `gpuledger serve` (the demo node) and fake nodes whose ledgers hold
# numbers that are none where a whole number belongs (23034.5, 1e20, 1e308)
# or a value of the wrong type (an index "zero"). Each hostile node is one
# row with its error, one source-unavailable ERROR naming its address and
# the field; the command goes on, fleet serve keeps serving; so is a node
# past the limits of what one node may hold (100,000 GPUs, 65 tenants on a
# GPU), and names are cut (a 5 MB node name, a 2 MB container name). Then
# hostile registrations in a fake Consul and a fake Nomad: an
# address with a path (the fleet must not send a request the registration
# steers), and 3,000 registrations of one node (read once).
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
status="" body="" URL="" SERVE_RC=0 SERVE_LOG="" out=""

command -v python3 >/dev/null || { skip "fleet hostile" "needs python3 for the hostile nodes"; finish; }
mkdir "$WORK/rules"
export GPULEDGER_RULES=$WORK/rules

start_serve demo --demo --node gpua --listen 127.0.0.1:0 --interval 1h || { fail "serve --demo starts" "$(cat "$SERVE_LOG")"; finish; }
DEMO=${URL#http://}

# node NAME HOST FILE: a fake node answering FILE, its requests in
# $WORK/NAME.log; sets NODE (host:port).
node() {
    local name=$1 host=$2 file=$3
    if ! fake_file_start "$name" "$file" --host "$host" --log "$WORK/$name.log"; then
        fail "fake node $name starts" "$(cat "$WORK/$name.stderr")"
        finish
    fi
    NODE=$host:$file_port
}

# hostile NAME FROM TO: the Go-shaped ledger with its first FROM written TO.
hostile() {
    sed "s/$2/$3/" "$TESTDATA/fleet/go-ledger.json" >"$WORK/$1.json"
}
hostile half '"memoryTotalMiB":23034,' '"memoryTotalMiB":23034.5,'
hostile big '"memoryTotalMiB":23034,' '"memoryTotalMiB":1e20,'
hostile huge '"powerW":16.5,' '"powerW":1e308,'
hostile zero '"index":0,' '"index":"zero",'
node half 127.0.0.2 "$WORK/half.json"; HALF=$NODE
node big 127.0.0.3 "$WORK/big.json"; BIG=$NODE
node huge 127.0.0.4 "$WORK/huge.json"; HUGE=$NODE
node zero 127.0.0.5 "$WORK/zero.json"; ZERO=$NODE
ALL=$DEMO,$HALF,$BIG,$HUGE,$ZERO
WHOLE="want a whole number from 0 to 9007199254740992"

# ---- numbers that are none, a wrong type: that node, named, never the command ----
run fleet ls --targets "$ALL"
expect_rc "fleet ls with hostile numbers exits 0" 0
expect_no_crash "fleet ls"
row() { printf '%s\n' "$out" | grep "^│ $1 " | head -1 | tr -s ' '; }
expect_in "the good node's row stands" "$(row gpua)" "│ gpua │ ERROR │ 8 │ 1 │ 5 (2) │ 2 (1) │ 1 (0) │ 1 (0) │ 1 (1) │"
expect_in "23034.5 MiB is named, on the error line of its address" "$out" \
    "$HALF: unreachable: http://$HALF/ledger: unexpected answer: ledger.entries[1].memoryTotalMiB is 23034.5, $WHOLE"
expect_in "1e20 MiB is named" "$out" "http://$BIG/ledger: unexpected answer: ledger.entries[1].memoryTotalMiB is 1e+20, $WHOLE"
expect_in "1e308 W is named" "$out" \
    "http://$HUGE/ledger: unexpected answer: ledger.entries[1].powerW is 1e+308, want a number from 0 to 9007199254740992"
expect_in "an index \"zero\" is named, not a free GPU" "$out" \
    "http://$ZERO/ledger: unexpected answer: ledger.entries[1].index is a string, want a whole number"
expect_in "the totals count the hostile nodes unreachable" "$out" "gpuledger fleet · 5 node(s), 4 unreachable · 5 GPU(s)"

run fleet check --targets "$ALL" --json
expect_rc "fleet check with hostile numbers exits 0" 0
expect_lua "no rule-error: the rules never see a hostile ledger" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "rule-error" then return false end end return true'
expect_lua "one source-unavailable per hostile node, naming its address and the field" "$out" \
    'local n = 0 for _, f in ipairs(j.findings) do
       if f.code == "source-unavailable" and f.message:find("could not be read: http://[%d.:]+/ledger: unexpected answer: ledger%.entries%[1%]%.") then n = n + 1 end
     end return n == 4'
expect_lua "the good node is judged" "$out" \
    'for _, f in ipairs(j.findings) do if f.node == "gpua" and f.code == "unmanaged-tenant" then return true end end return false'

# ---- JSON that is no ledger: {} or a ledger without its node, never a node of no GPU ----
printf '{}\n' >"$WORK/empty.json"
python3 -c 'import json
ledger = json.load(open("'"$TESTDATA"'/fleet/go-ledger.json"))
del ledger["node"], ledger["entries"]
print(json.dumps(ledger))' >"$WORK/nameless.json"
node empty 127.0.0.11 "$WORK/empty.json"; EMPTY=$NODE
node nameless 127.0.0.12 "$WORK/nameless.json"; NAMELESS=$NODE
run fleet check --targets "$DEMO,$EMPTY,$NAMELESS" --exit-on error
expect_rc "fleet check --exit-on error: {} and a nameless ledger are errors" 3
if printf '%s\n' "$out" | grep -qE "http://$EMPTY/ledger: unexpected answer: ledger\.(node|at) is missing, want a string"; then
    pass "{} is named: no node or no time of reading (both are missing: either comes first)"
else fail "{} is named: no node or no time of reading" "$out"; fi
expect_in "a ledger without its node is named" "$out" \
    "http://$NAMELESS/ledger: unexpected answer: ledger.node is missing, want a string"
run fleet ls --targets "$DEMO,$EMPTY,$NAMELESS"
expect_in "fleet ls counts them unreachable, not as nodes of no GPU" "$out" "3 node(s), 2 unreachable"

# ---- too much for one node: past the limits, that node's error ------------------------
python3 -c 'import json
entries = [{"index": i, "uuid": "GPU-%d" % i, "memoryTotalMiB": 23034, "model": "L4"} for i in range(100000)]
print(json.dumps({"schema": 1, "node": "gpu-huge", "at": "2026-12-01T10:00:00Z", "entries": entries}, separators=(",", ":")))' >"$WORK/gpus.json"
python3 -c 'import json
tenants = [{"kind": "docker", "container": "c%d" % i, "pids": [i], "usedMemoryMiB": 1} for i in range(65)]
print(json.dumps({"schema": 1, "node": "gpu-crowded", "at": "2026-12-01T10:00:00Z", "entries": [{"index": 0, "tenants": tenants}]}))' >"$WORK/tenants.json"
node gpus 127.0.0.8 "$WORK/gpus.json"; GPUS=$NODE
node tenants 127.0.0.9 "$WORK/tenants.json"; TENANTS=$NODE
run fleet check --targets "$DEMO,$GPUS,$TENANTS" --json
expect_rc "fleet check with a node of 100,000 GPUs exits 0" 0
expect_lua "100,000 GPUs: that node's error, past the limit" "$out" \
    'for _, f in ipairs(j.findings) do if f.message:find("/ledger: unexpected answer: ledger.entries has 100000 items, want at most 128", 1, true) then return true end end return false'
expect_lua "65 tenants on a GPU: that node's error, past the limit" "$out" \
    'for _, f in ipairs(j.findings) do if f.message:find("/ledger: unexpected answer: ledger.entries[1].tenants has 65 items, want at most 64", 1, true) then return true end end return false'
expect_lua "no rule-error, and the good node is judged" "$out" \
    'local judged = false for _, f in ipairs(j.findings) do if f.code == "rule-error" then return false end
       judged = judged or (f.node == "gpua" and f.code == "held") end return judged'

# ---- a 5 MB node name: cut like this node's own ----------------------------------------
python3 -c 'import json
ledger = json.load(open("'"$TESTDATA"'/fleet/go-ledger.json"))
ledger["node"] = "gpu-" + "n" * (5 * 1024 * 1024)
ledger["entries"][1]["tenants"][0]["container"] = "c" * (2 * 1024 * 1024)
print(json.dumps(ledger))' >"$WORK/named.json"
node named 127.0.0.10 "$WORK/named.json"; NAMED=$NODE
run fleet ls --targets "$DEMO,$NAMED"
expect_rc "fleet ls with a 5 MB node name exits 0" 0
expect_in "the name is cut and marked" "$out" "gpu-nnnnnnnnnn"
expect_in "the name ends with the cut mark" "$out" "n…[cut] │ "
if [ "${#out}" -lt 20000 ]; then pass "fleet ls prints a few KB, not the name (${#out} characters)"; else
    fail "fleet ls prints a few KB, not the name" "${#out} characters"; fi
run fleet check --targets "$NAMED"
if [ "${#out}" -lt 20000 ]; then pass "fleet check prints a few KB, not the names (${#out} characters)"; else
    fail "fleet check prints a few KB, not the names" "${#out} characters"; fi

# ---- fleet serve with a hostile node among good ones -----------------------------
start_serving fleet fleet serve --targets "$ALL" --listen 127.0.0.1:0 --interval 1h --timeout 2s ||
    { fail "fleet serve starts" "$(cat "$SERVE_LOG")"; finish; }
for path in / /fleet /metrics /healthz; do
    http GET "$URL$path"
    expect_eq "fleet serve answers $path with a hostile node among good ones" "$status" 200
done
expect_eq "/healthz: ok while a node is read" "$body" "ok"
http GET "$URL/metrics"
expect_in "the hostile nodes are unreachable in /metrics" "$body" 'gpuledger_fleet_nodes{state="unreachable"} 4'
stop_serve TERM
expect_eq "fleet serve exits 0 on SIGTERM" "$SERVE_RC" 0

# ---- registrations: only a host and a port, each node read once --------------------
# Where a registration "127.0.0.6/latest/meta-data/?" port 9877 would send the
# fleet before (http://127.0.0.6/latest/meta-data/?:9877/ledger): port 80,
# where a node listens that logs what it is asked, when port 80 can be had.
STEERED=127.0.0.6
if fake_file_start steered "$TESTDATA/fleet/go-ledger.json" --host "$STEERED" --port 80 --log "$WORK/steered.log"; then
    steered_listens=yes
else
    steered_listens=""
    skip "a steered request is never sent (checked on port 80)" "port 80 of $STEERED cannot be had: $(tail -1 "$WORK/steered.stderr")"
fi
# never_asked NAME: the node on port 80 was not asked (when it listens).
never_asked() {
    [ -z "$steered_listens" ] || expect_eq "$1" "$(cat "$WORK/steered.log" 2>/dev/null)" ""
}
node dup 127.0.0.7 "$TESTDATA/fleet/go-ledger.json"; DUP=$NODE
python3 -c 'import json, sys
steered, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
instances = [{"node": "steer", "address": "127.0.0.1", "service_address": steered + "/latest/meta-data/?", "port": 9877}]
instances += [{"node": "gpu-dup", "address": "127.0.0.1", "service_address": host, "port": port}] * 3000
print(json.dumps({"instances": instances}))' "$STEERED" "${DUP%:*}" "${DUP##*:}" >"$WORK/consul.json"
fake_start "$WORK/consul.stderr" "$WORK/consul.port" python3 "$FAKES/fake_consul.py" "$WORK/consul.json" \
    --port-file "$WORK/consul.port" --max-seconds 300 || { fail "fake Consul starts" "$(cat "$WORK/consul.stderr")"; finish; }
CONSUL=http://127.0.0.1:$(cat "$WORK/consul.port")
export CONSUL STEERED
run fleet check --consul "$CONSUL" --json
expect_rc "fleet check via a hostile Consul exits 0" 0
never_asked "the registration with a path is never asked"
expect_lua "the registration with a path is a named error for that entry" "$out" \
    'for _, f in ipairs(j.findings) do
       if f.node == "steer" and f.code == "source-unavailable" and f.message:find("consul " .. os.getenv("CONSUL")
         .. ": unexpected answer: [1].Service.Address is \"" .. os.getenv("STEERED")
         .. "/latest/meta-data/?\", want a host name or an IP address", 1, true) then return true end
     end return false'
expect_eq "3,000 registrations of one node: one GET" "$(wc -l <"$WORK/dup.log")" 1
expect_lua "3,000 registrations of one node: one node, judged once" "$out" \
    'local n = 0 for _, f in ipairs(j.findings) do if f.node == "gpu-go" and f.code == "held" then n = n + 1 end end return n == 1'

cat >"$WORK/nomad.json" <<EOF
{"node_id": "f7476465-4d6e-c0de-26d0-e383c49be941", "acl": false,
 "services": [
  {"ID": "_nomad-task-1-ledger-gpuledger-http", "ServiceName": "gpuledger", "Namespace": "default",
   "NodeID": "n1", "Datacenter": "dc1", "JobID": "gpuledger", "AllocID": "1", "Tags": null,
   "Address": "$STEERED/latest/meta-data/?", "Port": 9877, "CreateIndex": 14, "ModifyIndex": 24},
  {"ID": "_nomad-task-2-ledger-gpuledger-http", "ServiceName": "gpuledger", "Namespace": "default",
   "NodeID": "n2", "Datacenter": "dc1", "JobID": "gpuledger", "AllocID": "2", "Tags": null,
   "Address": "${DUP%:*}", "Port": ${DUP##*:}, "CreateIndex": 14, "ModifyIndex": 24},
  {"ID": "_nomad-task-3-ledger-gpuledger-http", "ServiceName": "gpuledger", "Namespace": "default",
   "NodeID": "n2", "Datacenter": "dc1", "JobID": "gpuledger", "AllocID": "3", "Tags": null,
   "Address": "${DUP%:*}", "Port": ${DUP##*:}, "CreateIndex": 14, "ModifyIndex": 24}
 ]}
EOF
fake_nomad_up "$WORK/nomad.json"
: >"$WORK/dup.log"
run fleet ls --nomad-service gpuledger --nomad-addr "$NOMAD"
expect_rc "fleet ls via a hostile Nomad registration exits 0" 0
never_asked "Nomad: the registration with a path is never asked"
expect_in "Nomad: the registration with a path is a named error" "$out" \
    "unreachable: nomad $NOMAD: unexpected answer: [1].Address is \"$STEERED/latest/meta-data/?\", want a host name or an IP address"
expect_eq "Nomad: two registrations of one node: one GET" "$(wc -l <"$WORK/dup.log")" 1

# ---- a discovery answer whose spaced empty list follows 4 MiB without a quote ----
# Finding the empty lists of such an answer once took time that grew with the
# square of the quoteless stretch (hours for this one); a hang guard of 120 s.
python3 -c 'import sys; sys.stdout.write("[" + " " * (4 * 1024 * 1024) + "[ ]]")' >"$WORK/spaced.json"
node spaced 127.0.0.11 "$WORK/spaced.json"; SPACED=$NODE
out=$(timeout 120 "$GPULEDGER" fleet ls --consul "http://$SPACED" 2>"$WORK/stderr"); rc=$?
err=$(cat "$WORK/stderr")
expect_rc "fleet ls via a Consul answering 4 MiB of blanks exits 0, not hung" 0
expect_in "its entry with no address is named" "$out" \
    "consul http://$SPACED: unexpected answer: [1].Node.Address is missing, want a host name or an IP address"
finish
