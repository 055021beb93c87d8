#!/usr/bin/env bash
# gpuledger report against a fake Prometheus (tests/fakes/fake_prometheus.py,
# answering like the real API, errors included): the numbers and their
# order, --json, the empty answer, --since refused before any request, and
# every way Prometheus can fail (down, error JSON, plain text, HTML, a text
# cut short or with garbage in it, 100 MB, slow, TLS, a token) and every
# series that is wrong as one line on stderr and exit 1. The real Prometheus
# is report_prometheus.sh's.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh disable=SC1091
. "$(dirname "$0")/../lib/fakes.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
out="" err="" rc=0
command -v python3 >/dev/null || { skip "report" "python3 is not installed"; finish; }

# prom_start NAME ARGS...: starts a fake Prometheus, its requests logged to
# $WORK/NAME.log, answering /ok from $ANSWERS (default the fixture); sets
# PROM to its http(s)://127.0.0.1:PORT (scheme by ARGS).
prom_start() {
    local name=$1 scheme=http
    shift
    case "$*" in *--tls-cert*) scheme=https ;; esac
    if ! fake_start "$WORK/$name.stderr" "$WORK/$name.port" python3 "$FAKES/fake_prometheus.py" \
        --port-file "$WORK/$name.port" --log "$WORK/$name.log" \
        --answers "${ANSWERS:-$TESTDATA/prometheus/answers.json}" --slow-seconds 20 --max-seconds 300 "$@"; then
        fail "fake Prometheus $name starts" "$(cat "$WORK/$name.stderr")"
        finish
    fi
    PROM=$scheme://127.0.0.1:$(cat "$WORK/$name.port")
}

# requests NAME: how many requests the fake NAME has logged.
requests() { wc -l <"$WORK/$1.log" 2>/dev/null || echo 0; }

# expect_failure NAME NEEDLE...: the last run exited 1 with one line on
# stderr, starting "gpuledger: ", containing every NEEDLE; nothing on stdout.
expect_failure() {
    local name=$1 needle
    shift
    expect_rc "$name: exit 1" 1
    expect_eq "$name: nothing on stdout" "$out" ""
    expect_eq "$name: one line on stderr" "$(printf '%s\n' "$err" | wc -l)" 1
    expect_in "$name: says gpuledger" "$err" "gpuledger: "
    for needle in "$@"; do
        expect_in "$name: names $needle" "$err" "$needle"
    done
    expect_no_crash "$name"
}

prom_start plain

# --- the answer, as a table and as JSON --------------------------------------------
run report --prometheus "$PROM/ok"
expect_rc "report: exit 0" 0
expect_in "report: header with the totals" "$out" \
    "gpuledger report · the last 7d · 2 job(s), 20.0 GPU-hours reserved, 8.0 idle (40%)"
expect_in "report: the most idle job first" "$(printf '%s\n' "$out" | sed -n 4p)" "video/worker"
expect_in "report: worker's hours" "$out" "│ video/worker     │ 10.0           │ 2.0        │ 8.0        │ 80%  │"
expect_in "report: restreamer's hours" "$out" "│ video/restreamer │ 10.0           │ 10.0       │ 0.0        │ 0%   │"
expect_in "report: the node table" "$out" "GPU-hours per node and state"
expect_in "report: gpud's states" "$out" "│ gpud │ 12.0 │ 8.0           │ 0.0         │ 0.0  │"
expect_in "report: gpue free 4.25 h" "$out" "│ gpue │ 0.0  │ 0.0           │ 0.0         │ 4.2  │"
expect_in "report: the header counts the hours used without a reservation" "$out" \
    "8.0 idle (40%) · 3.1 GPU-hours used without a reservation"
expect_in "report: the third table, most first, none of 0 h" "$out" "GPU-hours used without a reservation
│ tenant                          │ kind   │ verdict    │ node │ GPU-h │
├─────────────────────────────────┼────────┼────────────┼──────┼───────┤
│ ffmpeg-manual                   │ docker │ unmanaged  │ gpud │ 2.5   │
│ encode/encode                   │ nomad  │ unreserved │ gpud │ 0.5   │
│ process python3 of root (uid 0) │ host   │ unmanaged  │ gpue │ 0.1   │"
expect_in "report: the jobs per MIG slice, by node, GPU, slice" "$out" "GPU-hours per job and MIG slice (a slice counts its share of its GPU's compute slices)
│ job           │ node │ slice                     │ reserved GPU-h │ held GPU-h │ idle GPU-h │
├───────────────┼──────┼───────────────────────────┼────────────────┼────────────┼────────────┤
│ train/trainer │ gpuh │ gpu0 MIG-00000000 3g.40gb │ 2.0            │ 1.5        │ 0.5        │
│ infer/server  │ gpuh │ gpu0 MIG-00000001 2g.20gb │ 1.0            │ 0.0        │ 1.0        │"
log=$(cat "$WORK/plain.log")
expect_in "report: asks the per-job query" "$log" \
    '"query": "sum by (namespace, nomad_job, use) (increase(gpuledger_job_gpu_seconds_total[7d]))"'
expect_in "report: asks the per-node query" "$log" \
    '"query": "sum by (node, state) (increase(gpuledger_gpu_state_seconds_total[7d]))"'
expect_in "report: asks the per-tenant query" "$log" \
    '"query": "sum by (node, kind, namespace, nomad_job, task, container, tenant, use) (increase(gpuledger_tenant_gpu_seconds_total[7d]))"'
expect_in "report: asks the per-slice query" "$log" \
    '"query": "sum by (node, gpu, uuid, mig_uuid, mig_profile, namespace, nomad_job, use) (increase(gpuledger_mig_job_gpu_seconds_total[7d]))"'
expect_eq "report: four GET requests of /api/v1/query" \
    "$(grep -c '"method": "GET", "path": "/ok/api/v1/query"' "$WORK/plain.log")" 4

run report --prometheus "$PROM/ok/" --json --since 2w
expect_rc "report --json: exit 0" 0
expect_lua "report --json: the report document's shape" "$out" \
    'j.schema == 1 and j.since == "2w" and type(j.at) == "string" and #j.jobs == 2 and #j.nodes == 2'
expect_lua "report --json: worker first, its hours and share" "$out" \
    'local w = j.jobs[1]; return w.namespace == "video" and w.job == "worker" and w.reservedHours == 10 and w.heldHours == 2 and w.idleHours == 8 and w.idleShare == 0.8'
expect_lua "report --json: restreamer's share is 0" "$out" 'j.jobs[2].job == "restreamer" and j.jobs[2].idleShare == 0'
expect_lua "report --json: nodes sorted, hours per state" "$out" \
    'j.nodes[1].node == "gpud" and j.nodes[1].hours.held == 12 and j.nodes[1].hours["reserved-idle"] == 8 and j.nodes[2].hours.free == 4.25'
expect_lua "report --json: unreserved, most first, each tenant's fields and hours" "$out" '
    local u = j.unreserved
    return #u == 3 and u[1].kind == "docker" and u[1].use == "unmanaged" and u[1].container == "ffmpeg-manual"
      and u[1].tenant == "ffmpeg-manual" and u[1].node == "gpud" and u[1].hours == 2.5
      and u[2].kind == "nomad" and u[2].use == "unreserved" and u[2].namespace == "video" and u[2].job == "encode"
      and u[2].task == "encode" and u[2].container == "" and u[2].hours == 0.5
      and u[3].kind == "host" and u[3].tenant == "process python3 of root (uid 0)" and u[3].hours == 0.1'
expect_lua "report --json: slices, each job on each slice, its GPU-hours" "$out" '
    local s = j.slices
    return #s == 2 and s[1].migUuid == "MIG-00000000-0000-0000-0000-000000000000" and s[1].profile == "3g.40gb"
      and s[1].node == "gpuh" and s[1].gpu == "0" and s[1].namespace == "train" and s[1].job == "trainer"
      and s[1].heldHours == 1.5 and s[1].idleHours == 0.5 and s[1].reservedHours == 2 and s[2].job == "server"'
expect_in "report --since 2w: the window in the queries" "$(cat "$WORK/plain.log")" "gpuledger_job_gpu_seconds_total[2w]"

PROMETHEUS_URL=$PROM/ok run report
expect_rc "PROMETHEUS_URL is --prometheus's default" 0

# --- no counters over the window ---------------------------------------------------
run report --prometheus "$PROM/empty" --since 1h
expect_rc "empty answer: exit 0" 0
expect_eq "empty answer: one line saying why" "$out" \
    "gpuledger report · no gpuledger counters in Prometheus over the last 1h (increase() needs two scrapes of a counter inside the window: is gpuledger serve scraped, and for longer than one scrape interval?)"
run report --prometheus "$PROM/empty" --json
expect_lua "empty answer --json: [] jobs and nodes" "$out" \
    'type(j.jobs) == "table" and next(j.jobs) == nil and type(j.nodes) == "table" and next(j.nodes) == nil'
expect_in "empty answer --json: jobs is []" "$out" '"jobs":[]'
expect_in "empty answer --json: unreserved is []" "$out" '"unreserved":[]'
expect_in "empty answer --json: slices is []" "$out" '"slices":[]'

# --- --since is refused before any request -----------------------------------------
before=$(requests plain)
for since in "" 7 "7 days" "1d; drop" -1h 0d 1.5h 7D 1h30m; do
    run report --prometheus "$PROM/ok" --since "$since"
    expect_failure "--since \"$since\"" "--since" "e.g. 24h, 7d or 4w"
done
for since in 293y 99999999999999999999999y; do
    run report --prometheus "$PROM/ok" --since "$since"
    expect_failure "--since $since" "--since \"$since\": longer than the longest window Prometheus takes, about 292 years"
done
expect_eq "--since refused: no request sent" "$(requests plain)" "$before"

run report
expect_rc "report without --prometheus: usage error" 2

# --- Prometheus fails: one clear line, exit 1 --------------------------------------
refusing_port 127.0.0.1
dead=$REFUSING_PORT
run report --prometheus "http://127.0.0.1:$dead"
expect_failure "Prometheus down" "prometheus http://127.0.0.1:$dead" "refused"

run report --prometheus "$PROM/bad_data"
expect_failure "400 bad_data" "prometheus $PROM/bad_data: query sum by" "HTTP 400 bad_data: invalid parameter"
run report --prometheus "$PROM/execution"
expect_failure "422 execution" "HTTP 422 execution: vector cannot contain metrics with the same labelset"
run report --prometheus "$PROM/timeout"
expect_failure "503 timeout" "HTTP 503 timeout: query timed out"
run report --prometheus "$PROM/internal"
expect_failure "500 internal" "HTTP 500 internal: write /prometheus/wal"
run report --prometheus "$PROM/starting"
expect_failure "503 plain text (starting)" "HTTP 503: the answer is not Prometheus' JSON" "Service Unavailable" "starting or stopping"
run report --prometheus "$PROM/html"
expect_failure "an HTML page" "HTTP 200: the answer is not Prometheus' JSON (text/html; charset=utf-8): <!DOCTYPE html>"
run report --prometheus "$PROM/redirect"
expect_failure "a redirect: named, not followed" "HTTP 302: a redirect, which report does not follow" "--prometheus is the base URL"
run report --prometheus "$PROM/nowhere"
expect_failure "a wrong path (404)" "HTTP 404" "--prometheus is the base URL"
run report --prometheus "$PROM/huge"
expect_failure "a 100 MB answer" "exceeds 64 MiB"
run report --prometheus "$PROM/truncated"
expect_failure "an answer cut short" "prometheus $PROM/truncated: query sum by (namespace, nomad_job, use)" \
    "HTTP 200: the answer is not Prometheus' JSON (application/json): {" "the text ends"
run report --prometheus "$PROM/garbage"
expect_failure "garbage between two series" "prometheus $PROM/garbage: query sum by" \
    "HTTP 200: the answer is not Prometheus' JSON (application/json): {" "want a value, got 'g')"
started=$(date +%s)
run report --prometheus "$PROM/slow" --timeout 1s
expect_failure "a slow Prometheus (--timeout 1s)" "prometheus $PROM/slow: GET /api/v1/query" "imeout"
expect_eq "a slow Prometheus: given up well before it answers (20 s)" "$(($(date +%s) - started < 15))" 1
run report --prometheus "ftp://127.0.0.1:$dead"
expect_failure "a URL that is not http(s)" "want unix:///path, http://host:port or https://host:port"

# --- hostile answers: a series that is wrong is named, a label cut, too many refused --------
# hostile NAME PYTHON: an answers file whose "jobs" are the Python expression
# PYTHON (the fixture's nodes), served by a fake Prometheus NAME; sets PROM.
hostile() {
    python3 -c 'import json, sys
fixture = json.load(open(sys.argv[1]))
print(json.dumps({"jobs": eval(sys.argv[2]), "nodes": fixture["nodes"]}))' "$TESTDATA/prometheus/answers.json" "$2" >"$WORK/$1.json"
    ANSWERS=$WORK/$1.json prom_start "$1"
}
JOB='{"namespace": "video", "nomad_job": "worker", "use": "idle"}'
SERIES='data.result[1] {namespace="video", nomad_job="worker", use="idle"}'
hostile negative "[{\"metric\": $JOB, \"value\": \"-36000\"}]"
run report --prometheus "$PROM/ok"
expect_failure "negative GPU-seconds" "HTTP 200: $SERIES: the value is -36000, want a number from 0 to 9007199254740992"
hostile absurd "[{\"metric\": $JOB, \"value\": \"1e308\"}]"
run report --prometheus "$PROM/ok" --json
expect_failure "1e308 GPU-seconds" "HTTP 200: $SERIES: the value is 1e+308, want a number from 0 to 9007199254740992"
hostile label '[{"metric": {"namespace": "n" * (3 * 1024 * 1024), "nomad_job": "worker", "use": "held"}, "value": "3600"}]'
run report --prometheus "$PROM/ok"
expect_rc "a 3 MB namespace label: exit 0" 0
expect_in "a 3 MB namespace label: cut and marked" "$out" "nnn…[cut]/worker"
if [ "${#out}" -lt 20000 ]; then pass "a 3 MB namespace label: a few KB printed (${#out} characters)"; else
    fail "a 3 MB namespace label: a few KB printed" "${#out} characters"; fi
hostile text "[{\"metric\": $JOB, \"value\": \"12 hours\"}]"
run report --prometheus "$PROM/ok"
expect_failure "a value that is no number" "HTTP 200: $SERIES: the value is \"12 hours\", want a decimal number of GPU-seconds such as \"3600\""
hostile hex "[{\"metric\": $JOB, \"value\": \"0x10\"}]"
run report --prometheus "$PROM/ok"
expect_failure "a value in hex" "HTTP 200: $SERIES: the value is \"0x10\", want a decimal number of GPU-seconds such as \"3600\""
hostile number "[{\"metric\": $JOB, \"value\": 3600}]"
run report --prometheus "$PROM/ok"
expect_failure "a value of the wrong type" "HTTP 200: $SERIES: the value is the JSON number 3600, want it as a JSON string such as \"3600\" (Prometheus writes each sample value as text)"
# increase() of a counter is NaN or infinite only when a sample of it is: a
# job's hours that are not known fail the report, never leave the job out.
for infinite in NaN +Inf -Inf; do
    hostile "not-finite$infinite" "[{\"metric\": ${JOB/idle/held}, \"value\": \"3600\"}, {\"metric\": $JOB, \"value\": \"$infinite\"}]"
    run report --prometheus "$PROM/ok"
    expect_failure "a value of $infinite" "HTTP 200: data.result[2] {namespace=\"video\", nomad_job=\"worker\", use=\"idle\"}: the value is $infinite, want a finite number of GPU-seconds"
done
hostile all-nan "[{\"metric\": $JOB, \"value\": \"NaN\"}]"
run report --prometheus "$PROM/ok" --json
expect_failure "every value NaN: a failure, not \"no counters\"" "HTTP 200: $SERIES: the value is NaN"
hostile label_type '[{"metric": {"namespace": ["video"], "nomad_job": "worker", "use": "held"}, "value": "1"}]'
run report --prometheus "$PROM/ok"
expect_failure "a label of the wrong type" "HTTP 200: data.result[1].metric.namespace is a table, want a string"
hostile metric_type '[{"metric": {"namespace": "n", "nomad_job": "j", "use": "held"}, "value": "1"}, {"metric": "video/worker", "value": "1"}]'
run report --prometheus "$PROM/ok"
expect_failure "labels of the wrong type" "HTTP 200: data.result[2].metric is a string, want an object"
hostile brackets '[{"metric": {"namespace": "v]}, {" + chr(34) + "[" + chr(92), "nomad_job": "w{" + chr(92) + chr(34), "use": "held"}, "value": "3600"}]'
run report --prometheus "$PROM/ok" --json
expect_rc "labels with brackets, braces and escaped quotes: exit 0" 0
expect_lua "labels with brackets, braces and escaped quotes: one job, as written" "$out" \
    '#j.jobs == 1 and j.jobs[1].namespace == "v]}, {\"[\\" and j.jobs[1].job == "w{\\\"" and j.jobs[1].heldHours == 1'
hostile more '[{"metric": {"namespace": "n", "nomad_job": "j%d" % i, "use": ("held", "idle")[i % 2]}, "value": "3600"} for i in range(60000)]'
run report --prometheus "$PROM/ok" --json
expect_rc "60,000 series: exit 0" 0
expect_lua "60,000 series: 60,000 jobs of 1 GPU-hour each" "$out" \
    '#j.jobs == 60000 and j.jobs[1].idleHours == 1 and j.jobs[60000].heldHours == 1'
hostile many '[{"metric": {"nomad_job": "j%d" % i}, "value": "1"} for i in range(500001)]'
run report --prometheus "$PROM/ok"
expect_failure "500,001 series, under the 64 MiB cap" \
    "HTTP 200: data.result has 500001 series, more than the 500000 an answer may hold"

# --- a bearer token from the variable a flag names ---------------------------------
TOKEN=s3cret-prom-token-4c1d
run report --prometheus "$PROM/auth"
expect_failure "401 without a token" "HTTP 401" "Unauthorized" "--prometheus-token-env"
expect_not_in "401 without a token, none named: no note" "$err" "sent without a token"
run report --prometheus "$PROM/auth" --prometheus-token-env MY_TOKEN
expect_failure "401, MY_TOKEN named and unset" "HTTP 401" "(sent without a token: MY_TOKEN is not set)"
FAKE_TOKEN=$TOKEN run report --prometheus "$PROM/auth" --prometheus-token-env FAKE_TOKEN
expect_failure "401 with the fake's token unset" "HTTP 401"
stop_pid "$fake_pid"
FAKE_PROMETHEUS_TOKEN=$TOKEN prom_start auth
MY_TOKEN=$TOKEN run report --prometheus "$PROM/auth" --prometheus-token-env MY_TOKEN
expect_rc "the bearer token is sent" 0
expect_in "the bearer token is sent: the answer" "$out" "video/worker"
expect_in "the token went in the Authorization header" "$(cat "$WORK/auth.log")" '"Authorization"'
expect_not_in "the token is not in the query" "$(cat "$WORK/auth.log")" "$TOKEN"
MY_TOKEN=wrong-$TOKEN run report --prometheus "$PROM/auth" --prometheus-token-env MY_TOKEN
expect_failure "a wrong token" "HTTP 401"
expect_not_in "a wrong token: never shown" "$err" "$TOKEN"
stop_pid "$fake_pid"
FAKE_PROMETHEUS_TOKEN=$TOKEN prom_start auth_echo
MY_TOKEN=wrong-$TOKEN run report --prometheus "$PROM/auth_echo" --prometheus-token-env MY_TOKEN
expect_failure "a wrong token echoed in the 401" "HTTP 401"
expect_no_token "a wrong token echoed in the 401" "wrong-$TOKEN" "$out$err"
stop_pid "$fake_pid"

# --- TLS, with the flags of the Nomad client ---------------------------------------
CERTS=$WORK/certs
if ! sh "$FAKES/make_certs.sh" "$CERTS" 2>"$WORK/certs.err"; then
    fail "make_certs.sh" "$(cat "$WORK/certs.err")"
    finish
fi
prom_start tls --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key"
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$CERTS/ca.pem"
expect_rc "HTTPS with --prometheus-ca-cert" 0
mkdir "$WORK/ca-dir" && cp "$CERTS/ca.pem" "$WORK/ca-dir/"
run report --prometheus "$PROM/ok" --prometheus-ca-path "$WORK/ca-dir"
expect_rc "HTTPS with --prometheus-ca-path" 0
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$CERTS/wrong-ca.pem"
expect_failure "HTTPS, wrong CA" "prometheus $PROM/ok"
expect_in "HTTPS, wrong CA: says certificate" "$(printf '%s' "$err" | tr '[:upper:]' '[:lower:]')" certificate
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$CERTS/ca.pem" --prometheus-client-cert "$CERTS/client.pem"
expect_failure "half a client key pair" "--prometheus-client-cert and --prometheus-client-key go together"
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$WORK/missing.pem"
expect_failure "a missing CA file" "--prometheus-ca-cert $WORK/missing.pem"
stop_pid "$fake_pid"
prom_start mtls --tls-cert "$CERTS/server.pem" --tls-key "$CERTS/server.key" --client-ca "$CERTS/ca.pem"
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$CERTS/ca.pem" \
    --prometheus-client-cert "$CERTS/client.pem" --prometheus-client-key "$CERTS/client.key" \
    --prometheus-tls-server-name localhost
expect_rc "mutual TLS with the client pair and the server name" 0
run report --prometheus "$PROM/ok" --prometheus-ca-cert "$CERTS/ca.pem"
expect_failure "mutual TLS without a client certificate" "prometheus $PROM/ok"
finish
