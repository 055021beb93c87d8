#!/usr/bin/env bash
# ls and check with --history read the history a serve writes
# (docs/contract.md#history) and believe since when a GPU is in its state
# only while that serve's last refresh is no older than three of its
# --intervals: given the serve's --interval, a serve refreshing every 5
# minutes still vouches for it; without, the default 15s does not. Either
# way the history is left as it was, and --interval without --history is a
# usage error. A symbolic link or a FIFO as the history is refused.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
out="" err="" rc=0 # what run leaves

# stamp WHEN: the RFC 3339 time WHEN (as date -d reads it) from now.
stamp() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }

mkdir "$WORK/no-rules"
mkdir -m 700 "$WORK/state"
HISTORY=$WORK/state/history.json
IDLE=GPU-8e4c2f1a-3b7d-9c06-51e2-a4d9f0b3c7e1 # the demo node's reserved-idle GPU
SINCE=$(stamp '2 hours ago')
SEEN=$(stamp '5 minutes ago')

# The history a serve --interval 5m leaves: the GPU reserved and idle for two
# hours, its last refresh 5 minutes ago.
cat >"$HISTORY" <<JSON
{"schema": 1, "gpus": {"$IDLE": {"node": "gpu-demo-01", "index": 1, "state": "reserved-idle",
 "since": "$SINCE", "seen": "$SEEN", "seconds": {"reserved-idle": 7200},
 "uses": [{"namespace": "worker", "job": "worker", "held": false}], "unreserved": []}},
 "jobs": {"worker/worker": {"namespace": "worker", "job": "worker", "held": 0, "idle": 7200,
 "seen": "$SEEN"}}}
JSON
chmod 600 "$HISTORY"
sum_before=$(cksum <"$HISTORY")

run check --demo --history "$HISTORY" --interval 5m --rules "$WORK/no-rules"
expect_rc "check --history --interval 5m: exit 0" 0
expect_in "check --interval 5m: a refresh 5 minutes ago still says since when" "$out" \
    "reserved by worker/worker (alloc 4d1e6a9b) but no process or container holds it, for 2h0m"
run ls --demo --history "$HISTORY" --interval 5m --json --rules "$WORK/no-rules"
expect_rc "ls --history --interval 5m --json: exit 0" 0
expect_lua "ls --interval 5m: the GPU's stateSince is the history's" "$out" \
    "j.entries[2].uuid == '$IDLE' and j.entries[2].stateSince == '$SINCE'"

run check --demo --history "$HISTORY" --rules "$WORK/no-rules"
expect_in "check without --interval: 5 minutes is past three 15s refreshes" "$out" \
    "reserved by worker/worker (alloc 4d1e6a9b) but no process or container holds it
"
run ls --demo --history "$HISTORY" --json --rules "$WORK/no-rules"
expect_lua "ls without --interval: no stateSince" "$out" "j.entries[2].stateSince == nil"
expect_eq "ls and check leave the history as it was" "$(cksum <"$HISTORY")" "$sum_before"

# A symbolic link as the history: refused by name, the link and the file it
# names left as they were (a serve would have replaced the link with a file).
ln -s history.json "$WORK/state/linked.json"
run check --demo --history "$WORK/state/linked.json" --json --rules "$WORK/no-rules"
expect_rc "check with a linked history: exit 0" 0
expect_lua "a linked history is a source-unavailable ERROR naming the link" "$out" \
    "j.findings[1].code == 'source-unavailable' and j.findings[1].message:find('$WORK/state/linked.json: refused: it is a symbolic link', 1, true) ~= nil"
expect_eq "the link is still a link" "$(stat -c %F "$WORK/state/linked.json")" "symbolic link"
# A FIFO: refused at once, never opened (a read would wait for a writer).
mkfifo -m 600 "$WORK/state/fifo.json"
run check --demo --history "$WORK/state/fifo.json" --json --rules "$WORK/no-rules"
expect_lua "a FIFO as the history is refused, not waited on" "$out" \
    "j.findings[1].message:find('$WORK/state/fifo.json: refused: it is a FIFO, not a file', 1, true) ~= nil"

for command in ls check; do
    run "$command" --demo --interval 5m --rules "$WORK/no-rules"
    expect_rc "$command --interval without --history: exit 2" 2
    expect_eq "$command --interval without --history: says what it needs" "$err" \
        "gpuledger: $command --interval needs --history: it is the refresh period of the serve writing the history"
done
finish
