#!/usr/bin/env bash
# gpuledger serve with a real Prometheus (Debian `prometheus`, with promtool;
# installed when missing, skipped with the reason when it cannot be): promtool
# lints /metrics of the demo node, which has every finding; a Prometheus on
# loopback with its own config and storage scrapes a running serve, and its
# HTTP API answers gpuledger_up, gpuledger_findings and the increase() of a
# counter. (deploy/prometheus's rules and the dashboard are tested against a
# real Prometheus in report_prometheus.sh.)
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
# shellcheck source=../lib/prometheus.sh disable=SC1091
. "$(dirname "$0")/../lib/prometheus.sh"
status="" headers="" body="" URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

mkdir "$WORK/rules"
need_prometheus || finish

if ! start_serve prom --demo --listen 127.0.0.1:0 --interval 1s --rules "$WORK/rules"; then
    fail "serve starts" "$(cat "$SERVE_LOG")"
    finish
fi

# --- promtool's lint of /metrics --------------------------------------------------
http GET "$URL/metrics"
printf '%s\n' "$body" >"$WORK/metrics.txt"
lint=$(promtool check metrics <"$WORK/metrics.txt" 2>&1)
expect_eq "promtool check metrics: clean" "$?:$lint" "0:"
for code in source-unavailable unreserved-tenant unmanaged-tenant contended reserved-idle encoder-saturated hot idle held; do
    expect_in "the demo node has a $code finding" "$body" "code=\"$code\",level="
done

# --- a real Prometheus scraping serve ---------------------------------------------
start_prometheus "" "${URL#http://}"

prom_has "gpuledger_up is 1" 30 'gpuledger_up' \
    '#j.data.result == 1 and j.data.result[1].value[2] == "1" and j.data.result[1].metric.node == "gpu-demo-01" and j.data.result[1].metric.job == "gpuledger"'
codes=$(grep -c '^  code = "' "$SRC"/rules/*.lua | awk -F: '{ n += $2 } END { print n }') # every default rule's
prom_has "gpuledger_findings has every code" 20 'gpuledger_findings' "#j.data.result == $codes"
prom_has "gpuledger_findings counts unmanaged tenants" 20 'gpuledger_findings{code="unmanaged-tenant",level="BAD"}' \
    '#j.data.result == 1 and j.data.result[1].value[2] == "2"'
prom_has "increase() of the state counters" 40 'increase(gpuledger_gpu_state_seconds_total{gpu="0",state="held"}[1m])' \
    '#j.data.result == 1 and tonumber(j.data.result[1].value[2]) > 0'
prom_has "increase() of a job's counter" 20 'increase(gpuledger_job_gpu_seconds_total{nomad_job="restreamer",use="held"}[1m])' \
    '#j.data.result == 1 and tonumber(j.data.result[1].value[2]) > 0 and j.data.result[1].metric.exported_job == nil'
prom_has "the report's queries answer" 20 'sum by (node, state) (increase(gpuledger_gpu_state_seconds_total[1m]))' \
    '#j.data.result == 4'
expect_eq "the scrape target is healthy" \
    "$(jq_lua 'j.data.activeTargets[1].health' "$(curl -s "$PROM/api/v1/targets")")" up

stop_serve TERM
expect_eq "serve exits 0" "$SERVE_RC" 0
expect_clean_log "serve" "$SERVE_LOG"
finish
