#!/usr/bin/env bash
# gpuledger serve under attack, on loopback: 1,500 slowloris
# connections from 30 addresses, each dripping a header byte every two
# seconds and reopened whenever the server closes it, while scrapes from
# another address keep being answered; a single connection dripping its head
# (or a body) is closed within a few seconds; a GET with 500 query arguments is answered
# at once; a path with an encoded NUL is 400, with the security headers; a
# query string answers its path, a trailing slash or other spelling is 404,
# and HEAD answers every path as GET does, without a body.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
status="" headers="" body="" URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

command -v curl >/dev/null || { skip "serve under attack" "curl is not installed"; finish; }
command -v python3 >/dev/null || { skip "serve under attack" "python3 is not installed"; finish; }

if ! start_serve attack --demo --listen 127.0.0.1:0 --interval 2s; then
    fail "serve starts" "no banner" "$(cat "$SERVE_LOG")"
    finish
fi
pass "serve starts"
port=${URL##*:}

# --- requests libmicrohttpd parses badly ---------------------------------------
query=$(python3 -c 'print("&".join("a%d=1" % i for i in range(500)))')
http GET "$URL/metrics?$query" --max-time 5
expect_eq "500 query arguments: answered at once (200, as without them)" "$status" 200
expect_in "500 query arguments: the metrics" "$body" 'gpuledger_up{node="gpu-demo-01"} 1'
http GET "$URL/metrics%00.html"
expect_eq "an encoded NUL in the path: 400" "$status" 400
expect_security_headers "an encoded NUL in the path"
http GET "$URL/metrics%2500"
expect_eq "an encoded percent sign followed by 00: 404" "$status" 404

# --- paths: a query string answers its path; any other spelling is 404 -----------
http GET "$URL/metrics?x"
expect_eq "/metrics?x: the metrics" "$status $(header content-type)" "200 text/plain; version=0.0.4; charset=utf-8"
http GET "$URL/ledger?format=x&y"
expect_lua "/ledger?format=x&y: the ledger document" "$body" "j.node == 'gpu-demo-01'"
for path in /ledger/ /metrics/ //metrics /METRICS /metrics\;x /index.html; do
    http GET "$URL$path"
    expect_eq "GET $path: 404" "$status" 404
    http HEAD "$URL$path"
    expect_eq "HEAD $path: 404" "$status" 404
done
# HEAD of each path: GET's status and content type, the security headers, no body.
for path in / /style.css /metrics /ledger /findings /healthz "/metrics?x"; do
    http GET "$URL$path"
    get="$status $(header content-type)"
    http HEAD "$URL$path"
    expect_eq "HEAD $path: as GET" "$status $(header content-type)" "$get"
    expect_security_headers "HEAD $path"
done
raw=$(exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'HEAD /ledger?x HTTP/1.0\r\n\r\n' >&3 && timeout 5 cat <&3)
expect_eq "HEAD /ledger?x sends no body" "$(printf '%s' "$raw" | tr -d '\r' | sed '1,/^$/d' | wc -c)" 0

# --- one connection dripping its head ------------------------------------------
# drip.py PORT HEAD: sends HEAD, then one byte every 0.5 s until the server
# closes the connection (30 s at most); prints how long that took.
cat >"$WORK/drip.py" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
start = time.monotonic()
s.send(sys.argv[2].encode().decode("unicode_escape").encode())
try:
    while time.monotonic() - start < 30:
        s.send(b"X")
        time.sleep(0.5)
        s.settimeout(0.01)
        try:
            if s.recv(1) == b"":
                break
        except socket.timeout:
            pass
except OSError:
    pass
print("%.0f" % (time.monotonic() - start))
PY
lived=$(python3 "$WORK/drip.py" "$port" 'GET /metrics HTTP/1.1\r\n')
if [ -n "$lived" ] && [ "$lived" -le 8 ]; then
    pass "a head dripping a byte every 0.5 s is closed within 8 s (${lived} s)"
else
    fail "a head dripping a byte every 0.5 s is closed within 8 s" "it lived ${lived:-?} s"
fi
lived=$(python3 "$WORK/drip.py" "$port" 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n')
if [ -n "$lived" ] && [ "$lived" -le 8 ]; then
    pass "a GET dripping a long body is closed within 8 s (${lived} s)"
else
    fail "a GET dripping a long body is closed within 8 s" "it lived ${lived:-?} s"
fi

# --- 1,500 slowloris connections from 30 addresses -----------------------------
python3 "$FAKES/slowloris.py" "$port" 30 50 24 "$WORK/slowloris.report" &
attacker=$!
at_exit "stop_pid $attacker"
sleep 4 # the attack fills the connection table
ok=0 times=""
for _ in $(seq 5); do
    got=$(curl -s --interface 127.0.0.200 --max-time 10 -o "$WORK/scrape" -w '%{http_code} %{time_total}' \
        "$URL/metrics")
    [ "${got%% *}" = 200 ] && grep -qF 'gpuledger_up{node="gpu-demo-01"} 1' "$WORK/scrape" && ok=$((ok + 1))
    times="$times ${got#* }"
    sleep 2
done
expect_eq "5 of 5 scrapes from 127.0.0.200 answered during the attack (took:$times s)" "$ok" 5
wait "$attacker"
report=$(cat "$WORK/slowloris.report" 2>/dev/null)
read -r _ _ _ held_max _ closed _ longest <<<"$report"
expect_eq "the attacker held 1,500 connections at once" "${held_max:-0}" 1500
if [ "${closed:-0}" -ge 1000 ] && awk -v t="${longest:-99}" 'BEGIN { exit !(t <= 12) }'; then
    pass "the server closed the slow connections, none living past 12 s ($report)"
else
    fail "the server closed the slow connections, none living past 12 s" "$report"
fi
http GET "$URL/healthz"
expect_eq "serving after the attack" "$status" 200
stop_serve TERM
expect_eq "SIGTERM after the attack: exit 0" "$SERVE_RC" 0
expect_clean_log "serve under attack" "$SERVE_LOG"
finish
