#!/usr/bin/env bash
# Hostile site files (issue 10): rules that never give the program back — a
# message handler that loops (in evaluate and at load time), a rule that
# changes its own table after it was checked, single C calls that run for
# minutes (string.rep, table.move, a plain string.find, a backtracking
# pattern) — and a site renderer that loops. Every command ends; each such
# file is a rule-error naming it while the other rules' findings stand;
# serve keeps refreshing and answering, says when its report is stale
# (/healthz 503 past three intervals) and stops at SIGTERM. Each command
# runs under `timeout`, so that a hang fails the test instead of holding it.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
out="" err="" # what run leaves (with $rc)
unset GPULEDGER_RULES GPULEDGER_SCRIPTS

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
    bounded "check with $name.lua" 15 check --demo --rules "$dir"
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
bounded "rules" 30 rules --rules "$ALL"
expect_rc "rules: exit 1 (rule errors)" 1
expect_in "rules: the good rule is listed" "$out" "good-one"
expect_in "rules: the load-time loop is named" "$err" "$ALL/loadtime.lua: deadline of"
bounded "rules --check" 30 rules --check "$ALL"
expect_rc "rules --check: exit 1" 1
expect_in "rules --check: the evaluate loop is named" "$out" "$ALL/handler.lua: deadline of"
expect_in "rules --check: string.rep is named" "$out" "$ALL/rep.lua: deadline of"
expect_in "rules --check: the good rule's findings stand" "$out" "the good rule ran"
bounded "rules --prometheus" 30 rules --prometheus --rules "$ALL"
expect_in "rules --prometheus: the good rule's alert" "$out" "GPULedgerGoodOne"

# --- a site renderer that loops -------------------------------------------------
SCRIPTS=$WORK/scripts
mkdir -p "$SCRIPTS/gpuledger/render"
printf '%s\n' "$LOOP" >"$SCRIPTS/gpuledger/render/table.lua"
bounded "ls with a looping renderer" 15 ls --demo --rules "$WORK/rules-pwned" --scripts "$SCRIPTS"
expect_rc "ls with a looping renderer: exit 1" 1
expect_in "ls with a looping renderer: says why" "$err" "rendering: deadline of"
bounded "check with a looping renderer" 15 check --demo --rules "$WORK/rules-pwned" --scripts "$SCRIPTS"
expect_rc "check with a looping renderer: exit 1" 1
rm "$SCRIPTS/gpuledger/render/table.lua"

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
wait_for "serve: SIGHUP takes the new set (it loads)" 15 grep -q "reloaded the rule set" "$SERVE_LOG"
wait_for "serve: the looping rule is a rule-error naming it" 15 body_has "$URL/findings" "$RULES/handler.lua: deadline of"
http GET "$URL/findings"
expect_in "serve: the other rules' findings stand" "$body" "the good rule ran"
http GET "$URL/healthz"
expect_eq "serve: /healthz answers 200 while refreshes go on" "$status" 200
at1=$(jq_lua 'j.at' "$(curl -s "$URL/ledger")")
sleep 4
at2=$(jq_lua 'j.at' "$(curl -s "$URL/ledger")")
if [ "$at1" != "$at2" ]; then pass "serve: keeps refreshing ($at1, then $at2)"; else fail "serve: keeps refreshing" "at stays $at1"; fi

printf '%s\n' "$LOOP" >"$SCRIPTS/gpuledger/render/metrics.lua"
wait_for "serve: a refresh past its deadline makes /healthz 503" 30 sh -c "curl -s -o /dev/null -w '%{http_code}' '$URL/healthz' | grep -q 503"
http GET "$URL/healthz"
expect_in "serve: /healthz says the report is stale" "$body" "stale: the last good report is"
expect_in "serve: /healthz says why" "$body" "deadline of"
http GET "$URL/metrics"
expect_eq "serve: /metrics keeps the last good report" "$status" 200
expect_in "serve: the last good /metrics" "$body" "gpuledger_findings"
expect_not_in "serve: no traceback in the log" "$(cat "$SERVE_LOG")" "traceback"
rm "$SCRIPTS/gpuledger/render/metrics.lua"
wait_for "serve: /healthz 200 again once refreshes succeed" 20 sh -c "curl -s -o /dev/null -w '%{http_code}' '$URL/healthz' | grep -q 200"

kill -HUP "$SERVE_PID"
sleep 0.5
started=$(date +%s)
stop_serve TERM
took=$(($(date +%s) - started))
expect_eq "serve: SIGHUP then SIGTERM: exit 0" "$SERVE_RC" 0
if [ "$took" -le 10 ]; then pass "serve: SIGTERM after SIGHUP stops it in ${took}s (<= 10)"; else fail "serve: SIGTERM promptly" "took ${took}s"; fi
expect_clean_log "serve" "$SERVE_LOG"

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
