#!/usr/bin/env bash
# Crash safety of the history file (docs/contract.md#history): serve writes it every refresh
# (temp file, fsync, rename); kill -9 at random moments, 30 times, and after
# every kill the file parses, its counters and last-seen time never go
# backwards, and it is never more than about one refresh behind the moment
# of the kill. A restart removes temp files a kill left behind. Refreshes
# come every 10 ms, nearly back to back, so that many kills land mid-write.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

mkdir "$WORK/rules"
HISTORY=$WORK/state/history.json
KILLS=${GPULEDGER_CRASH_KILLS:-30}
INTERVAL_MS=10
SLACK_MS=1000 # scheduling on a loaded 2-core machine, sanitizers included

# reading: "<sum of every GPU's state seconds> <latest seen, ms since the
# epoch>" of the history file, or "bad <why>".
reading() {
    LUA_PATH="$SRC/lua/?.lua;;" lua5.4 -e '
local clock = require "gpuledger.clock"
local ok, doc = pcall(require("cjson").decode, io.read("a"))
if not ok or type(doc) ~= "table" or doc.schema ~= 1 or type(doc.gpus) ~= "table" then
  print("bad " .. tostring(doc)) return
end
local total, seen = 0, 0
for _, gpu in pairs(doc.gpus) do
  for _, s in pairs(gpu.seconds) do total = total + s end
  seen = math.max(seen, clock.parse_time(gpu.seen) or 0)
end
print(string.format("%.6f %d", total, math.floor(seen * 1000)))' <"$HISTORY" 2>&1
}

now_ms() { date +%s%3N; }

last_total=0 last_seen=0 parsed=0 forward=0 behind=0 worst_lag=0 mid_write=0
for i in $(seq "$KILLS"); do
    if ! start_serve "crash$i" --demo --listen 127.0.0.1:0 --interval ${INTERVAL_MS}ms --history "$HISTORY" --rules "$WORK/rules"; then
        fail "start $i" "$(cat "$SERVE_LOG")"
        break
    fi
    # the banner comes after the first refresh, which saved the file: from
    # here on the file is this run's
    sleep "0.$((RANDOM % 8 + 1))$((RANDOM % 10))"
    killed_at=$(now_ms)
    kill -9 "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null
    [ -n "$(find "$(dirname "$HISTORY")" -name '*.tmp')" ] && mid_write=$((mid_write + 1))
    read -r total seen <<<"$(reading)"
    if [ "$total" = bad ]; then
        fail "kill $i: the file parses" "$seen" "$(head -c 300 "$HISTORY")"
        continue
    fi
    parsed=$((parsed + 1))
    if awk -v t="$total" -v lt="$last_total" -v s="$seen" -v ls="$last_seen" 'BEGIN { exit !(t >= lt && s >= ls) }'; then
        forward=$((forward + 1))
    else
        fail "kill $i: never backwards" "total $last_total then $total, seen $last_seen then $seen"
    fi
    lag=$((killed_at - seen))
    [ "$lag" -gt "$worst_lag" ] && worst_lag=$lag
    if [ "$lag" -le $((INTERVAL_MS + SLACK_MS)) ]; then
        behind=$((behind + 1))
    else
        fail "kill $i: at most one refresh behind" "the file's last read was ${lag} ms before the kill"
    fi
    last_total=$total last_seen=$seen
done
echo "note: $mid_write of $KILLS kills left a temp file (landed mid-write)"
expect_eq "the file parsed after every kill" "$parsed" "$KILLS"
expect_eq "counters and time only went forward" "$forward" "$KILLS"
expect_eq "never more than a refresh behind (worst ${worst_lag} ms)" "$behind" "$KILLS"
expect_eq "counters grew over the kills" "$(awk -v t="$last_total" 'BEGIN { print (t > 0) ? "yes" : "no" }')" yes

# a clean start after the kills removes the temp files they left
if start_serve final --demo --listen 127.0.0.1:0 --interval ${INTERVAL_MS}ms --history "$HISTORY" --rules "$WORK/rules"; then
    stop_serve TERM
    expect_eq "a clean stop exits 0" "$SERVE_RC" 0
    expect_clean_log "clean stop" "$SERVE_LOG"
    expect_eq "no temp file left" "$(find "$(dirname "$HISTORY")" -name '*.tmp' | wc -l)" 0
    read -r total _ <<<"$(reading)"
    expect_eq "the last file holds at least what the kills left" \
        "$(awk -v t="$total" -v lt="$last_total" 'BEGIN { print (t >= lt) ? "yes" : "no" }')" yes
else
    fail "final start" "$(cat "$SERVE_LOG")"
fi
finish
