#!/usr/bin/env bash
# fleet serve (docs/contract.md, "HTTP" and "Metrics"): behind the same server as serve (security
# headers, GET and HEAD only), /fleet, /metrics (promtool's lint, then a
# real Prometheus scraping it), /healthz (503 only when no node was read), a
# poll every --interval, and the page in headless Chromium (the DOM, each
# node linked to its own page, a hostile node name as text, no CSP
# violation, light and dark screenshots kept in $GPULEDGER_BUILD_DIR/artifacts/),
# and SIGHUP reloading the rule set (a broken one refused, its errors shown
# until a good reload).
# Prometheus and Chromium are Debian's, installed when missing; each part is
# skipped with the reason when one cannot be had.
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
status="" headers="" body="" URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

command -v python3 >/dev/null || { skip "fleet serve" "needs python3 for a fake node"; finish; }
mkdir "$WORK/rules"
cp "$SRC/rules/examples/fleet_reserved_idle.lua" "$WORK/rules/" # a rule that sees the fleet
export GPULEDGER_RULES=$WORK/rules
HOSTILE='gpuf"><b>x</b><script>alert(1)</script>'

start_serve a --demo --node gpua --listen 127.0.0.1:0 --interval 1h || { fail "serve a starts" "$(cat "$SERVE_LOG")"; finish; }
NODE_A=${URL#http://}
HOSTILE=$HOSTILE lua5.4 -e 'local cjson = require "cjson"
local l = cjson.decode(io.read("a"))
l.node = os.getenv("HOSTILE")
io.write(cjson.encode(l))' <"$TESTDATA/fleet/go-ledger.json" >"$WORK/hostile.json"
fake_file_start hostile "$WORK/hostile.json" || { fail "the hostile node starts" "$(cat "$WORK/hostile.stderr")"; finish; }
NODE_H=127.0.0.1:$file_port
refusing_port 127.0.0.1
DEAD=127.0.0.1:$REFUSING_PORT

if ! start_serving fleet fleet serve --targets "$NODE_A,$NODE_H,$DEAD" --listen 127.0.0.1:0 --interval 1s --timeout 2s \
    --nomad-ui-url https://nomad.test:4646/; then
    fail "fleet serve starts" "$(cat "$SERVE_LOG")"
    finish
fi
FLEET_PID=$SERVE_PID FLEET_LOG=$SERVE_LOG
expect_in "the banner" "$(cat "$FLEET_LOG")" "$("$GPULEDGER" version) fleet serving on ${URL#http://} (poll 1s)"

# ---- the documents ----------------------------------------------------------
http GET "$URL/fleet"
expect_eq "/fleet 200" "$status" 200
expect_eq "/fleet is JSON" "$(header content-type)" "application/json"
expect_security_headers "/fleet"
expect_lua "/fleet: {at, findings, schema, summary, worst}" "$body" \
    'j.schema == 1 and j.worst == "ERROR" and #j.summary.nodes == 3 and j.summary.total.unreachable == 1 and #j.findings > 0'
first_at=$(jq_lua j.at "$body")
wait_for "a poll every --interval: /fleet's time moves" 10 body_lacks "$URL/fleet" "\"at\":\"$first_at\""

http GET "$URL/healthz"
expect_eq "/healthz 200 while a node is read" "$status:$body" "200:ok"
http GET "$URL/nope"
expect_eq "unknown path 404" "$status" 404
expect_security_headers "404"
http POST "$URL/fleet"
expect_eq "POST 405" "$status" 405
expect_eq "POST: Allow" "$(header allow)" "GET, HEAD"

http GET "$URL/metrics"
expect_eq "/metrics 200" "$status" 200
expect_eq "/metrics content type" "$(header content-type)" "text/plain; version=0.0.4; charset=utf-8"
printf '%s\n' "$body" >"$WORK/metrics.txt"
expect_in "fleet up" "$body" $'\ngpuledger_fleet_up 1\n'
expect_in "nodes read" "$body" 'gpuledger_fleet_nodes{state="read"} 2'
expect_in "nodes unreachable" "$body" 'gpuledger_fleet_nodes{state="unreachable"} 1'
for state in held reserved-idle unaccounted free; do
    expect_in "a series for GPUs $state" "$body" "gpuledger_fleet_gpus{state=\"$state\"} "
done
for code in source-unavailable unreserved-tenant unmanaged-tenant contended reserved-idle encoder-saturated hot idle held; do
    expect_in "a series for $code" "$body" "gpuledger_fleet_findings{code=\"$code\","
done
expect_in "a job's GPUs" "$body" 'gpuledger_fleet_job_gpus{namespace="default",nomad_job="restreamer",use="held"} 1'
expect_in "the fleet rule's finding (2 of 7 GPUs reserved-idle)" "$body" \
    'gpuledger_fleet_findings{code="fleet-reserved-idle",level="WARN"} 1'
expect_not_in "no node label" "$body" 'node="'

# ---- /healthz when nothing could be read ----------------------------------------
start_serving down fleet serve --targets "$DEAD" --listen 127.0.0.1:0 --interval 1h --timeout 1s ||
    { fail "fleet serve (all down) starts" "$(cat "$SERVE_LOG")"; finish; }
http GET "$URL/healthz"
expect_eq "/healthz 503 when no node was read" "$status" 503
expect_in "/healthz names the node and its error" "$body" "$DEAD: http://$DEAD/ledger: Couldn't connect to server"
http GET "$URL/metrics"
expect_in "fleet up 0 when no node was read" "$body" $'\ngpuledger_fleet_up 0\n'
stop_serve TERM
expect_eq "fleet serve (all down) exits 0 on SIGTERM" "$SERVE_RC" 0
SERVE_PID=$FLEET_PID SERVE_LOG=$FLEET_LOG
URL=http://$(sed -n 's/^gpuledger .* serving on \(.*\) (poll .*)$/\1/p' "$FLEET_LOG" | head -1)

# ---- promtool and a real Prometheus -----------------------------------------------
# scraped EXPR VALUE: Prometheus answers the instant query EXPR with one
# sample of VALUE (called through wait_for).
# shellcheck disable=SC2317
scraped() {
    local answer
    answer=$(curl -s --max-time 5 --get --data-urlencode "query=$1" "$PROM/api/v1/query")
    [ "$(jq_lua "j.status == 'success' and #j.data.result == 1 and j.data.result[1].value[2] == '$2'" "$answer")" = true ]
}
if ! need_program prometheus prometheus || ! need_program promtool prometheus; then
    skip "prometheus" "Debian's prometheus is not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
else
    lint=$(promtool check metrics <"$WORK/metrics.txt" 2>&1)
    expect_eq "promtool check metrics: clean" "$?:$lint" "0:"
    "$GPULEDGER" rules --prometheus >"$WORK/alerts.yml" 2>"$WORK/alerts.err"
    expect_in "rules --prometheus: the fleet rule alerts on gpuledger_fleet_findings" "$(cat "$WORK/alerts.yml")" \
        'expr: gpuledger_fleet_findings{code="fleet-reserved-idle"} > 0'
    if rules_check=$(promtool check rules "$WORK/alerts.yml" 2>&1); then
        pass "promtool check rules: the alerts with a fleet rule"
    else
        fail "promtool check rules: the alerts with a fleet rule" "$rules_check"
    fi
    prom_port=$(free_port)
    PROM=http://127.0.0.1:$prom_port
    mkdir -p "$WORK/prometheus/data"
    printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpuledger-fleet\n    static_configs:\n      - targets: ["%s"]\n' \
        "${URL#http://}" >"$WORK/prometheus/prometheus.yml"
    prometheus --config.file="$WORK/prometheus/prometheus.yml" --storage.tsdb.path="$WORK/prometheus/data" \
        --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
    at_exit "stop_pid $!"
    wait_for "Prometheus is ready" 30 curl -sf "$PROM/-/ready"
    wait_for "Prometheus scrapes gpuledger_fleet_up 1" 40 scraped 'gpuledger_fleet_up' 1
    wait_for "Prometheus has the unreachable count" 20 scraped 'gpuledger_fleet_nodes{state="unreachable"}' 1
    wait_for "Prometheus sums the fleet's GPUs" 20 scraped 'sum(gpuledger_fleet_gpus)' 8
fi

# ---- the page in headless Chromium ------------------------------------------------
if ! need_program chromium chromium; then
    skip "chromium" "Debian's chromium is not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
else
    ARTIFACTS=${GPULEDGER_BUILD_DIR:-$WORK}/artifacts
    mkdir -p "$ARTIFACTS"
    dom=$(browse dom --dump-dom "$URL/")
    expect_in "the DOM is the fleet page" "$dom" "<title>gpuledger · fleet</title>"
    expect_in "a read node links to its own page" "$dom" "<a href=\"http://$NODE_A/\">gpua</a>"
    expect_in "the hostile node name is text" "$dom" 'gpuf"&gt;&lt;b&gt;x&lt;/b&gt;&lt;script&gt;alert(1)&lt;/script&gt;'
    expect_eq "no script element in the DOM" "$(grep -c '<script' <<<"$dom")" 0
    expect_eq "no b element from the name" "$(grep -c '<b>' <<<"$dom")" 0
    expect_in "the unreachable node across the columns" "$dom" '<td colspan="6" data-label="error"><span class="level ERROR">unreachable</span>'
    expect_in "the job table, each job linked to Nomad's UI (--nomad-ui-url)" "$dom" \
        '<td data-label="job"><a href="https://nomad.test:4646/ui/jobs/restreamer@default">default/restreamer</a></td>'
    expect_in "a node Nomad named links to its client in Nomad's UI" "$dom" \
        '<a class="nomad" href="https://nomad.test:4646/ui/clients/f7476465-4d6e-c0de-26d0-e383c49be941">Nomad</a>'
    expect_eq "every node and job cell labelled for the narrow cards" \
        "$(sed -n '/<table class="nodes">/,/<h2>Findings/p' <<<"$dom" | grep -o '<td[^>]*>' | grep -vc 'data-label=')" 0
    expect_in "3 nodes, 1 unreachable" "$dom" "3 node(s), 1 unreachable"
    expect_in "the findings grouped, worst first: the unreachable node's ERROR and the demo's" "$dom" \
        '<details class="group ERROR"><summary><span class="level ERROR">ERROR</span> <span class="code">source-unavailable</span> <span class="reach">2 finding(s), 1 GPU(s) on 2 node(s):</span>'
    expect_in "a grouped finding links to its GPU's row on its node's page" "$dom" \
        "<a href=\"http://$NODE_A/#gpu-GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52\">gpua gpu2 GPU-c41b9e27</a>"
    expect_not_in "no CSP violation in the console" "$(cat "$WORK/dom.console")" "Content Security Policy"
    rm -f "$ARTIFACTS/fleet-page.png" "$ARTIFACTS/fleet-page-dark.png" "$ARTIFACTS/fleet-page-500.png"
    browse shot --window-size=1500,1000 --screenshot="$ARTIFACTS/fleet-page.png" "$URL/" >/dev/null
    expect_eq "a screenshot" "$(head -c 8 "$ARTIFACTS/fleet-page.png" 2>/dev/null | od -An -c | tr -d ' ')" '211PNG\r\n032\n'
    expect_not_in "no CSP violation while drawing" "$(cat "$WORK/shot.console")" "Content Security Policy"
    browse narrow --window-size=500,1400 --screenshot="$ARTIFACTS/fleet-page-500.png" "$URL/" >/dev/null
    expect_eq "a screenshot at 500 px" "$(head -c 8 "$ARTIFACTS/fleet-page-500.png" 2>/dev/null | od -An -c | tr -d ' ')" '211PNG\r\n032\n'
    browse dark --window-size=1500,1000 --force-dark-mode --screenshot="$ARTIFACTS/fleet-page-dark.png" "$URL/" >/dev/null
    if cmp -s "$ARTIFACTS/fleet-page.png" "$ARTIFACTS/fleet-page-dark.png"; then
        fail "dark differs from light" "the two screenshots are the same"
    else
        pass "dark differs from light"
    fi
fi

# ---- SIGHUP: the rule set reloaded as serve's, a broken one refused ----------------
# refused_shown: /fleet has one rule-error finding about the fleet naming
# the refused reload and broken.lua (called through wait_for).
# shellcheck disable=SC2317
refused_shown() {
    http GET "$URL/fleet"
    [ "$(jq_lua '(function() local n = 0; for _, f in ipairs(j.findings) do if f.code == "rule-error" and f.node == "fleet" and f.message:find("SIGHUP reload refused", 1, true) and f.message:find("broken.lua", 1, true) then n = n + 1 end end; return n end)()' "$body")" = 1 ]
}
echo 'return {' >"$WORK/rules/broken.lua"
kill -HUP "$SERVE_PID"
wait_for "SIGHUP with a broken rule says it keeps the set" 10 grep -q "keeping the last good rule set" "$SERVE_LOG"
expect_in "SIGHUP names the broken file" "$(cat "$SERVE_LOG")" "rule-error: $WORK/rules/broken.lua"
wait_for "after a bad SIGHUP: one rule-error finding about the fleet names the refused reload" 10 refused_shown
http GET "$URL/metrics"
expect_in "after a bad SIGHUP: the rule-error in the metrics" "$body" 'gpuledger_fleet_findings{code="rule-error",level="ERROR"} 1'
expect_in "after a bad SIGHUP: the last good rules still judge the fleet" "$body" \
    'gpuledger_fleet_findings{code="fleet-reserved-idle",level="WARN"} 1'
http GET "$URL/healthz"
expect_eq "after a bad SIGHUP: still serving, /healthz 200" "$status" 200
rm "$WORK/rules/broken.lua"
cat >"$WORK/rules/fleet_second.lua" <<'EOF'
return { code = "fleet-second", level = "BAD", doc = "a second fleet rule", evaluate_fleet = function() end }
EOF
kill -HUP "$SERVE_PID"
wait_for "SIGHUP with good rules reloads them" 10 grep -q "SIGHUP: reloaded the rule set from $WORK/rules" "$SERVE_LOG"
wait_for "the new fleet rule's code appears" 10 body_has "$URL/metrics" 'gpuledger_fleet_findings{code="fleet-second",level="BAD"} 0'
wait_for "after a good reload: the refused reload's rule-error is gone" 10 body_lacks "$URL/fleet" "SIGHUP reload refused"

stop_serve TERM
expect_eq "fleet serve exits 0 on SIGTERM" "$SERVE_RC" 0
expect_clean_log "fleet serve" "$SERVE_LOG"
finish
