#!/usr/bin/env bash
# report, the alert rules and the dashboard against a real Prometheus (Debian
# `prometheus`, with promtool; installed when missing, skipped with the
# reason when it cannot be). Two `gpuledger serve` on fixture nodes (replayed
# snapshots, one swapped mid-run so its GPUs change state) are scraped every
# second by a Prometheus that also loads deploy/prometheus/gpuledger.rules.yml.
# Then: report's hours add up (per job, per node and state, per tenant used
# without a reservation) and the most idle job comes first; the alert on
# GPU time without a reservation goes pending for those tenants only; every
# rule and every dashboard query parses and returns data; every metric and label
# they name is one /metrics has; a refused rule reload raises an alert;
# promtool checks and unit-tests the rules, and fails them once a threshold
# is mutated. A third node (gpuc, replaying testdata/health/every-signal.json:
# every health signal) and a `gpuledger fleet serve` reading the three and one
# dead target are scraped, with the three, by a second Prometheus that loads
# every rules file of deploy/prometheus: every rule and every dashboard query
# (the fleet and health rows too) runs against that one.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
# shellcheck source=../lib/prometheus.sh disable=SC1091
. "$(dirname "$0")/../lib/prometheus.sh"
URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID="" out="" err="" rc=0

need_prometheus || finish
RULES_FILE=$SRC/deploy/prometheus/gpuledger.rules.yml
HEALTH_RULES=$SRC/deploy/prometheus/gpuledger-health.rules.yml
RULES_TEST=$SRC/deploy/prometheus/gpuledger.rules.test.yml
DASHBOARD=$SRC/deploy/grafana/gpuledger.json
SCRAPE_SECONDS=1 # start_prometheus scrapes every second; serve refreshes as often

# --- two fixture nodes: gpua changes state mid-run, gpub stays --------------------
# The demo node: restreamer holds GPU 0 (held), worker reserved GPU 1 and
# nothing holds it (reserved-idle). Its variant where restreamer's container
# and process have gone leaves GPU 0 reserved-idle too. Both without the
# llm-serve task on the MIG GPU's slice (that GPU is free): a slice's job
# counts only its share of the GPU (spec/history_spec.lua), so the sums
# below would not add up GPU by GPU.
"$GPULEDGER" snapshot --demo >"$WORK/busy.json" || { fail "snapshot --demo" "exit $?"; finish; }
python3 - "$WORK/busy.json" "$WORK/idle.json" <<'PY'
import json, sys
snap = json.load(open(sys.argv[1]))
sources = snap["sources"]
sources["nvidia"]["compute_apps"]["rows"] = [row for row in sources["nvidia"]["compute_apps"]["rows"] if row[1] != "9191"]
sources["docker"]["containers"] = [c for c in sources["docker"]["containers"] if not c["Name"].startswith("/server-")]
sources["proc"]["pids"].pop("9191", None)
sources["nomad"]["allocations"] = [a for a in sources["nomad"]["allocations"] if a["JobID"] != "llm-serve"]
json.dump(snap, open(sys.argv[1], "w"))
apps = snap["sources"]["nvidia"]["compute_apps"]
apps["rows"] = [row for row in apps["rows"] if row[1] != "4242"]
docker = snap["sources"]["docker"]
docker["containers"] = [c for c in docker["containers"] if not c["Name"].startswith("/restreamer-")]
snap["sources"]["proc"]["pids"].pop("4242", None)
json.dump(snap, open(sys.argv[2], "w"))
PY
cp "$WORK/busy.json" "$WORK/gpua.json"
cp "$WORK/busy.json" "$WORK/gpub.json"
mkdir -p "$WORK/rules-a" "$WORK/rules-b" "$WORK/rules-c"

if ! start_serve gpua --replay "$WORK/gpua.json" --node gpua --listen 127.0.0.1:0 --interval "${SCRAPE_SECONDS}s" \
    --history "$WORK/gpua-history.json" --rules "$WORK/rules-a"; then
    fail "serve gpua starts" "$(cat "$SERVE_LOG")"
    finish
fi
URL_A=$URL PID_A=$SERVE_PID LOG_A=$SERVE_LOG
if ! start_serve gpub --replay "$WORK/gpub.json" --node gpub --listen 127.0.0.1:0 --interval "${SCRAPE_SECONDS}s" \
    --history "$WORK/gpub-history.json" --rules "$WORK/rules-b"; then
    fail "serve gpub starts" "$(cat "$SERVE_LOG")"
    finish
fi
URL_B=$URL PID_B=$SERVE_PID LOG_B=$SERVE_LOG
# gpuc: a node whose GPUs show every health signal (Xids, remapped rows, ECC,
# PCIe, power limits, a lost GPU), for the health rules and panels.
if ! start_serve gpuc --replay "$TESTDATA/health/every-signal.json" --node gpuc --listen 127.0.0.1:0 \
    --interval "${SCRAPE_SECONDS}s" --history "$WORK/gpuc-history.json" --rules "$WORK/rules-c"; then
    fail "serve gpuc starts" "$(cat "$SERVE_LOG")"
    finish
fi
URL_C=$URL PID_C=$SERVE_PID LOG_C=$SERVE_LOG
# fleet serve reading the three nodes and a port nothing listens on (an
# unreachable node, for the fleet alert and the fleet row's nodes by state).
refusing_port 127.0.0.1
DEAD=127.0.0.1:$REFUSING_PORT
if ! start_serving fleet fleet serve --targets "${URL_A#http://},${URL_B#http://},${URL_C#http://},$DEAD" \
    --listen 127.0.0.1:0 --interval "${SCRAPE_SECONDS}s" --timeout 2s; then
    fail "fleet serve starts" "$(cat "$SERVE_LOG")"
    finish
fi
URL_FLEET=$URL PID_FLEET=$SERVE_PID LOG_FLEET=$SERVE_LOG

# --- a real Prometheus scraping both, with the deploy rules -----------------------
start_prometheus "$RULES_FILE" "${URL_A#http://}" "${URL_B#http://}"
prom_has "both nodes are scraped" 30 'gpuledger_up' '#j.data.result == 2'
# A second Prometheus federating the first from now on, so that it holds the
# same history (the counters before and after the state change below) when
# report asks it.
PROM_NODES=$PROM
start_prometheus --federate "" "${PROM_NODES#http://}"
PROM_FEDERATION=$PROM PROM=$PROM_NODES

# --- state changes over time: gpua's restreamer stops holding GPU 0 ----------------
prom_has "the job counters grow" 30 'increase(gpuledger_job_gpu_seconds_total{node="gpua",nomad_job="restreamer",use="held"}[5m])' \
    '#j.data.result == 1 and tonumber(j.data.result[1].value[2]) >= 5'
PROM=$PROM_FEDERATION prom_has "the federation sees the held counter grow too" 30 \
    'increase(gpuledger_job_gpu_seconds_total{node="gpua",nomad_job="restreamer",use="held"}[5m])' \
    '#j.data.result == 1 and tonumber(j.data.result[1].value[2]) > 0'
cp "$WORK/idle.json" "$WORK/gpua.next.json"
mv "$WORK/gpua.next.json" "$WORK/gpua.json"
prom_has "gpua's GPU 0 turns reserved-idle" 20 'gpuledger_gpu_state{node="gpua",gpu="0"}' \
    '#j.data.result == 1 and j.data.result[1].metric.state == "reserved-idle"'
prom_has "restreamer's idle counter grows" 30 'increase(gpuledger_job_gpu_seconds_total{node="gpua",nomad_job="restreamer",use="idle"}[5m])' \
    '#j.data.result == 1 and tonumber(j.data.result[1].value[2]) >= 5'

# --- report: the hours add up -----------------------------------------------------
run report --prometheus "$PROM" --since 10m --json
expect_rc "report --json against Prometheus: exit 0" 0
printf '%s\n' "$out" >"$WORK/report.json"
expect_lua "report: two jobs, two nodes" "$out" '#j.jobs == 2 and #j.nodes == 2 and j.nodes[1].node == "gpua" and j.nodes[2].node == "gpub"'
expect_lua "report: held + idle = reserved, per job" "$out" \
    'for _, e in ipairs(j.jobs) do if math.abs(e.heldHours + e.idleHours - e.reservedHours) > 1e-9 then return false end end return true'
expect_lua "report: the most idle job first (worker: idle on both nodes all along)" "$out" \
    'return j.jobs[1].job == "worker" and j.jobs[1].idleHours > j.jobs[2].idleHours and j.jobs[1].idleShare == 1'
expect_lua "report: restreamer was both held and idle" "$out" \
    'local r = j.jobs[2]; return r.job == "restreamer" and r.heldHours > 0 and r.idleHours > 0'
# Every reserved GPU of the fixtures has one job, so the GPU-hours the jobs
# reserved are the hours the GPUs spent held or reserved-idle; each series'
# increase() is extrapolated by at most about one scrape interval, so the
# two sums agree within one interval per GPU (4 reserved GPUs here).
expect_lua "report: the jobs' reserved hours = the nodes' held + reserved-idle hours, within one scrape interval per GPU" "$out" "
    local jobs, states = 0, 0
    for _, e in ipairs(j.jobs) do jobs = jobs + e.reservedHours end
    for _, n in ipairs(j.nodes) do states = states + n.hours.held + n.hours['reserved-idle'] end
    return math.abs(jobs - states) * 3600 <= 4 * $SCRAPE_SECONDS"
# The same hours from the raw samples Prometheus holds (the counters'
# growth between the first and the last scrape of each series, as of the
# report): increase() extrapolates each series by at most about one scrape
# interval at either end, so per job and use they agree within two
# intervals per series (one series per node here).
at=$(jq_lua 'j.at' "$out")
raw=$(curl -s --max-time 10 --get --data-urlencode 'query=gpuledger_job_gpu_seconds_total[10m]' \
    --data-urlencode "time=$at" "$PROM/api/v1/query")
expect_lua "report: each job's held and idle hours = the growth of its raw samples, within two scrape intervals per series" \
    "{\"report\": $out, \"raw\": $raw}" "
    local grown, series = {}, {}
    for _, s in ipairs(j.raw.data.result) do
      local key = s.metric.nomad_job .. ' ' .. s.metric.use
      grown[key] = (grown[key] or 0) + tonumber(s.values[#s.values][2]) - tonumber(s.values[1][2])
      series[key] = (series[key] or 0) + 1
    end
    for _, e in ipairs(j.report.jobs) do
      for _, use in ipairs { 'held', 'idle' } do
        local key = e.job .. ' ' .. use
        if math.abs(e[use .. 'Hours'] * 3600 - grown[key]) > 2 * $SCRAPE_SECONDS * series[key] then
          error(key .. ': report ' .. e[use .. 'Hours'] * 3600 .. ' s, samples ' .. grown[key] .. ' s')
        end
      end
    end
    return true"
# GPU 2 of the demo node is unaccounted all along, used without a
# reservation by encode/encode (a Nomad task it was not allocated to),
# the container ffmpeg-manual and a python3 outside any container (a
# fourth tenant, whose allocation Nomad hides, is not counted: whether it
# was reserved cannot be told). Each of the three, on each node, used the
# GPU for the hours the GPU was unaccounted; a tenant's and its GPU's
# counters grow in the same refreshes and are scraped together.
expect_lua "report: unreserved, the three tenants of GPU 2 on each node, named as ls names them" "$out" '
    local seen = {}
    for _, u in ipairs(j.unreserved) do seen[#seen + 1] = table.concat({ u.node, u.kind, u.use, u.tenant }, " ") end
    table.sort(seen)
    return table.concat(seen, ",") == "gpua docker unmanaged ffmpeg-manual,gpua host unmanaged python3,"
      .. "gpua nomad unreserved encode/encode,gpub docker unmanaged ffmpeg-manual,gpub host unmanaged python3,"
      .. "gpub nomad unreserved encode/encode"'
expect_lua "report: unreserved, most first" "$out" '
    for i = 2, #j.unreserved do if j.unreserved[i].hours > j.unreserved[i - 1].hours then return false end end
    return true'
expect_lua "report: each tenant's hours without a reservation = its node's unaccounted hours, within one scrape interval" "$out" "
    local unaccounted = {}
    for _, n in ipairs(j.nodes) do unaccounted[n.node] = n.hours.unaccounted end
    for _, u in ipairs(j.unreserved) do
      if u.hours <= 0 or math.abs(u.hours - unaccounted[u.node]) * 3600 > $SCRAPE_SECONDS then
        error(u.node .. ' ' .. u.tenant .. ': ' .. u.hours * 3600 .. ' s, the node unaccounted ' .. unaccounted[u.node] * 3600 .. ' s')
      end
    end
    return true"
raw=$(curl -s --max-time 10 --get --data-urlencode 'query=gpuledger_tenant_gpu_seconds_total[10m]' \
    --data-urlencode "time=$at" "$PROM/api/v1/query")
expect_lua "report: each tenant's hours = the growth of its raw samples, within two scrape intervals" \
    "{\"report\": $out, \"raw\": $raw}" "
    local grown = {}
    for _, s in ipairs(j.raw.data.result) do
      grown[s.metric.node .. ' ' .. s.metric.tenant] = tonumber(s.values[#s.values][2]) - tonumber(s.values[1][2])
    end
    for _, u in ipairs(j.report.unreserved) do
      local key = u.node .. ' ' .. u.tenant
      if math.abs(u.hours * 3600 - grown[key]) > 2 * $SCRAPE_SECONDS then
        error(key .. ': report ' .. u.hours * 3600 .. ' s, samples ' .. grown[key] .. ' s')
      end
    end
    return true"
run report --prometheus "$PROM" --since 10m
expect_in "report (text): the header" "$out" "gpuledger report · the last 10m · 2 job(s), "
expect_in "report (text): the third table" "$out" "GPU-hours used without a reservation
│ tenant        │ kind   │ verdict    │ node │ GPU-h"
expect_in "report (text): worker first" "$(printf '%s\n' "$out" | sed -n 4p)" "video/worker"
printf '%s\n' "$out" >"$WORK/report.txt"
# --- report over federation: the second Prometheus, federating the first ----------
PROM=$PROM_FEDERATION prom_has "the federation has restreamer's held and idle counters" 30 \
    'increase(gpuledger_job_gpu_seconds_total{node="gpua",nomad_job="restreamer"}[10m]) > 0' \
    '#j.data.result == 2 and j.data.result[1].metric.instance ~= nil'
run report --prometheus "$PROM_FEDERATION" --since 10m --json
expect_rc "report over federation: exit 0" 0
expect_lua "report over federation: the same jobs, worker first, nodes gpua and gpub, hours that add up" "$out" '
    if #j.jobs ~= 2 or j.jobs[1].job ~= "worker" or j.jobs[2].job ~= "restreamer" then return false end
    if #j.nodes ~= 2 or j.nodes[1].node ~= "gpua" or j.nodes[2].node ~= "gpub" then return false end
    for _, e in ipairs(j.jobs) do
      if e.reservedHours <= 0 or math.abs(e.heldHours + e.idleHours - e.reservedHours) > 1e-9 then return false end
    end
    return true'

run report --prometheus "$PROM" --since 1s
expect_rc "report over a window shorter than a scrape: exit 0" 0
expect_in "report over 1s: no counters, and why" "$out" "no gpuledger counters in Prometheus over the last 1s (increase() needs two scrapes"

# --- GPU time without a reservation: the tenants' alert goes pending -------------
# The three tenants of GPU 2 on each node use it without a reservation all
# along: the alert is pending for each (it fires after 30 minutes), named
# by node, kind, verdict and tenant; no reserved job (restreamer, worker) is.
prom_has "GPULedgerTenantWithoutReservation is pending for each tenant of GPU 2, and only those" 30 \
    'ALERTS{alertname="GPULedgerTenantWithoutReservation"}' '(function()
       local seen = {}
       for _, r in ipairs(j.data.result) do
         local m = r.metric
         if m.alertstate ~= "pending" or m.severity ~= "warning" then return false end
         seen[#seen + 1] = table.concat({ m.node, m.kind, m.use, m.tenant }, " ")
       end
       table.sort(seen)
       return table.concat(seen, ",") == "gpua docker unmanaged ffmpeg-manual,gpua host unmanaged python3,"
         .. "gpua nomad unreserved encode/encode,gpub docker unmanaged ffmpeg-manual,gpub host unmanaged python3,"
         .. "gpub nomad unreserved encode/encode"
     end)()'

# --- a refused rule reload raises the rule errors' alert ---------------------------
echo 'return {' >"$WORK/rules-b/broken.lua"
kill -HUP "$PID_B"
wait_for "gpub refuses the broken rules" 10 grep -q "keeping the last good rule set" "$LOG_B"
prom_has "the refused reload's errors are scraped" 20 'gpuledger_rule_errors{node="gpub"}' \
    '#j.data.result == 1 and j.data.result[1].value[2] == "1"'
prom_has "GPULedgerRuleErrors is pending for gpub" 20 'ALERTS{alertname="GPULedgerRuleErrors"}' \
    '#j.data.result == 1 and j.data.result[1].metric.node == "gpub" and j.data.result[1].metric.alertstate == "pending"'

# --- a Prometheus scraping every node and fleet serve, with every rules file -----
# (gpuledger*.rules.yml: Prometheus expands the glob; the .rules.test.yml
# files do not match it.) The checks below run against this one.
start_prometheus "$SRC/deploy/prometheus/gpuledger*.rules.yml" \
    "${URL_A#http://}" "${URL_B#http://}" "${URL_C#http://}" "${URL_FLEET#http://}"
PROM_ALL=$PROM
prom_has "the three nodes and fleet serve are scraped" 30 'up == 1' '#j.data.result == 4'
prom_has "fleet serve reads the three nodes, one target unreachable" 30 'gpuledger_fleet_nodes' '(function()
    local n = {}
    for _, s in ipairs(j.data.result) do n[s.metric.state] = s.value[2] end
    return n.read == "3" and n.unreachable == "1"
  end)()'
prom_has "GPULedgerFleetNodesUnreachable is pending" 20 'ALERTS{alertname="GPULedgerFleetNodesUnreachable"}' \
    '#j.data.result == 1 and j.data.result[1].metric.alertstate == "pending" and j.data.result[1].metric.node == nil'
prom_has "GPULedgerXidFatal fires for each of gpuc's two cards, naming it (gpu, uuid)" 20 \
    'ALERTS{alertname="GPULedgerXidFatal", node="gpuc"}' \
    '(function()
       if #j.data.result ~= 2 then return false end
       for _, r in ipairs(j.data.result) do
         if r.metric.alertstate ~= "firing" or not r.metric.gpu or not r.metric.uuid:find("^GPU%-") then return false end
       end
       return true
     end)()'

# --- every rule: loaded by Prometheus, evaluated without error, has data ----------
rules_answer=$(curl -s "$PROM_ALL/api/v1/rules")
expect_lua "Prometheus loaded every rule of both rules files" "$rules_answer" "
    local n = 0
    for _, g in ipairs(j.data.groups) do n = n + #g.rules end
    return n == $(cat "$RULES_FILE" "$HEALTH_RULES" | grep -c '^ *- alert:')"
# One line per rule: name, health, last error and query as Prometheus has
# them, separated by the unit separator (\x1f).
mapfile -t rules < <(lua5.4 -e '
local cjson = require "cjson"
for _, g in ipairs(cjson.decode(io.read("a")).data.groups) do
  for _, r in ipairs(g.rules) do
    print(table.concat({ r.name, r.health, r.lastError or "", (r.query:gsub("\n", " ")) }, "\31"))
  end
end' <<<"$rules_answer")

# with_bool EXPR: EXPR with "bool" after each comparison outside label
# matchers, so that it returns every series it compares, not only those
# past the threshold: data for the expression, whatever the values now.
with_bool() {
    EXPR=$1 lua5.4 -e '
local s, out, depth, quoted, i = os.getenv("EXPR"), {}, 0, false, 1
while i <= #s do
  local c, two = s:sub(i, i), s:sub(i, i + 1)
  if quoted then
    if c == "\\" then out[#out + 1] = two; i = i + 2 goto continue end
    if c == quoted then quoted = false end
  elseif c == "\"" or c == "'"'"'" then quoted = c
  elseif c == "{" then depth = depth + 1
  elseif c == "}" then depth = depth - 1
  elseif depth == 0 and (two == "==" or two == "!=" or two == ">=" or two == "<=") then
    out[#out + 1] = two .. " bool"; i = i + 2 goto continue
  elseif depth == 0 and (c == ">" or c == "<") then
    out[#out + 1] = c .. " bool"; i = i + 1 goto continue
  end
  out[#out + 1] = c
  i = i + 1
  ::continue::
end
print(table.concat(out))'
}

for line in "${rules[@]}"; do
    IFS=$'\x1f' read -r name health last_error query <<<"$line"
    expect_eq "rule $name: Prometheus evaluates it without error" "$health${last_error:+: $last_error}" ok
    answer=$(prom_query "$query")
    expect_lua "rule $name: the expression parses" "$answer" 'j.status == "success"'
    bool_query=$(with_bool "$query")
    prom_has "rule $name has data: $bool_query" 10 "$bool_query" '#j.data.result >= 1'
done

# --- every dashboard query: parses, returns data ----------------------------------
# $node and $job are "All" (.*); $__range and $__rate_interval as Grafana
# would set them for a short range.
mapfile -t panel_queries < <(lua5.4 -e '
local cjson = require "cjson"
local d = cjson.decode(io.read("a"))
local function each(panels)
  for _, p in ipairs(panels) do
    for _, t in ipairs(p.targets or {}) do print(p.title .. "\t" .. t.refId .. "\t" .. t.expr) end
    each(p.panels or {})
  end
end
each(d.panels)' <"$DASHBOARD")
expect_eq "the dashboard has its queries" "$((${#panel_queries[@]} >= 25))" 1
for line in "${panel_queries[@]}"; do
    IFS=$'\t' read -r title ref expr <<<"$line"
    query=${expr//\$node/.*}
    query=${query//\$gpu/.*}
    query=${query//\$job/.*}
    query=${query//\$__range/10m}
    query=${query//\$__rate_interval/30s}
    prom_has "panel \"$title\" $ref: returns data" 10 "$query" '#j.data.result >= 1'
done
# The MIG table's rows: one per slice of the demo node's MIG GPU on gpua and
# gpub (two each), each with the state its join adds.
slices_query=$(jq_lua '(function() for _, p in ipairs(j.panels) do if p.title == "MIG slices now" then return p.targets[1].expr end end end)()' "$(cat "$DASHBOARD")")
slices_query=${slices_query//\$node/.*}
prom_has "panel \"MIG slices now\": a row per slice, with its node, profile, uuid and state" 10 "${slices_query//\$gpu/.*}" '(function()
       if #j.data.result ~= 4 then return false end
       local states = { held = true, ["reserved-idle"] = true, unaccounted = true, free = true }
       for _, r in ipairs(j.data.result) do
         local m = r.metric
         if not (m.node and m.mig_profile and m.mig_uuid:find("^MIG%-") and states[m.state]) then return false end
       end
       return true
     end)()'
for variable in node gpu job; do
    definition=$(jq_lua "(function() for _, v in ipairs(j.templating.list) do if v.name == '$variable' then return v.query.query end end end)()" "$(cat "$DASHBOARD")")
    selector=$(sed -n 's/^label_values(\(.*\), \([a-z_]*\))$/\1/p' <<<"$definition")
    label=$(sed -n 's/^label_values(\(.*\), \([a-z_]*\))$/\2/p' <<<"$definition")
    values=$(curl -s --get --data-urlencode "match[]=${selector//\$node/.*}" "$PROM/api/v1/label/$label/values")
    expect_lua "variable \$$variable ($definition) has values" "$values" 'j.status == "success" and #j.data >= 2'
done
# shellcheck disable=SC2016 # ${datasource} is Grafana's, not the shell's
expect_lua "the dashboard's datasource is a variable, every panel uses it" "$(cat "$DASHBOARD")" '
    local ds = false
    for _, v in ipairs(j.templating.list) do ds = ds or (v.type == "datasource" and v.name == "datasource") end
    local function uses(panels)
      for _, p in ipairs(panels) do
        if p.type ~= "row" and not (p.datasource and p.datasource.uid == "${datasource}") then return false end
        for _, t in ipairs(p.targets or {}) do if t.datasource.uid ~= "${datasource}" then return false end end
        if not uses(p.panels or {}) then return false end
      end
      return true
    end
    return ds and uses(j.panels)'

# --- every metric and label the rules and the dashboard name is in /metrics -------
metrics_text=$(for url in "$URL_A" "$URL_B" "$URL_C" "$URL_FLEET"; do curl -s "$url/metrics"; done)
named=$(cat "$RULES_FILE" "$HEALTH_RULES" "$DASHBOARD")
while read -r metric; do
    expect_in "$metric exists in /metrics" "$metrics_text" "# TYPE $metric "
done < <(grep -o 'gpuledger_[a-z_]*' <<<"$named" | grep -v '_$' | sort -u)
# Labels: in matchers ({label=...}), by (...), $labels.X and {{X}} of the
# annotations and legends; instance and job are Prometheus' own, else and
# end the template language's.
while read -r label; do
    case $label in instance | job | alertname | value | else | end) continue ;; esac
    expect_in "label $label exists in /metrics" "$metrics_text" "$label=\""
done < <(python3 - "$RULES_FILE" "$HEALTH_RULES" "$DASHBOARD" <<'PY'
import re, sys
text = "".join(open(path).read() for path in sys.argv[1:])
labels = set()
for body in re.findall(r'\{([^{}]*)\}', text):
    labels.update(re.findall(r'([a-z_]+)\s*(?:=~|!~|!=|=)\s*\\?"', body))
for group in re.findall(r'\bby \(([^)]*)\)', text):
    labels.update(x.strip() for x in group.split(","))
labels.update(re.findall(r'\$labels\.([a-z_]+)', text))
labels.update(re.findall(r'\{\{\s*([a-z_]+)\s*\}\}', text))
print("\n".join(sorted(l for l in labels if l)))
PY
)

# --- promtool: the rules check, their unit tests pass, and can fail ---------------
if said=$(promtool check rules "$RULES_FILE" 2>&1); then pass "promtool check rules"; else fail "promtool check rules" "$said"; fi
if said=$(cd "$(dirname "$RULES_TEST")" && promtool test rules "$(basename "$RULES_TEST")" 2>&1); then
    pass "promtool test rules"
else
    fail "promtool test rules" "${said:0:2000}"
fi
# mutate THRESHOLD REPLACEMENT ALERT: the unit tests fail on a copy of the
# rules whose THRESHOLD (a literal line fragment) became REPLACEMENT.
mutate() {
    local dir=$WORK/mutant-$3
    mkdir -p "$dir"
    cp "$RULES_TEST" "$dir/"
    python3 - "$RULES_FILE" "$dir/gpuledger.rules.yml" "$1" "$2" <<'PY'
import sys
text = open(sys.argv[1]).read()
assert text.count(sys.argv[3]) == 1, "the threshold must occur once"
open(sys.argv[2], "w").write(text.replace(sys.argv[3], sys.argv[4]))
PY
    if said=$(cd "$dir" && promtool test rules gpuledger.rules.test.yml 2>&1); then
        fail "promtool test rules fails with $3's threshold mutated ($1 → $2)" "it passed"
    else
        expect_in "promtool test rules fails with $3's threshold mutated ($1 → $2)" "$said" "alertname: $3"
    fi
}
mutate '> 6 * 3600' '> 8 * 3600' GPULedgerReservedIdle
mutate '[1d])) >= 3600' '[1d])) >= 360' GPULedgerJobMostlyIdle
mutate 'for: 30m' 'for: 25m' GPULedgerTenantWithoutReservation

# --- both serves stop cleanly -----------------------------------------------------
# stop_node NAME PID LOG: SIGTERM, exit 0, a clean log.
stop_node() {
    SERVE_PID=$2
    stop_serve TERM
    expect_eq "serve $1 exits 0" "$SERVE_RC" 0
    expect_clean_log "serve $1" "$3"
}
stop_node gpua "$PID_A" "$LOG_A"
stop_node gpub "$PID_B" "$LOG_B"
stop_node gpuc "$PID_C" "$LOG_C"
stop_node "fleet" "$PID_FLEET" "$LOG_FLEET"
finish
