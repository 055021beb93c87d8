#!/usr/bin/env bash
# gpuledger serve, the whole binary on loopback (docs/contract.md, "HTTP",
# "Metrics", "History"): every endpoint and its headers, methods other than GET and HEAD,
# unknown and `..` paths, a 100 KB URL, 500 idle connections held open while
# 50 scrapes are answered, a source failing mid-run (one stderr line when it
# starts failing, one when it is read again), SIGHUP with a broken rules
# directory (its errors shown until a good reload), history written every refresh and read (never written)
# by ls and check, a corrupt history and an unwritable history directory,
# SIGTERM and SIGINT, listen failures and IPv6.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
out="" err="" status="" headers="" body="" size=0 since="" restored="" URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

command -v curl >/dev/null || { skip "serve" "curl is not installed"; finish; }

RULES=$WORK/rules
mkdir -p "$RULES"
cat >"$RULES/site_check.lua" <<'EOF'
-- a site rule that never fires: its code still gets a zero series
return { code = "site-check", level = "WARN", doc = "a site's own check", evaluate = function() end }
EOF
HISTORY=$WORK/state/history.json
SNAP=$WORK/snap.json
"$GPULEDGER" snapshot --demo >"$SNAP"

# snap_with OUT LUA: writes the demo snapshot changed by the Lua statements
# LUA (the decoded document is `s`) to OUT, atomically.
snap_with() {
    LUA=$2 lua5.4 -e 'local cjson = require "cjson"
local s = cjson.decode(io.read("a"))
load(os.getenv("LUA"), "change", "t", setmetatable({s = s, cjson = cjson}, {__index = _G}))()
io.write(cjson.encode(s))' <"$SNAP" >"$1.tmp" && mv "$1.tmp" "$1"
}

# === one serve on the demo node =============================================
if ! start_serve demo --demo --listen 127.0.0.1:0 --interval 1s --history "$HISTORY" --rules "$RULES"; then
    fail "serve starts" "no banner" "$(cat "$SERVE_LOG")"
    finish
fi
pass "serve starts"
expect_in "banner" "$(cat "$SERVE_LOG")" "$("$GPULEDGER" version) serving on 127.0.0.1:"
expect_in "banner names the refresh" "$(cat "$SERVE_LOG")" "(refresh 1s)"

# --- the endpoints ------------------------------------------------------------
http GET "$URL/metrics"
expect_eq "/metrics 200" "$status" 200
expect_eq "/metrics content type" "$(header content-type)" "text/plain; version=0.0.4; charset=utf-8"
expect_security_headers "/metrics"
expect_in "/metrics up 1" "$body" 'gpuledger_up{node="gpu-demo-01"} 1'
expect_in "/metrics findings" "$body" 'gpuledger_findings{node="gpu-demo-01",code="unreserved-tenant",level="BAD"} 1'
expect_in "/metrics zero series of a site code" "$body" 'gpuledger_findings{node="gpu-demo-01",code="site-check",level="WARN"} 0'
# the default rules (every code of rules/), and the site's one
loaded=$(($(grep -c '^  code = "' "$SRC"/rules/*.lua | awk -F: '{ n += $2 } END { print n }') + 1))
expect_in "/metrics rules loaded" "$body" "gpuledger_rules_loaded{node=\"gpu-demo-01\"} $loaded"
expect_in "/metrics rule errors" "$body" 'gpuledger_rule_errors{node="gpu-demo-01"} 0'
version=$("$GPULEDGER" version)
expect_in "/metrics build info: the version and Lua's" "$body" "gpuledger_build_info{version=\"${version#gpuledger }\",lua=\"5.4\"} 1"
expect_in "/metrics counters" "$body" '# TYPE gpuledger_gpu_state_seconds_total counter'
expect_not_in "/metrics: no job label" "$body" ',job="'
expect_not_in "/metrics: no process name" "$body" 'HandBrakeCLI'

http HEAD "$URL/metrics"
expect_eq "HEAD /metrics 200" "$status" 200
expect_security_headers "HEAD /metrics"
# The counters change at each refresh (every second), and so may the length
# of their digits: a HEAD and the GET after it are compared until a pair
# falls within one refresh (five tries).
for _ in 1 2 3 4 5; do
    http HEAD "$URL/metrics"
    head_length=$(header content-length)
    http GET "$URL/metrics"
    [ "$head_length" = "$size" ] && break
done
expect_eq "HEAD's Content-Length is GET's" "$head_length" "$size"
# HEAD over a bare HTTP/1.0 connection: the headers, then nothing.
host=${URL#http://}
raw=$(exec 3<>"/dev/tcp/${host%:*}/${host##*:}" && printf 'HEAD /metrics HTTP/1.0\r\n\r\n' >&3 && timeout 5 cat <&3)
expect_eq "HEAD sends no body" "$(printf '%s' "$raw" | tr -d '\r' | sed '1,/^$/d' | wc -c)" 0
expect_in "HEAD answers 200" "$raw" "HTTP/1.1 200 OK"

http GET "$URL/ledger"
expect_eq "/ledger 200" "$status" 200
expect_eq "/ledger content type" "$(header content-type)" "application/json"
expect_security_headers "/ledger"
expect_eq "/ledger schema 1, the demo's GPUs" "$(jq_lua '("%d %d %s"):format(j.schema, #j.entries, j.entries[1].uuid)' "$body")" \
    "1 5 GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01"

http GET "$URL/findings"
expect_eq "/findings 200" "$status" 200
expect_eq "/findings content type" "$(header content-type)" "application/json"
expect_eq "/findings schema, worst, count" "$(jq_lua '("%d %s %d"):format(j.schema, j.worst, #j.findings)' "$body")" "1 ERROR 21"

http GET "$URL/healthz"
expect_eq "/healthz 200" "$status" 200
expect_eq "/healthz ok" "$body" "ok"
expect_security_headers "/healthz"

http GET "$URL/"
expect_eq "/ 200" "$status" 200
expect_eq "/ content type" "$(header content-type)" "text/html; charset=utf-8"
expect_security_headers "/"
expect_in "/ refreshes every second" "$body" '<meta http-equiv="refresh" content="1">'
expect_in "/ links the stylesheet" "$body" '<link rel="stylesheet" href="style.css">'
expect_in "/ shows a GPU" "$body" "NVIDIA GeForce RTX 4090"
expect_in "/ shows the version" "$body" "<footer>$version · "
expect_not_in "/ has no script" "$body" "<script"
expect_not_in "/ has no inline style" "$body" "style="

http GET "$URL/style.css"
expect_eq "/style.css 200" "$status" 200
expect_eq "/style.css content type" "$(header content-type)" "text/css; charset=utf-8"
expect_in "/style.css dark scheme" "$body" "prefers-color-scheme: dark"

# --- what is not there --------------------------------------------------------
http GET "$URL/nope"
expect_eq "/nope 404" "$status" 404
expect_eq "/nope body" "$body" "404 page not found"
expect_security_headers "/nope 404"
for path in "/../../../etc/passwd" "/%2e%2e/%2e%2e/etc/passwd" "/metrics/../ledger" "/style.css/.." "//metrics"; do
    http GET "$URL$path" --path-as-is
    expect_eq "$path: 404" "$status" 404
done
for method in POST PUT DELETE OPTIONS PATCH; do
    http "$method" "$URL/metrics" -d 'data=1'
    expect_eq "$method: 405" "$status" 405
    expect_eq "$method: Allow" "$(header allow)" "GET, HEAD"
    expect_in "$method: says it is read-only" "$body" "read-only"
    expect_security_headers "$method 405"
done
http GET "$URL/$(head -c 9000 /dev/zero | tr '\0' a)"
expect_eq "a 9 KB URL: 414" "$status" 414
expect_security_headers "9 KB URL 414"
http GET "$URL/$(head -c 102400 /dev/zero | tr '\0' a)"
case $status in 414 | 404 | 431) pass "a 100 KB URL: $status" ;; *) fail "a 100 KB URL: 414 or 404" "got $status" ;; esac
# A GET that asks "Expect: 100-continue" gets its answer, with the security
# headers, and no "100 Continue" of libmicrohttpd's (which has none).
expect_head=$(python3 - "${URL#http://}" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
data = b""
while b"\r\n\r\n" not in data:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.split(b"\r\n\r\n")[0].decode().replace("\r", ""))
PY
)
expect_eq "Expect: 100-continue: answered at once" "$(printf '%s\n' "$expect_head" | head -1)" "HTTP/1.1 200 OK"
expect_in "Expect: 100-continue: with the security headers" "$expect_head" "X-Frame-Options: DENY"
http GET "$URL/healthz"
expect_eq "still serving after the bad requests" "$status" 200

# --- 500 idle connections while 50 scrapes are answered -----------------------
if command -v python3 >/dev/null; then
    port=${URL##*:}
    # 500 connections from 10 loopback addresses (50 each, under the per-IP
    # limit), held open silently; and 200 more from one address (a flood:
    # the per-IP limit turns most away). Prints how many it holds.
    cat >"$WORK/idle.py" <<'EOF'
import socket, sys, time
port, ready = int(sys.argv[1]), sys.argv[2]
held = []
def open_from(address, count):
    for _ in range(count):
        s = socket.socket()
        s.settimeout(5)
        try:
            s.bind((address, 0))
            s.connect(("127.0.0.1", port))
            held.append(s)
        except OSError:
            s.close()
for i in range(10):
    open_from("127.0.0.%d" % (2 + i), 50)
first = len(held)
open_from("127.0.0.12", 200)
with open(ready, "w") as f:
    f.write("%d %d\n" % (first, len(held) - first))
time.sleep(60)
EOF
    python3 "$WORK/idle.py" "$port" "$WORK/idle.ready" &
    idle_pid=$!
    at_exit "stop_pid $idle_pid"
    wait_for "the idle connections are open" 30 test -s "$WORK/idle.ready"
    expect_eq "500 idle connections held" "$(cut -d' ' -f1 "$WORK/idle.ready")" 500
    ok=0 slow=0
    for _ in $(seq 50); do
        got=$(curl -s --max-time 5 -o "$WORK/scrape" -w '%{http_code} %{time_total}' "$URL/metrics")
        [ "${got%% *}" = 200 ] && [ "$(wc -c <"$WORK/scrape")" -gt 1000 ] && ok=$((ok + 1))
        awk -v t="${got#* }" 'BEGIN { exit !(t > 1.0) }' && slow=$((slow + 1))
    done
    expect_eq "50 scrapes answered while 700 connections are held" "$ok" 50
    expect_eq "no scrape took over a second" "$slow" 0
    stop_pid "$idle_pid"
    http GET "$URL/healthz"
    expect_eq "serving after the idle connections went" "$status" 200
else
    skip "500 idle connections" "python3 is not installed"
fi

# --- history written every refresh --------------------------------------------
wait_for "history file written" 10 test -s "$HISTORY"
expect_eq "history parses, schema 1, every GPU" \
    "$(jq_lua '("%d %s"):format(j.schema, j.gpus["GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01"].state)' "$(cat "$HISTORY")")" "1 held"
wait_for "/ledger carries stateSince" 10 body_has "$URL/ledger" '"stateSince"'
wait_for "held counter grows" 10 sh -c "curl -s '$URL/metrics' | grep -q 'state=\"held\"} [1-9]'"
http GET "$URL/metrics"
expect_in "/metrics since timestamp" "$body" 'gpuledger_gpu_state_since_timestamp_seconds{node="gpu-demo-01",gpu="1"'
expect_in "/metrics job counter" "$body" 'gpuledger_job_gpu_seconds_total{node="gpu-demo-01",namespace="video",nomad_job="restreamer",use="held"}'
expect_eq "the history is this user's alone (0600)" "$(stat -c %a "$HISTORY")" 600

# --- SIGHUP: a broken rules directory keeps the last good set -----------------
echo 'return {' >"$RULES/broken.lua"
kill -HUP "$SERVE_PID"
wait_for "SIGHUP with a broken rule says it keeps the set" 10 grep -q "keeping the last good rule set" "$SERVE_LOG"
expect_in "SIGHUP names the broken file" "$(cat "$SERVE_LOG")" "broken.lua"
# The refused set's errors show until a good reload: in the metric an alert
# watches, the findings, /healthz and the page; the last good rules still judge.
wait_for "after a bad SIGHUP: gpuledger_rule_errors counts the refused file" 10 \
    body_has "$URL/metrics" 'gpuledger_rule_errors{node="gpu-demo-01"} 1'
http GET "$URL/metrics"
expect_in "after a bad SIGHUP: the site code stays" "$body" 'code="site-check"'
expect_in "after a bad SIGHUP: one rule-error finding" "$body" 'gpuledger_findings{node="gpu-demo-01",code="rule-error",level="ERROR"} 1'
expect_in "after a bad SIGHUP: the last good rules still judge" "$body" 'gpuledger_findings{node="gpu-demo-01",code="unreserved-tenant",level="BAD"} 1'
http GET "$URL/findings"
expect_eq "after a bad SIGHUP: the rule-error finding names the refused reload and the file" \
    "$(jq_lua '(function() local n = 0; for _, f in ipairs(j.findings) do if f.code == "rule-error" and f.level == "ERROR" and f.message:find("SIGHUP reload refused", 1, true) and f.message:find("broken.lua", 1, true) then n = n + 1 end end; return n end)()' "$body")" 1
http GET "$URL/healthz"
expect_eq "after a bad SIGHUP: /healthz still 200 (serving with the last good rules)" "$status" 200
expect_in "after a bad SIGHUP: /healthz says why" "$body" "rule-error: SIGHUP reload refused"
http GET "$URL/"
expect_in "after a bad SIGHUP: the page shows the rule-error" "$body" "SIGHUP reload refused"
rm "$RULES/broken.lua"
cat >"$RULES/second.lua" <<'EOF'
return { code = "second-check", level = "BAD", evaluate = function() end }
EOF
kill -HUP "$SERVE_PID"
wait_for "SIGHUP with good rules reloads them" 10 grep -q "reloaded the rule set" "$SERVE_LOG"
wait_for "the new rule's code appears" 10 body_has "$URL/metrics" 'code="second-check",level="BAD"} 0'
http GET "$URL/metrics"
expect_in "rules loaded counts the new rule" "$body" "gpuledger_rules_loaded{node=\"gpu-demo-01\"} $((loaded + 1))"
expect_in "after a good reload: no rule error left" "$body" 'gpuledger_rule_errors{node="gpu-demo-01"} 0'
http GET "$URL/healthz"
expect_eq "after a good reload: /healthz is ok again" "$body" "ok"

# --- SIGTERM: exit 0, history saved -------------------------------------------
before=$(jq_lua 'j.gpus["GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01"].seconds.held' "$(cat "$HISTORY")")
stop_serve TERM
expect_eq "SIGTERM: exit 0" "$SERVE_RC" 0
expect_in "SIGTERM: says so" "$(cat "$SERVE_LOG")" "SIGTERM: stopped"
expect_clean_log "SIGTERM" "$SERVE_LOG"
after=$(jq_lua 'j.gpus["GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01"].seconds.held' "$(cat "$HISTORY")")
expect_eq "history saved, counters kept" "$(awk -v a="$after" -v b="$before" 'BEGIN { print (a >= b && a > 0) ? "yes" : "no: " b " then " a }')" yes
# (checked once serve has stopped: while it runs, a refresh may be writing the next one)
expect_eq "no temp file beside the history" "$(find "$(dirname "$HISTORY")" -name '*.tmp' | wc -l)" 0

# --- ls and check read the history, never write it ----------------------------
sum_before=$(cksum <"$HISTORY")
run check --demo --history "$HISTORY" --rules "$RULES"
expect_rc "check --history exits 0" 0
expect_in "check --history knows since when" "$out" "but no process or container holds it, for"
run ls --demo --history "$HISTORY" --json --rules "$RULES"
expect_in "ls --history annotates stateSince" "$out" '"stateSince"'
expect_eq "ls and check leave the history as it was" "$(cksum <"$HISTORY")" "$sum_before"
echo '{not json' >"$WORK/corrupt.json"
run check --demo --history "$WORK/corrupt.json" --json --rules "$RULES"
expect_rc "check with a corrupt history exits 0" 0
expect_eq "a corrupt history is a source-unavailable ERROR" \
    "$(jq_lua 'j.worst .. " " .. j.findings[1].code .. " " .. j.findings[1].message:sub(1, 9)' "$out")" "ERROR source-unavailable history: "
run check --demo --history "$WORK/corrupt.json" --exit-on error --rules "$RULES"
expect_rc "… and check --exit-on error exits 3" 3
expect_eq "check never rewrites a corrupt history" "$(cat "$WORK/corrupt.json")" '{not json'

# --- a history another user could have written: refused, never read -----------
mkdir -m 1777 "$WORK/shared"
echo '{"schema": 1, "gpus": {}, "jobs": {}}' >"$WORK/shared/history.json"
run check --demo --history "$WORK/shared/history.json" --json --rules "$RULES"
expect_rc "check with a history in a directory others can write exits 0" 0
expect_in "… which is refused, saying why" "$out" "refused: the directory $WORK/shared is writable by other users (mode 1777)"

# --- restart keeps the history: counters continue -----------------------------
if start_serve restart --demo --listen 127.0.0.1:0 --interval 1s --history "$HISTORY" --rules "$RULES"; then
    wait_for "after a restart the counters continue from the file" 10 sh -c \
        "curl -s '$URL/metrics' | awk -v b='$after' '/gpu=\"0\".*state=\"held\"}/ && \$2 > b { found = 1 } END { exit !found }'"
    stop_serve INT
    expect_eq "SIGINT: exit 0" "$SERVE_RC" 0
    expect_clean_log "SIGINT" "$SERVE_LOG"
else
    fail "restart" "$(cat "$SERVE_LOG")"
fi

# --- a corrupt history: warning, fresh start ----------------------------------
echo '{not json' >"$WORK/corrupt-serve.json"
if start_serve corrupt --demo --listen 127.0.0.1:0 --interval 1s --history "$WORK/corrupt-serve.json" --rules "$RULES"; then
    expect_in "corrupt history: a warning" "$(cat "$SERVE_LOG")" "starting a fresh history"
    http GET "$URL/healthz"
    expect_eq "corrupt history: healthz stays 200" "$status" 200
    wait_for "corrupt history: replaced by a good one" 10 sh -c "lua5.4 -e 'require(\"cjson\").decode(io.read(\"a\"))' <'$WORK/corrupt-serve.json'"
    stop_serve TERM
    expect_eq "corrupt history: exit 0" "$SERVE_RC" 0
else
    fail "serve with a corrupt history starts" "$(cat "$SERVE_LOG")"
fi

# --- an unwritable history directory: a warning each refresh, serve goes on ---
echo "a file" >"$WORK/blocker"
if start_serve unwritable --demo --listen 127.0.0.1:0 --interval 1s --history "$WORK/blocker/history.json" --rules "$RULES"; then
    wait_for "unwritable: warned on the next refreshes too" 10 sh -c "[ \$(grep -c 'gpuledger: history: ' '$SERVE_LOG') -ge 2 ]"
    expect_in "unwritable: the warning names the file" "$(cat "$SERVE_LOG")" "$WORK/blocker/history.json"
    http GET "$URL/metrics"
    expect_eq "unwritable: still serving" "$status" 200
    expect_in "unwritable: still up" "$body" 'gpuledger_up{node="gpu-demo-01"} 1'
    stop_serve TERM
    expect_eq "unwritable: exit 0" "$SERVE_RC" 0
else
    fail "serve with an unwritable history starts" "$(cat "$SERVE_LOG")"
fi

# --- a source failing mid-run (a --replay file changed under it) --------------
cp "$SNAP" "$WORK/live.json"
if start_serve replay --replay "$WORK/live.json" --listen 127.0.0.1:0 --interval 1s --rules "$RULES"; then
    wait_for "replay: since known after two reads" 10 body_has "$URL/metrics" "gpuledger_gpu_state_since_timestamp_seconds{"
    snap_with "$WORK/live.json" 's.sources.docker = {ok = false, endpoint = "unix:///var/run/docker.sock", error = "docker unix:///var/run/docker.sock: connection refused"}'
    wait_for "docker failing: up 0" 10 body_has "$URL/metrics" 'gpuledger_up{node="gpu-demo-01"} 0'
    http GET "$URL/healthz"
    expect_eq "docker failing: healthz 503" "$status" 503
    expect_eq "docker failing: healthz names it" "$body" "docker unix:///var/run/docker.sock: connection refused"
    http GET "$URL/"
    expect_in "docker failing: the page lists the source" "$body" "Sources that could not be read"
    expect_in "docker failing: with an ERROR badge" "$body" '<span class="level ERROR">ERROR</span> docker unix:///var/run/docker.sock: connection refused'
    expect_in "docker failing: the page says the read is partial" "$body" "This read is partial"
    expect_not_in "docker failing: no since claimed on the page" "$body" 'class="since"'
    http GET "$URL/metrics"
    expect_not_in "docker failing: no since claimed in metrics" "$body" "gpuledger_gpu_state_since_timestamp_seconds{"
    snap_with "$WORK/live.json" 's.sources.nvidia = {ok = false, binary = "nvidia-smi", error = "nvidia-smi query-gpu: nvidia-smi: exit status 9: NVIDIA-SMI has failed"}'
    wait_for "nvidia failing: the GPU rows go" 10 body_has "$URL/" "No GPU data from this read"
    http GET "$URL/metrics"
    expect_not_in "nvidia failing: no GPU samples" "$body" "gpuledger_gpu_info{"
    expect_in "nvidia failing: up 0" "$body" 'gpuledger_up{node="gpu-demo-01"} 0'
    http GET "$URL/ledger"
    expect_eq "nvidia failing: the ledger has no GPUs and the error" "$(jq_lua '#j.entries .. " " .. j.errors[1]:sub(1, 20)' "$body")" "0 nvidia-smi query-gpu"
    echo '{not json' >"$WORK/live.json"
    wait_for "replay unreadable: healthz 503 names the file" 10 body_has "$URL/healthz" "$WORK/live.json"
    restored=$(date +%s)
    cp "$SNAP" "$WORK/live.json"
    wait_for "all read again: up 1" 10 body_has "$URL/metrics" 'gpuledger_up{node="gpu-demo-01"} 1'
    http GET "$URL/healthz"
    expect_eq "all read again: healthz 200" "$status" 200
    sleep 2 # a few more good refreshes: they add no line
    # One stderr line when a source starts failing and one when it is read
    # again, however many refreshes it fails for (journalctl tells the story).
    log=$(cat "$SERVE_LOG")
    expect_eq "stderr: docker failing, said once" "$(grep -c '^gpuledger: source docker failing: docker unix:///var/run/docker.sock: connection refused$' <<<"$log")" 1
    expect_eq "stderr: docker read again, said once" "$(grep -c '^gpuledger: source docker read again$' <<<"$log")" 1
    expect_eq "stderr: nvidia failing, said once" "$(grep -c '^gpuledger: source nvidia failing: nvidia-smi query-gpu' <<<"$log")" 1
    expect_eq "stderr: nvidia read again, said once" "$(grep -c '^gpuledger: source nvidia read again$' <<<"$log")" 1
    expect_eq "stderr: the unreadable replay file, said once" "$(grep -c "^gpuledger: source input failing: .*live.json" <<<"$log")" 1
    expect_eq "stderr: and once read again" "$(grep -c '^gpuledger: source input read again$' <<<"$log")" 1
    expect_eq "stderr: nothing else about sources" "$(grep -c '^gpuledger: source ' <<<"$log")" 6
    since=$(curl -s "$URL/metrics" | awk '/^gpuledger_gpu_state_since_timestamp_seconds\{.*gpu="1"/ { print int($2) }')
    expect_eq "the first good read after the failure starts the clock again" \
        "$(awk -v s="$since" -v t="$restored" 'BEGIN { print (s != "" && s >= t) ? "yes" : "no: since " s ", restored " t }')" yes
    stop_serve TERM
    expect_eq "replay: exit 0" "$SERVE_RC" 0
    expect_clean_log "replay" "$SERVE_LOG"
else
    fail "serve --replay starts" "$(cat "$SERVE_LOG")"
fi

# --- a hostile container name is escaped on the page --------------------------
snap_with "$WORK/hostile.json" 's.sources.docker.containers[3].Name = "/<script>alert(\"x\")</script>"'
if start_serve hostile --replay "$WORK/hostile.json" --listen 127.0.0.1:0 --interval 1s --rules "$RULES"; then
    http GET "$URL/"
    expect_in "hostile name escaped" "$body" '&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;'
    expect_not_in "no script on the page" "$body" "<script"
    http GET "$URL/metrics"
    expect_in "hostile name escaped in a label" "$body" 'container="<script>alert(\"x\")</script>"'
    stop_serve TERM
else
    fail "serve with a hostile name starts" "$(cat "$SERVE_LOG")"
fi

# --- site scripts: looked for at every refresh ---------------------------------
# An empty scripts directory (as the .deb installs) renders as none does; a
# renderer put in it is used at a next refresh, and one removed stops being.
SCRIPTS=$WORK/site-scripts
mkdir -p "$SCRIPTS"
if start_serve scripts --demo --listen 127.0.0.1:0 --interval 1s --rules "$RULES" --scripts "$SCRIPTS"; then
    http GET "$URL/"
    expect_in "an empty scripts directory: the program's page" "$body" "<title>gpuledger · "
    mkdir -p "$SCRIPTS/gpuledger/render"
    sed 's/<title>gpuledger · /<title>site page · /' "$SRC/lua/gpuledger/render/html.lua" >"$WORK/html.lua"
    mv "$WORK/html.lua" "$SCRIPTS/gpuledger/render/html.lua"
    wait_for "a renderer put in the scripts directory is used without a restart" 10 body_has "$URL/" "<title>site page · "
    rm "$SCRIPTS/gpuledger/render/html.lua"
    wait_for "the renderer removed: the program's page again" 10 body_has "$URL/" "<title>gpuledger · "
    stop_serve TERM
    expect_clean_log "site scripts" "$SERVE_LOG"
else
    fail "serve with an empty scripts directory starts" "$(cat "$SERVE_LOG")"
fi

# --- listening: failures, IPv6, dual stack -----------------------------------
if start_serve holder --demo --listen 127.0.0.1:0 --interval 1s --rules "$RULES"; then
    taken=${URL##*:}
    run serve --demo --listen "127.0.0.1:$taken" --interval 1s --rules "$RULES"
    expect_rc "a port in use: exit 1" 1
    expect_in "a port in use: says why" "$err" "gpuledger: listen tcp 127.0.0.1:$taken: bind: Address already in use"
    stop_serve TERM
fi
# (a --listen of another shape is a usage error: usage.sh)
run serve --demo --interval 0 --rules "$RULES"
expect_rc "--interval 0: usage error" 2
if [ -e /proc/net/if_inet6 ] && grep -q ' lo$' /proc/net/if_inet6; then
    if start_serve v6 --demo --listen '[::1]:0' --interval 1s --rules "$RULES"; then
        http GET "$URL/healthz"
        expect_eq "[::1]: answers" "$status" 200
        stop_serve TERM
    else
        fail "serve on [::1]" "$(cat "$SERVE_LOG")"
    fi
    if start_serve dual --demo --listen ':0' --interval 1s --rules "$RULES"; then
        port=${URL##*:}
        http GET "http://127.0.0.1:$port/healthz"
        expect_eq ":PORT answers on IPv4" "$status" 200
        http GET "http://[::1]:$port/healthz"
        expect_eq ":PORT answers on IPv6" "$status" 200
        stop_serve TERM
    else
        fail "serve on :0" "$(cat "$SERVE_LOG")"
    fi
else
    skip "IPv6 listening" "no IPv6 loopback here"
fi

finish
