#!/usr/bin/env bash
# fleet past the descriptor limit (docs/contract.md#fleet): with `ulimit -n
# 1024` and 1,100 nodes that accept and never answer, listed before two good
# ones, every good node is read and every silent one is a source-unavailable
# ERROR naming its address: the transfers run as many at a time as the
# descriptors allow and the rest wait their turn, each with its own timeout.
# fleet serve too, its server sharing the descriptors: /healthz and /fleet
# answer while a poll runs, 200 clients at once during a poll are each
# answered or refused, none left hanging, and no node fails for want of a
# descriptor.
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
status="" body="" URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

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
    if ! fake_file_start "$1" "$2"; then
        fail "fake node $1 starts" "$(cat "$WORK/$1.stderr")"
        finish
    fi
    NODE=127.0.0.1:$file_port
}
node go "$TESTDATA/fleet/go-ledger.json"; GO=$NODE
node old "$TESTDATA/fleet/schema0-ledger.json"; OLD=$NODE
TARGETS=$(sed 's/^/127.0.0.1:/' "$WORK/silent.ports" | paste -sd, -),$GO,$OLD

# run_limited ARGS...: run, under ulimit -n 1024 in a subshell.
run_limited() {
    out=$(ulimit -n 1024 && "$GPULEDGER" "$@" 2>"$WORK/stderr"); rc=$?
    err=$(cat "$WORK/stderr")
}
# $WORK/limited ARGS...: gpuledger ARGS under ulimit -n 1024, as its own
# process (for start_listening, which runs $GPULEDGER in the background).
printf '#!/bin/bash\nulimit -n 1024 && exec %q "$@"\n' "$GPULEDGER" >"$WORK/limited"
chmod +x "$WORK/limited"

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
# EACH_SILENT_NAMED: a Lua check over a fleet document (j): every silent
# node is one source-unavailable ERROR naming its address.
EACH_SILENT_NAMED='local named = {} for _, f in ipairs(j.findings) do
       local port = f.code == "source-unavailable" and f.message:match("^gpuledger at http://127%.0%.0%.1:(%d+) could not be read: ")
       if port then named[port] = (named[port] or 0) + 1 end
     end
     for port in io.lines("'"$WORK/silent.ports"'") do if named[port] ~= 1 then return false end end
     return true'
expect_lua "every silent node is one source-unavailable ERROR naming its address" "$out" "$EACH_SILENT_NAMED"
expect_lua "the good nodes are judged: their findings are there" "$out" \
    'local seen = {} for _, f in ipairs(j.findings) do seen[f.node] = true end return seen["gpu-go"] and seen["gpu-old"]'

# ---- fleet serve under ulimit -n 1024 ---------------------------------------------
# burst NAME: 200 GETs of /healthz at once, 50 from each of 127.0.0.2 to
# 127.0.0.5 (each address under the server's per-address limit); passes NAME
# when each was answered (200 or 503) or refused at once (closed unanswered:
# curl's 7, 52 or 56), none left waiting until curl gave up.
burst() {
    local a i pids=()
    for a in 2 3 4 5; do
        for i in $(seq 50); do printf 'url = "%s/healthz"\noutput = "/dev/null"\n' "$URL"; done >"$WORK/burst.$a"
        curl -s -g --parallel --parallel-immediate --parallel-max 50 --interface "127.0.0.$a" --max-time 20 \
            -w '%{http_code} %{exitcode}\n' -K "$WORK/burst.$a" >"$WORK/burst.$a.out" 2>/dev/null &
        pids+=($!)
    done
    wait "${pids[@]}"
    local got
    got=$(cat "$WORK"/burst.?.out | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2 " " $3, $1; sep = ", " }')
    if [ "$(cat "$WORK"/burst.?.out | grep -cvE '^(200 0|503 0|000 (7|52|56))$')" = 0 ] &&
        [ "$(cat "$WORK"/burst.?.out | wc -l)" = 200 ]; then
        pass "$1 ($got)"
    else
        fail "$1" "code exit x count: $got"
    fi
}
NO_DESCRIPTOR_ERROR='for _, n in ipairs(j.summary.nodes) do
       if n.error and (n.error:find("Couldn'"'"'t connect", 1, true) or n.error:find("Too many open files", 1, true)
           or n.error:find("EMFILE", 1, true)) then return false end
     end return true'

NO_DATA_YET="503:gpuledger: no data yet: the first refresh has not completed"
GPULEDGER=$WORK/limited start_listening fleet fleet serve --targets "$TARGETS" --listen 127.0.0.1:0 \
    --interval 1s --timeout 1s || { fail "fleet serve under ulimit -n 1024 starts" "$(cat "$SERVE_LOG")"; finish; }
http GET "$URL/healthz"
expect_eq "during the first poll: /healthz answers 503, no data yet" "$status:$body" "$NO_DATA_YET"
http GET "$URL/fleet"
expect_eq "during the first poll: /fleet answers 503, no data yet" "$status:$body" "$NO_DATA_YET"
burst "during the first poll: 200 clients at once each answered or refused"
wait_for "the first poll completes: /healthz 200" 60 status_is "$URL/healthz" 200
http GET "$URL/fleet"
expect_lua "fleet serve: the two good nodes are read, with their GPUs" "$body" \
    'local read = {} for _, n in ipairs(j.summary.nodes) do if not n.error then read[#read + 1] = n.node end end
     table.sort(read) return table.concat(read, " ") == "gpu-go gpu-old" and j.summary.total.gpus == 4'
expect_lua "fleet serve: every silent node is one source-unavailable ERROR naming its address" "$body" "$EACH_SILENT_NAMED"
expect_lua "fleet serve: no node failed for want of a descriptor" "$body" "$NO_DESCRIPTOR_ERROR"
first_at=$(jq_lua j.at "$body")

# The next poll starts at once (a poll takes longer than --interval).
burst "during the next poll: 200 clients at once each answered or refused"
http GET "$URL/healthz"
expect_eq "during the next poll: /healthz 200 ok" "$status:$body" "200:ok"
wait_for "the next poll completes: /fleet's time moves" 60 body_lacks "$URL/fleet" "\"at\":\"$first_at\""
http GET "$URL/fleet"
expect_lua "after the next poll: the two good nodes are read" "$body" \
    'local n = 0 for _, r in ipairs(j.summary.nodes) do if not r.error then n = n + 1 end end return n == 2'
expect_lua "after the next poll: every silent node is one source-unavailable ERROR naming its address" "$body" \
    "$EACH_SILENT_NAMED"
expect_lua "after the next poll: no node failed for want of a descriptor" "$body" "$NO_DESCRIPTOR_ERROR"
stop_serve TERM
expect_eq "fleet serve under ulimit -n 1024 exits 0 on SIGTERM" "$SERVE_RC" 0
expect_clean_log "fleet serve under ulimit -n 1024" "$SERVE_LOG"
expect_not_in "fleet serve's log: no descriptor error" "$(cat "$SERVE_LOG")" "Too many open files"
finish
