#!/usr/bin/env bash
# fleet past the descriptor limit (docs/contract.md#fleet): with `ulimit -n
# 1024` and 1,100 nodes that accept and never answer, listed before two good
# ones, every good node is read and every silent one is a source-unavailable
# ERROR naming its address: the transfers run as many at a time as the
# descriptors allow and the rest wait their turn, each with its own timeout.
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"

command -v python3 >/dev/null || { skip "fleet past the descriptor limit" "needs python3 for the nodes"; finish; }
SILENT=1100
if ! (ulimit -n 1024) 2>/dev/null; then skip "fleet past the descriptor limit" "cannot set ulimit -n 1024"; finish; fi

if ! fake_start "$WORK/silent.stderr" "$WORK/silent.ports" python3 "$FAKES/silent_ports.py" "$SILENT" \
    --port-file "$WORK/silent.ports" --max-seconds 120; then
    skip "fleet past the descriptor limit" "$(cat "$WORK/silent.stderr")"
    finish
fi
# node NAME FILE: a good node serving FILE; sets NODE (host:port).
node() {
    if ! fake_start "$WORK/$1.stderr" "$WORK/$1.port" python3 "$FAKES/fake_node.py" --mode file --file "$2" \
        --port-file "$WORK/$1.port" --max-seconds 120; then
        fail "fake node $1 starts" "$(cat "$WORK/$1.stderr")"
        finish
    fi
    NODE=127.0.0.1:$(cat "$WORK/$1.port")
}
node go "$TESTDATA/fleet/go-ledger.json"; GO=$NODE
node old "$TESTDATA/fleet/schema0-ledger.json"; OLD=$NODE
TARGETS=$(sed 's/^/127.0.0.1:/' "$WORK/silent.ports" | paste -sd, -),$GO,$OLD

# run_limited ARGS...: run, under ulimit -n 1024 in a subshell.
run_limited() {
    out=$(ulimit -n 1024 && "$GPULEDGER" "$@" 2>"$WORK/stderr"); rc=$?
    err=$(cat "$WORK/stderr")
}

run_limited fleet ls --json --targets "$TARGETS" --timeout 1s
expect_rc "fleet ls over 1,102 nodes under ulimit -n 1024 exits 0" 0
expect_no_crash "fleet ls under ulimit -n 1024"
expect_lua "the two good nodes are read, with their GPUs" "$out" \
    'local read = {} for _, n in ipairs(j.summary.nodes) do if not n.error then read[#read + 1] = n.node end end
     table.sort(read) return table.concat(read, " ") == "gpu-go gpu-old" and j.summary.total.gpus == 4'
expect_lua "every silent node is unreachable for want of an answer, none for want of a descriptor" "$out" \
    'local n = 0 for _, r in ipairs(j.summary.nodes) do
       if r.error then
         if not r.error:find("Timeout was reached", 1, true) then return false end
         n = n + 1
       end
     end return n == '"$SILENT"' and j.summary.total.unreachable == '"$SILENT"

run_limited fleet check --json --targets "$TARGETS" --timeout 1s
expect_no_crash "fleet check under ulimit -n 1024"
expect_lua "every silent node is one source-unavailable ERROR naming its address" "$out" \
    'local named = {} for _, f in ipairs(j.findings) do
       local port = f.code == "source-unavailable" and f.message:match("^gpuledger at http://127%.0%.0%.1:(%d+) could not be read: ")
       if port then named[port] = (named[port] or 0) + 1 end
     end
     for port in io.lines("'"$WORK/silent.ports"'") do if named[port] ~= 1 then return false end end
     return true'
expect_lua "the good nodes are judged: their findings are there" "$out" \
    'local seen = {} for _, f in ipairs(j.findings) do seen[f.node] = true end return seen["gpu-go"] and seen["gpu-old"]'
finish
