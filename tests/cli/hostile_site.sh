#!/usr/bin/env bash
# Hostile site files: rules that never give the program back — a
# message handler that loops (in evaluate and at load time), a rule that
# changes its own table after it was checked, single C calls that run for
# minutes (string.rep, table.move, a plain string.find, a backtracking
# pattern), a rule of the fleet that never returns — and a site renderer
# that loops. Every command ends (fleet check and fleet serve too, over two
# real nodes); each such file is a rule-error naming it while the other
# rules' findings stand; serve and fleet serve keep refreshing and
# answering, serve says when its report is stale (/healthz 503 past three
# intervals, or while a refresh runs that long), and both stop at SIGTERM,
# serve at once even while its site rules are stuck in their children. Each
# command runs under `timeout`, so that a hang fails the test instead of
# holding it. A looping file is stopped after its deadline of CPU time,
# which a loaded machine stretches on the wall clock: the bounds here catch
# a hang, and leave room for that.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
out="" err="" # what run leaves (with $rc)

# bounded NAME SECONDS ARGS...: runs gpuledger ARGS under `timeout SECONDS`;
# passes NAME when it ended by itself. Leaves $out, $err and $rc.
bounded() {
    local name=$1 seconds=$2
    shift 2
    out=$(timeout -s KILL "$seconds" "$GPULEDGER" "$@" 2>"$WORK/stderr")
    rc=$?
    err=$(cat "$WORK/stderr")
    if [ "$rc" -eq 137 ]; then fail "$name: ends within $seconds s" "killed by timeout"; else pass "$name: ends within $seconds s"; fi
}

GOOD='return { code = "good-one", level = "WARN", evaluate = function(ledger, policy, emit) emit { message = "the good rule ran" } end }'
LOOP='while true do end'
declare -A CASES=(
    [handler]="return { code = \"handler\", level = \"WARN\", evaluate = function() xpcall(function() $LOOP end, function() $LOOP end) end }"
    [loadtime]="xpcall(function() $LOOP end, function() $LOOP end) return {}"
    [newlevel]="local R; R = { code = \"newlevel\", level = \"WARN\", evaluate = function() R.level = function() $LOOP end end }; return R"
    [pwned]="local R; R = { code = \"pwned\", level = \"WARN\", evaluate = function() R.level = \"PWNED\" end }; return R"
    [metatable]="local R; R = { code = \"metatable\", level = \"WARN\", evaluate = function() setmetatable(R, { __index = function() $LOOP end }) end }; return R"
    [rep]='return { code = "rep", level = "WARN", evaluate = function() return string.rep("", math.maxinteger) end }'
    [move]='return { code = "move", level = "WARN", evaluate = function() table.move({}, 1, math.maxinteger - 1, 2) end }'
    [find]='return { code = "find", level = "WARN", evaluate = function() local needle = ("a"):rep(2 * 1024 * 1024) .. "b" string.find(("a"):rep(4 * 1024 * 1024), needle, 1, true) end }'
    [pattern]='return { code = "pattern", level = "WARN", evaluate = function() string.find(("a"):rep(24), ("a*"):rep(12) .. "b") end }'
)

# --- check: each hostile file beside a good one --------------------------------
for name in "${!CASES[@]}"; do
    dir=$WORK/rules-$name
    mkdir "$dir"
    printf '%s\n' "${CASES[$name]}" >"$dir/$name.lua"
    printf '%s\n' "$GOOD" >"$dir/good.lua"
    bounded "check with $name.lua" 60 check --demo --rules "$dir"
    expect_in "check with $name.lua: the other rules' findings stand" "$out" "the good rule ran"
    expect_in "check with $name.lua: the defaults' findings stand" "$out" "unmanaged-tenant"
    case $name in
    newlevel | pwned | metatable) # changes only its own table, after it was checked: harmless
        expect_not_in "check with $name.lua: no rule-error (the rule was frozen when checked)" "$out" "rule-error"
        expect_not_in "check with $name.lua: its level stays" "$out" "PWNED" ;;
    *)
        expect_in "check with $name.lua: a rule-error naming the file" "$out" "$dir/$name.lua: deadline of" ;;
    esac
done

# --- rules, rules --check, --prometheus: every hostile file at once ------------
ALL=$WORK/rules-all
mkdir "$ALL"
for name in handler loadtime rep move; do printf '%s\n' "${CASES[$name]}" >"$ALL/$name.lua"; done
printf '%s\n' "$GOOD" >"$ALL/good.lua"
bounded "rules" 120 rules --rules "$ALL"
expect_rc "rules: exit 1 (rule errors)" 1
expect_in "rules: the good rule is listed" "$out" "good-one"
expect_in "rules: the load-time loop is named" "$err" "$ALL/loadtime.lua: deadline of"
bounded "rules --check" 120 rules --check "$ALL"
expect_rc "rules --check: exit 1" 1
expect_in "rules --check: the evaluate loop is named" "$out" "$ALL/handler.lua: deadline of"
expect_in "rules --check: string.rep is named" "$out" "$ALL/rep.lua: deadline of"
expect_in "rules --check: the good rule's findings stand" "$out" "the good rule ran"
bounded "rules --prometheus" 120 rules --prometheus --rules "$ALL"
expect_in "rules --prometheus: the good rule's alert" "$out" "GPULedgerGoodOne"

# --- a site renderer that loops -------------------------------------------------
SCRIPTS=$WORK/scripts
mkdir -p "$SCRIPTS/gpuledger/render"
printf '%s\n' "$LOOP" >"$SCRIPTS/gpuledger/render/table.lua"
bounded "ls with a looping renderer" 60 ls --demo --rules "$WORK/rules-pwned" --scripts "$SCRIPTS"
expect_rc "ls with a looping renderer: exit 1" 1
expect_in "ls with a looping renderer: says why" "$err" "rendering: deadline of"
bounded "check with a looping renderer" 60 check --demo --rules "$WORK/rules-pwned" --scripts "$SCRIPTS"
expect_rc "check with a looping renderer: exit 1" 1
rm "$SCRIPTS/gpuledger/render/table.lua"

# --- a site renderer that reaches for the machine ---------------------------------
# Through cli.main with its own --nvidia-smi it would make gpuledger spawn any
# program; no module that reaches the machine is given to a site script.
printf '#!/bin/sh\ntouch "%s/spawned"\n' "$WORK" >"$WORK/evil-smi"
chmod +x "$WORK/evil-smi"
for module in cli cmd cmd.ls cmd.serve server collect.nvidia collect.node core; do
    printf 'local m = require("gpuledger.%s")\nm.main { "ls", "--nvidia-smi", "%s", "--no-nomad", "--no-docker" }\nreturn {}\n' \
        "$module" "$WORK/evil-smi" >"$SCRIPTS/gpuledger/render/columns.lua"
    run ls --demo --rules "$WORK/rules-pwned" --scripts "$SCRIPTS"
    expect_rc "renderer requiring gpuledger.$module: exit 1" 1
    expect_in "renderer requiring gpuledger.$module: refused, naming the file and line" "$err" \
        "gpuledger/render/columns.lua:1: require \"gpuledger.$module\": a site script may require"
done
if [ ! -e "$WORK/spawned" ]; then pass "no renderer made gpuledger spawn a program"; else fail "no renderer made gpuledger spawn a program" "$WORK/spawned exists"; fi
rm "$SCRIPTS/gpuledger/render/columns.lua"

# --- serve: a looping rule after SIGHUP, then a looping renderer ---------------
RULES=$WORK/serve-rules
mkdir "$RULES"
printf '%s\n' "$GOOD" >"$RULES/good.lua"
if ! start_serve hostile --demo --interval 1s --listen 127.0.0.1:0 --rules "$RULES" --scripts "$SCRIPTS"; then
    fail "serve starts" "$(cat "$SERVE_LOG")"
    finish
fi
wait_for "serve: the good rule's finding" 10 body_has "$URL/findings" "the good rule ran"
printf '%s\n' "${CASES[handler]}" >"$RULES/handler.lua"
kill -HUP "$SERVE_PID"
wait_for "serve: SIGHUP takes the new set (it loads)" 60 grep -q "reloaded the rule set" "$SERVE_LOG"
wait_for "serve: the looping rule is a rule-error naming it" 60 body_has "$URL/findings" "$RULES/handler.lua: deadline of"
http GET "$URL/findings"
expect_in "serve: the other rules' findings stand" "$body" "the good rule ran"
http GET "$URL/healthz"
expect_eq "serve: /healthz answers 200 while refreshes go on" "$status" 200
at1=$(jq_lua 'j.at' "$(curl -s "$URL/ledger")")
wait_for "serve: keeps refreshing (a report after $at1)" 60 body_lacks "$URL/ledger" "\"at\":\"$at1\""

printf '%s\n' "$LOOP" >"$SCRIPTS/gpuledger/render/metrics.lua"
wait_for "serve: a refresh past its deadline makes /healthz say the report is stale" 90 body_has "$URL/healthz" "stale: the last good report is"
http GET "$URL/healthz"
expect_eq "serve: /healthz 503 (the last good report is older than three intervals)" "$status" 503
expect_in "serve: /healthz says why" "$body" "deadline of"
http GET "$URL/metrics"
expect_eq "serve: /metrics keeps the last good report" "$status" 200
expect_in "serve: the last good /metrics" "$body" "gpuledger_findings"
expect_not_in "serve: no traceback in the log" "$(cat "$SERVE_LOG")" "traceback"
rm "$SCRIPTS/gpuledger/render/metrics.lua"
wait_for "serve: /healthz 200 again once refreshes succeed" 60 sh -c "curl -s -o /dev/null -w '%{http_code}' '$URL/healthz' | grep -q 200"

kill -HUP "$SERVE_PID"
sleep 0.5
started=$(date +%s)
stop_serve TERM
took=$(($(date +%s) - started))
expect_eq "serve: SIGHUP then SIGTERM: exit 0" "$SERVE_RC" 0
if [ "$took" -le 10 ]; then pass "serve: SIGTERM after SIGHUP stops it in ${took}s (<= 10)"; else fail "serve: SIGTERM promptly" "took ${took}s"; fi
expect_clean_log "serve" "$SERVE_LOG"

# --- serve: site rules stuck in their children, then SIGTERM -------------------
# Five rule files whose message handler loops (past the instruction budget)
# hold each refresh for 10 s of CPU time (2 s each): serve answers 503 "no
# data yet" until the first completes, /healthz 503 once the next runs past
# three intervals (before: 200 until it ended), and SIGTERM early in a
# refresh kills the children: serve is gone well before the 8 s left of it
# (before: it waited).
STUCK=$WORK/stuck-rules
mkdir "$STUCK"
for i in 1 2 3 4 5; do
    printf '%s\n' "${CASES[handler]//\"handler\"/\"stuck-$i\"}" >"$STUCK/stuck$i.lua"
done
if start_listening stuck serve --demo --interval 1s --listen 127.0.0.1:0 --rules "$STUCK"; then
    http GET "$URL/healthz"
    expect_eq "serve: /healthz 503 before the first refresh completed" "$status" 503
    expect_eq "serve: /healthz says there is no data yet" "$body" "gpuledger: no data yet: the first refresh has not completed"
    expect_security_headers "no data yet"
    http GET "$URL/metrics"
    expect_eq "serve: /metrics 503 before the first refresh completed" "$status" 503
    wait_for "serve: the first refresh completes" 60 status_is "$URL/healthz" 200
    http GET "$URL/findings"
    expect_in "serve: the stuck rules are rule-errors" "$body" "$STUCK/stuck1.lua: deadline of"
    wait_for "serve: /healthz 503 while a refresh runs past three intervals" 30 status_is "$URL/healthz" 503
    http GET "$URL/healthz"
    expect_in "serve: /healthz says no refresh completed" "$body" "stale: no refresh has completed since"
    wait_for "serve: /healthz 200 again once that refresh completed" 60 status_is "$URL/healthz" 200
    wait_for "serve: the next refresh runs a site rule in a child" 30 pgrep -P "$SERVE_PID"
    children=$(pgrep -P "$SERVE_PID" | tr '\n' ' ')
    kill -TERM "$SERVE_PID"
    wait_for "serve: SIGTERM stops it while rules are stuck" 6 sh -c "! kill -0 $SERVE_PID"
    for child in $children; do
        expect_eq "serve: SIGTERM: child $child is gone" "$(kill -0 "$child" 2>/dev/null && echo running)" ""
    done
    stop_serve TERM
    expect_eq "serve: SIGTERM with stuck rules: exit 0" "$SERVE_RC" 0
    expect_in "serve: SIGTERM with stuck rules: says so" "$(cat "$SERVE_LOG")" "SIGTERM: stopped"
    expect_clean_log "serve with stuck rules" "$SERVE_LOG"
else
    fail "serve with stuck rules starts" "$(cat "$SERVE_LOG")"
fi

# --- fleet check and fleet serve: hostile rules on the nodes' ledgers and the fleet ---
# Two real nodes (serve --demo, without site rules); the site's rules hold a
# rule whose message handler loops, a C call that never returns, a rule of the
# fleet that never returns, and the good rule and the example fleet rule.
FLEET_RULES=$WORK/fleet-rules
mkdir "$FLEET_RULES" "$WORK/no-rules"
printf '%s\n' "${CASES[handler]}" >"$FLEET_RULES/handler.lua"
printf '%s\n' "${CASES[rep]}" >"$FLEET_RULES/rep.lua"
printf '%s\n' 'return { code = "fleet-rep", level = "WARN", evaluate_fleet = function() return string.rep("", math.maxinteger) end }' \
    >"$FLEET_RULES/fleet_rep.lua"
printf '%s\n' "$GOOD" >"$FLEET_RULES/good.lua"
cp "$SRC/rules/examples/fleet_reserved_idle.lua" "$FLEET_RULES/"
start_serve node-a --demo --node gpua --listen 127.0.0.1:0 --interval 1h --rules "$WORK/no-rules" ||
    { fail "serve node a starts" "$(cat "$SERVE_LOG")"; finish; }
NODE_A=${URL#http://}
start_serve node-b --demo --node gpub --listen 127.0.0.1:0 --interval 1h --rules "$WORK/no-rules" ||
    { fail "serve node b starts" "$(cat "$SERVE_LOG")"; finish; }
NODE_B=${URL#http://}

# expect_fleet_judged NAME TEXT: TEXT (fleet check's output, or fleet serve's
# /fleet) names each hostile file in a rule-error and keeps the others' findings.
expect_fleet_judged() {
    local file
    for file in handler rep fleet_rep; do
        expect_in "$1: a rule-error naming $file.lua" "$2" "$FLEET_RULES/$file.lua: deadline of"
    done
    expect_in "$1: the good rule's findings stand" "$2" "the good rule ran"
    expect_in "$1: the defaults' findings stand" "$2" "unmanaged-tenant"
    expect_in "$1: the other fleet rule's finding stands" "$2" "fleet-reserved-idle"
}
bounded "fleet check with hostile rules" 120 fleet check --exit-on error --rules "$FLEET_RULES" --targets "$NODE_A,$NODE_B"
expect_rc "fleet check --exit-on error with hostile rules: exit 3 (rule-errors are ERROR)" 3
expect_fleet_judged "fleet check" "$out"
for file in handler rep fleet_rep; do
    expect_eq "fleet check: $file.lua's rule-error comes once, about the fleet (not once per node)" \
        "$(printf '%s\n' "$out" | grep -F "$FLEET_RULES/$file.lua: deadline of" | tr -s ' ' | cut -d' ' -f1-3)" "ERROR rule-error fleet"
done

if start_serving fleet-serve fleet serve --rules "$FLEET_RULES" --targets "$NODE_A,$NODE_B" --listen 127.0.0.1:0 --interval 1s; then
    http GET "$URL/fleet"
    expect_eq "fleet serve with hostile rules: /fleet 200" "$status" 200
    expect_fleet_judged "fleet serve" "$body"
    first_at=$(jq_lua j.at "$body")
    wait_for "fleet serve: keeps polling" 120 body_lacks "$URL/fleet" "\"at\":\"$first_at\""
    http GET "$URL/healthz"
    expect_eq "fleet serve: /healthz 200 while polls go on" "$status" 200
    stop_serve TERM
    expect_eq "fleet serve with hostile rules: SIGTERM, exit 0" "$SERVE_RC" 0
else
    fail "fleet serve with hostile rules starts within 60 s" "$(cat "$SERVE_LOG")"
fi

# --- serve: a corrupt history is kept aside, not written over -----------------
mkdir -m 0700 "$WORK/state"
HISTORY=$WORK/state/history.json
printf '{"schema": 1, "gpus": {"GPU-x": "not a record"}}\n' >"$HISTORY"
chmod 0600 "$HISTORY"
if start_serve history --demo --interval 1s --listen 127.0.0.1:0 --rules "$RULES" --history "$HISTORY"; then
    wait_for "serve: says the history was kept aside" 10 grep -q "kept aside as $HISTORY.corrupt-" "$SERVE_LOG"
    aside=$(find "$WORK/state" -name 'history.json.corrupt-*' | head -1)
    expect_eq "serve: the corrupt history is kept, as it was" "$(cat "$aside" 2>/dev/null)" '{"schema": 1, "gpus": {"GPU-x": "not a record"}}'
    wait_for "serve: a fresh history is written" 10 grep -q '"GPU-3f8a2c1e' "$HISTORY"
    stop_serve TERM
else
    fail "serve with a corrupt history starts" "$(cat "$SERVE_LOG")"
fi

finish
