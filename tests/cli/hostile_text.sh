#!/usr/bin/env bash
# Hostile text from sources: control characters (ESC, CR, NUL,
# C1) and bidirectional controls in container, job and label names never
# leave gpuledger raw — not in ls, check, /metrics label values or the page
# — and JSON stays valid; names are bounded (a 1 MB container name, a 50 MB
# node name in a replay) and marked as cut.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
out="" err="" # what run leaves (with $rc)
NONE=$WORK/no-rules
mkdir "$NONE"

# The demo node with a hostile container name (every kind of control, a
# bidi override, 1 MB long), a hostile Nomad job label and, in big.json, a
# 50 MB node name.
"$GPULEDGER" snapshot --demo >"$WORK/demo.json"
cat >"$WORK/make.lua" <<'LUA'
  local cjson = require "cjson"
  local f = assert(io.open(arg[1])); local s = cjson.decode(f:read("a")); f:close()
  local containers = s.sources.docker.containers
  containers[3].Name = "/evil\27[2J\r\0\u{9b}\u{202e}gnp.exe" .. ("x"):rep(1024 * 1024)
  containers[1].Config.Labels["com.hashicorp.nomad.job_name"] = "job\27]0;pwn\7\u{2066}\r"
  local out = assert(io.open(arg[2], "w")); out:write(cjson.encode(s)); out:close()
  s.node = ("n"):rep(50 * 1024 * 1024)
  out = assert(io.open(arg[3], "w")); out:write(cjson.encode(s)); out:close()
LUA
lua5.4 "$WORK/make.lua" "$WORK/demo.json" "$WORK/evil.json" "$WORK/big.json"

# raw_controls TEXT: the control and bidi characters TEXT holds, as hex
# (tab and newline allowed); empty when none.
raw_controls() {
    printf '%s' "$1" | LC_ALL=C grep -aoP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]' | od -An -tx1 | head -3
}

run ls --replay "$WORK/evil.json" --rules "$NONE"
expect_rc "ls: exit 0" 0
expect_eq "ls: no raw control or bidi character" "$(raw_controls "$out")" ""
expect_in "ls: the name is there, its controls replaced" "$out" "evil"
if [ "${#out}" -lt 100000 ]; then pass "ls: a 1 MB name prints small (${#out} bytes)"; else fail "ls: bounded" "${#out} bytes"; fi
run ls --json --replay "$WORK/evil.json" --rules "$NONE"
expect_lua "ls --json: valid JSON, the name cut and marked" "$out" \
    'for _, g in ipairs(j.entries) do for _, t in ipairs(g.tenants) do if (t.container or ""):find("evil", 1, true) then return #t.container < 400 and t.container:sub(-8) == "…[cut]" end end end'
run check --replay "$WORK/evil.json" --rules "$NONE"
expect_eq "check: no raw control or bidi character" "$(raw_controls "$out")" ""
expect_in "check: the hostile container is judged" "$out" "container evil"
run check --json --replay "$WORK/evil.json" --rules "$NONE"
expect_lua "check --json: valid JSON" "$out" 'return #j.findings > 0'

started=$(date +%s)
out=$(timeout -s KILL 60 "$GPULEDGER" ls --replay "$WORK/big.json" --rules "$NONE" 2>&1)
took=$(($(date +%s) - started))
if [ "$took" -le 30 ]; then pass "ls of a 50 MB node name: ${took}s"; else fail "ls of a 50 MB node name within 30 s" "${took}s"; fi
if [ "${#out}" -lt 100000 ]; then pass "ls of a 50 MB node name prints small (${#out} bytes)"; else fail "ls: node name bounded" "${#out} bytes"; fi

if start_serve text --replay "$WORK/evil.json" --interval 1s --listen 127.0.0.1:0 --rules "$NONE"; then
    http GET "$URL/metrics"
    expect_eq "/metrics: 200" "$status" 200
    expect_eq "/metrics: no raw control or bidi character" "$(raw_controls "$body")" ""
    expect_in "/metrics: the hostile job label, escaped" "$body" 'nomad_job="job'
    if need_program promtool prometheus; then
        curl -s "$URL/metrics" | promtool check metrics >"$WORK/promtool.out" 2>&1
        expect_not_in "/metrics: promtool reads it" "$(cat "$WORK/promtool.out")" "error"
    else
        skip "/metrics through promtool" "promtool could not be installed"
    fi
    http GET "$URL/"
    expect_eq "the page: no raw control or bidi character" "$(raw_controls "$body")" ""
    http GET "$URL/ledger"
    expect_lua "/ledger: valid JSON" "$body" 'return #j.entries == 5'
    stop_serve TERM
else
    fail "serve --replay of the hostile snapshot starts" "$(cat "$SERVE_LOG")"
fi

finish
