#!/usr/bin/env bash
# Site rules as a product through the whole binary: `rules` as a
# table and JSON; overrides that take effect without a rebuild (a replaced
# default, a new code, thresholds.lua, a default switched off, the
# GPULEDGER_RULES equivalent); `rules --check [DIR]` on good and broken
# directories over the demo node and --replay snapshots (exit 0 / 1 / 2,
# every error with its file and line); `rules --prometheus` through
# `promtool check rules`; the examples of rules/examples/ installed the way
# docs/rules.md says; and site scripts (--scripts, GPULEDGER_SCRIPTS): the
# ls columns override, and their sandbox. No GPU needed: --demo and
# testdata/site-rules/snapshots/.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
out="" err="" # what run leaves (with $rc)

SITE=$TESTDATA/site-rules
BROKEN=$TESTDATA/rules
EXAMPLES=$SRC/rules/examples
SNAP=$SITE/snapshots/ci-node.json
NONE=$WORK/no-rules # no site rules, whatever this machine has in /etc
mkdir "$NONE"

# timed NAME LIMIT_MS ARGS...: runs gpuledger ARGS and checks it took less
# than LIMIT_MS. Leaves $out, $err, $rc.
timed() {
    local name=$1 limit=$2 started elapsed
    shift 2
    started=$(date +%s%N)
    run "$@"
    elapsed=$((($(date +%s%N) - started) / 1000000))
    if [ "$elapsed" -lt "$limit" ]; then pass "$name: $elapsed ms (< $limit)"; else fail "$name: under $limit ms" "took $elapsed ms"; fi
}

# The codes the default rules declare (each file of rules/ but the data
# files has one `code = "…"`), sorted: a new rule file needs no edit here.
DEFAULT_CODES=$(sed -n 's/^  code = "\([a-z0-9-]*\)",$/\1/p' "$SRC"/rules/*.lua | LC_ALL=C sort | tr '\n' ' ')
TENANCY_ORDER='source-unavailable unreserved-tenant unmanaged-tenant contended reserved-idle encoder-saturated hot idle held'

# --- rules: the effective set -------------------------------------------------
run rules --rules "$NONE"
expect_rc "rules: exit 0" 0
expect_eq "rules: nothing on stderr" "$err" ""
expect_in "rules: a table with a header" "$out" "│ code"
for code in $DEFAULT_CODES; do
    expect_in "rules: lists $code" "$out" "│ $code "
done
expect_in "rules: says where each came from" "$out" "embedded"

run rules --json --rules "$NONE"
expect_rc "rules --json: exit 0" 0
expect_lua "rules --json: every default code once, no errors" "$out" \
    "local s = {}; for i, r in ipairs(j.rules) do s[i] = r.code end; table.sort(s); return table.concat(s, ' ') .. ' ' == '$DEFAULT_CODES' and #j.errors == 0"
expect_lua "rules --json: listed by rank, then the unranked by name" "$out" \
    'for i = 2, #j.rules do local a, b = j.rules[i - 1], j.rules[i]; local ra, rb = a.rank or math.huge, b.rank or math.huge; if ra > rb or (ra == rb and a.code >= b.code) then return false end end; return true'
expect_lua "rules --json: the tenancy codes first, in their order" "$out" \
    "local s = {}; for i = 1, 9 do s[i] = j.rules[i].code end; return table.concat(s, ' ') == '$TENANCY_ORDER'"
expect_lua "rules --json: each has code, level, doc and origin" "$out" \
    'for _, r in ipairs(j.rules) do if not (r.code and r.level and r.doc ~= "" and r.origin == "embedded") then return false end end; return true'
expect_lua "rules --json: the contract's levels" "$out" \
    'local l = {}; for _, r in ipairs(j.rules) do l[r.code] = r.level end; return l["source-unavailable"] == "ERROR" and l["unmanaged-tenant"] == "BAD" and l.hot == "WARN" and l.idle == "OK"'
expect_lua "rules --json: the examples are embedded but not loaded as rules" "$out" \
    'for _, r in ipairs(j.rules) do if r.code == "memory-nearly-full" or r.code == "reserved-idle-long" then return false end end; return true'
run rules --json --allow-unmanaged --rules "$NONE"
expect_lua "rules --allow-unmanaged: unmanaged-tenant is WARN (level under the policy)" "$out" \
    'for _, r in ipairs(j.rules) do if r.code == "unmanaged-tenant" then return r.level == "WARN" end end'

# --- overrides take effect without a rebuild ------------------------------------
site=$WORK/site
cp -r "$SITE/good" "$site"
run rules --json --rules "$site"
expect_rc "site rules: rules exit 0" 0
expect_lua "site rules: hot comes from the site file" "$out" \
    "for _, r in ipairs(j.rules) do if r.code == 'hot' then return r.origin == '$site/hot.lua' and r.level == 'BAD' and r['for'] == '10m' end end"
expect_lua "site rules: the new code gpu-busy is listed with its file" "$out" \
    "for _, r in ipairs(j.rules) do if r.code == 'gpu-busy' then return r.origin == '$site/gpu_busy.lua' end end; return false"
run check --demo --rules "$site"
expect_in "site rules: the replaced hot rule judges (temp_max 80 from thresholds.lua)" "$out" "site hot: 84 °C, at or over 80 °C"
expect_in "site rules: the new code finds" "$out" "busy: 97% util (busy_pct 85)"
sed -i 's/site hot: /edited hot: /' "$site/hot.lua"
run check --demo --rules "$site"
expect_in "site rules: an edited file takes effect at the next run" "$out" "edited hot: 84 °C"
printf 'return { temp_max = 90, busy_pct = 85 }\n' >"$site/thresholds.lua"
run check --demo --rules "$site"
expect_not_in "site rules: a changed thresholds.lua takes effect" "$out" "edited hot"
run check --demo --rules "$site" --temp-max 70
expect_in "site rules: a flag wins over thresholds.lua" "$out" "at or over 70 °C"
printf 'return false\n' >"$site/idle.lua"
run check --demo --json --rules "$site"
expect_lua "site rules: a file returning false switches a default off" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "idle" then return false end end; return true'
run rules --rules "$site"
expect_in "rules: a default switched off is listed as off, naming the site file" "$out" "│ idle "
expect_in "rules: names the file that switched it off" "$out" "switched off by $site/idle.lua"
run rules --json --rules "$site"
expect_lua "rules --json: the default switched off is in off, not in rules" "$out" \
    "for _, r in ipairs(j.rules) do if r.code == 'idle' then return false end end; return #j.off == 1 and j.off[1].code == 'idle' and j.off[1].origin == '$site/idle.lua'"
mkdir "$WORK/empty-default"
: >"$WORK/empty-default/unmanaged_tenant.lua"
run check --demo --rules "$WORK/empty-default" --exit-on error
expect_rc "an empty file named like a default: check --exit-on error fails (3: an ERROR)" 3
expect_in "an empty file named like a default: a rule-error naming it" "$out" \
    "$WORK/empty-default/unmanaged_tenant.lua: returned nothing, want a table"
run rules --rules "$WORK/empty-default"
expect_rc "an empty file named like a default: rules exit 1" 1
expect_not_in "an empty file named like a default: not listed as switched off" "$out" "switched off"
GPULEDGER_RULES=$site run rules --json
expect_lua "GPULEDGER_RULES: the same as --rules" "$out" \
    "for _, r in ipairs(j.rules) do if r.code == 'gpu-busy' then return r.origin == '$site/gpu_busy.lua' end end; return false"
GPULEDGER_RULES=$WORK/missing run rules
expect_rc "GPULEDGER_RULES naming a missing directory: usage error" 2
expect_eq "the usage error names the variable, not a flag never typed" "$err" \
    "gpuledger: GPULEDGER_RULES=$WORK/missing: no such directory"
for command in version help "help ls"; do
    # shellcheck disable=SC2086 # "help ls" is two words
    GPULEDGER_RULES=relative GPULEDGER_SCRIPTS=$WORK/missing run $command
    expect_rc "$command reads no site directory: their variables do not stop it" 0
done
run rules --rules relative/rules.d
expect_rc "--rules relative: usage error" 2

# --- rules --check DIR ---------------------------------------------------------
run rules --check "$SITE/good" --replay "$SNAP"
expect_rc "check good: exit 0" 0
expect_in "check good: the demo node's findings" "$out" "site hot: 84 °C, at or over 80 °C"
expect_in "check good: the replayed node" "$out" "gpu-ci-02"
expect_in "check good: the replayed node's findings" "$out" "busy: 88% util (busy_pct 85)"
expect_in "check good: says it is clean" "$out" "ok: no rule errors over 2 input(s)"
run rules --check "$SITE/good" --replay "$SNAP" --replay "$SNAP" --json
expect_rc "check good --json: exit 0" 0
expect_lua "check good --json: ok, three inputs (demo and --replay twice), findings per input" "$out" \
    'return j.ok == true and #j.inputs == 3 and j.inputs[1].input == "demo" and j.inputs[2].node == "gpu-ci-02" and #j.inputs[2].findings > 0 and #j.errors == 0'
run rules --check --rules "$SITE/good"
expect_rc "check without DIR: checks --rules" 0
expect_in "check without DIR: names the --rules directory" "$out" "$SITE/good"
run rules --check --rules "$NONE"
expect_rc "check of an empty directory (the embedded defaults): exit 0" 0

# check_broken NAME DIR WHERE...: rules --check DIR exits 1 in under 10 s
# and names every WHERE (file, or file:line) in its report.
check_broken() {
    local name=$1 dir=$2 where
    shift 2
    timed "check $name" 10000 rules --check "$dir" --replay "$SNAP"
    expect_rc "check $name: exit 1" 1
    expect_no_crash "check $name"
    for where in "$@"; do
        expect_in "check $name: names ${where#"$dir"/}" "$out" "$where"
    done
    expect_in "check $name: says it failed" "$out" "FAIL:"
}
check_broken syntax-error "$BROKEN/syntax-error" "$BROKEN/syntax-error/broken.lua:8:"
check_broken infinite-loop "$BROKEN/infinite-loop" "$BROKEN/infinite-loop/spin.lua:9:"
check_broken raises "$BROKEN/raises" "$BROKEN/raises/raise.lua:8:"
check_broken wrong-shape "$BROKEN/wrong-shape" "$BROKEN/wrong-shape/number.lua: returned a number"
check_broken memory-hog "$BROKEN/memory-hog" "$BROKEN/memory-hog/hog.lua:9:"
check_broken bad-for "$SITE/bad-for" "$SITE/bad-for/late.lua: [\"for\"] of late"
check_broken level-fn "$SITE/level-fn" "$SITE/level-fn/moody.lua:5: no mood today"
mkdir "$WORK/misspelt"
printf 'return { code = "note", level = "WARN", helth = true, evaluate = function() end }\n' >"$WORK/misspelt/note.lua"
check_broken unknown-key "$WORK/misspelt" "$WORK/misspelt/note.lua: note has the unknown key \"helth\""
# A helper given the wrong type fails in the embedded script, and the error
# says which one and where: the default scripts are embedded as bytecode
# with their line information.
mkdir "$WORK/misuse"
printf 'return { code = "misuse", level = "WARN", doc = "d", evaluate = function() return gl.list(42) end }\n' >"$WORK/misuse/misuse.lua"
line=$(grep -n '#items' "$SRC/lua/gpuledger/gl.lua" | head -1 | cut -d: -f1)
check_broken helper-misuse "$WORK/misuse" "[embedded] lua/gpuledger/gl.lua:$line: attempt to get length of a number value"
# A site file is loaded as text only, never as bytecode.
mkdir "$WORK/compiled"
luac5.4 -o "$WORK/compiled/compiled.lua" "$EXAMPLES/memory_nearly_full.lua"
check_broken bytecode "$WORK/compiled" "$WORK/compiled/compiled.lua" "attempt to load a binary chunk"
# The same from a long checkout path (a Nomad allocation directory, a clone
# in a mktemp -d): Lua shortens file names past 60 characters in its own
# messages; the whole path must still reach the user.
LONG=$WORK/a-checkout-in-a-temporary-directory-with-a-long-name/clone/of/the/repository/testdata
mkdir -p "$LONG"
cp -R "$BROKEN" "$LONG/rules"
cp -R "$SITE" "$LONG/site-rules"
check_broken long-path-syntax-error "$LONG/rules/syntax-error" "$LONG/rules/syntax-error/broken.lua:8:"
check_broken long-path-raises "$LONG/rules/raises" "$LONG/rules/raises/raise.lua:8:"
check_broken long-path-memory-hog "$LONG/rules/memory-hog" "$LONG/rules/memory-hog/hog.lua:9:"
check_broken long-path-level-fn "$LONG/site-rules/level-fn" "$LONG/site-rules/level-fn/moody.lua:5: no mood today"
check_broken long-path-escapes "$LONG/site-rules/escapes" "$LONG/site-rules/escapes/io_open.lua:4:" \
    "$LONG/site-rules/escapes/spin.lua:4:"
E=$SITE/escapes
check_broken escapes "$E" "$E/io_open.lua:4:" "$E/os_execute.lua:4:" "$E/require_ffi.lua:4:" \
    "$E/debug_sethook.lua:4:" "$E/spin.lua:4:" "$E/shared_metatable.lua:4:" "$E/ledger_write.lua:4:" \
    "$E/global_write.lua:4:" "$E/finalizer.lua:4:" "rule string-rep ($E/string_rep.lua): stopped"
expect_in "check escapes: ten rule errors" "$out" "10 rule error(s):"
expect_in "check escapes: the other rules still ran" "$out" "reserved by worker/worker (alloc 4d1e6a9b)"
if [ ! -e /tmp/gpuledger-escaped ]; then pass "check escapes: os.execute ran nothing"; else fail "check escapes: os.execute ran nothing" "/tmp/gpuledger-escaped exists"; fi
run rules --check "$E" --json
expect_lua "check escapes --json: ok false, ten errors, each a rule-error finding of the demo input" "$out" \
    'local n = 0; for _, f in ipairs(j.inputs[1].findings) do if f.code == "rule-error" then n = n + 1 end end; return j.ok == false and #j.errors == 10 and n == 10'

run rules --check "$WORK/missing"
expect_rc "check of a missing DIR: usage error" 2
expect_in "check of a missing DIR: names it" "$err" "$WORK/missing"
run rules --check relative/dir
expect_rc "check of a relative DIR: usage error" 2
run rules --check "$SITE/good" "$SITE/good"
expect_rc "check with two DIRs: usage error" 2
run rules --check "$SITE/good" --replay "$WORK/missing.json"
expect_rc "check with an unreadable --replay: exit 1" 1
expect_in "check with an unreadable --replay: says so" "$out" "$WORK/missing.json: cannot be read"
run check --demo --replay "$SNAP" --replay "$SNAP"
expect_rc "--replay twice outside rules --check: usage error" 2
run rules --check --prometheus
expect_rc "--check with --prometheus: usage error" 2

# --- rules --prometheus ----------------------------------------------------------
# promtool comes with Debian's prometheus package: installed when missing,
# and when it cannot be, its checks are skipped with the reason.
promtool_why=""
if ! command -v promtool >/dev/null 2>&1; then
    if ! "$SRC/scripts/install-missing" prometheus >"$WORK/apt.log" 2>&1; then
        promtool_why="prometheus (promtool) cannot be installed: $(tail -n 1 "$WORK/apt.log")"
    elif ! command -v promtool >/dev/null 2>&1; then
        promtool_why="the prometheus package installed no promtool"
    fi
fi

# promtool_ok NAME FILE: promtool check rules FILE passes (or is skipped).
promtool_ok() {
    local said
    if [ -n "$promtool_why" ]; then
        skip "$1" "$promtool_why"
    elif said=$(promtool check rules "$2" 2>&1); then
        pass "$1"
    else
        fail "$1" "$said"
    fi
}

run rules --prometheus --rules "$NONE"
expect_rc "prometheus: exit 0" 0
printf '%s\n' "$out" >"$WORK/default.rules.yml"
promtool_ok "prometheus: promtool check rules passes" "$WORK/default.rules.yml"
expect_in "prometheus: a rule group" "$out" "groups:"
expect_in "prometheus: CamelCase alert names" "$out" "alert: GPULedgerReservedIdle"
expect_in "prometheus: expr per card, else per node" "$out" \
    'expr: gpuledger_gpu_finding{code="reserved-idle"} > 0 or on(node) gpuledger_findings{code="reserved-idle"} > 0'
# shellcheck disable=SC2016 # a Prometheus template, not a shell expansion
expect_in "prometheus: summary templated with the node" "$out" '{{ $labels.node }}'
expect_in "prometheus: an alert for rule-error" "$out" "alert: GPULedgerRuleError"
expect_not_in "prometheus: no alert for OK codes (idle)" "$out" "alert: GPULedgerIdle"
expect_not_in "prometheus: no alert for OK codes (held)" "$out" "alert: GPULedgerHeld"
expect_in "prometheus: says why OK codes have none" "$out" "OK codes have no alert"
alert_block() { awk -v a="alert: $1" '$0 ~ a"$" {on=1} on && /^$/ {exit} on' <<<"$2"; }
block=$(alert_block GPULedgerReservedIdle "$out")
expect_in "prometheus: WARN waits 15m" "$block" "for: 15m"
expect_in "prometheus: WARN is severity warning" "$block" "severity: warning"
block=$(alert_block GPULedgerUnreservedTenant "$out")
expect_in "prometheus: BAD waits 5m" "$block" "for: 5m"
expect_in "prometheus: BAD is severity critical" "$block" "severity: critical"
block=$(alert_block GPULedgerUnmanagedTenant "$out")
expect_in "prometheus: a rule's own for wins (unmanaged-tenant 15m)" "$block" "for: 15m"
# The alerts name the card: promtool evaluates the generated rules on
# series as serve writes them. Two cards of gpud with unmanaged tenants
# fire one alert each with their gpu and uuid; a MIG slice's with its
# mig_uuid; gpue's source-unavailable about no GPU fires once for the node.
cat >"$WORK/default.rules.test.yml" <<'EOF'
rule_files:
  - default.rules.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'gpuledger_gpu_finding{node="gpud",gpu="0",uuid="GPU-a",code="unmanaged-tenant",level="BAD"}'
        values: '1x30'
      - series: 'gpuledger_gpu_finding{node="gpud",gpu="2",uuid="GPU-c",code="unmanaged-tenant",level="BAD"}'
        values: '2x30'
      - series: 'gpuledger_findings{node="gpud",code="unmanaged-tenant",level="BAD"}'
        values: '3x30'
      - series: 'gpuledger_gpu_finding{node="gpum",gpu="0",uuid="GPU-m",mig_uuid="MIG-1",mig_profile="3g.40gb",code="unmanaged-tenant",level="BAD"}'
        values: '1x30'
      - series: 'gpuledger_findings{node="gpum",code="unmanaged-tenant",level="BAD"}'
        values: '1x30'
      - series: 'gpuledger_findings{node="gpue",code="source-unavailable",level="ERROR"}'
        values: '1x30'
      - series: 'gpuledger_findings{node="gpud",code="source-unavailable",level="ERROR"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: GPULedgerUnmanagedTenant
        exp_alerts:
          - exp_labels: {severity: critical, node: gpud, gpu: "0", uuid: GPU-a, code: unmanaged-tenant, level: BAD}
            exp_annotations:
              summary: "gpuledger unmanaged-tenant on gpud GPU 0 (GPU-a): UNMANAGED_DOC"
              description: "1 unmanaged-tenant finding(s), level BAD, on gpud GPU 0 (GPU-a) for 15m: UNMANAGED_DOC. `gpuledger check` on the node lists them."
          - exp_labels: {severity: critical, node: gpud, gpu: "2", uuid: GPU-c, code: unmanaged-tenant, level: BAD}
            exp_annotations:
              summary: "gpuledger unmanaged-tenant on gpud GPU 2 (GPU-c): UNMANAGED_DOC"
              description: "2 unmanaged-tenant finding(s), level BAD, on gpud GPU 2 (GPU-c) for 15m: UNMANAGED_DOC. `gpuledger check` on the node lists them."
          - exp_labels: {severity: critical, node: gpum, gpu: "0", uuid: GPU-m, mig_uuid: MIG-1, mig_profile: 3g.40gb, code: unmanaged-tenant, level: BAD}
            exp_annotations:
              summary: "gpuledger unmanaged-tenant on gpum GPU 0 (GPU-m) MIG 3g.40gb MIG-1: UNMANAGED_DOC"
              description: "1 unmanaged-tenant finding(s), level BAD, on gpum GPU 0 (GPU-m) MIG 3g.40gb MIG-1 for 15m: UNMANAGED_DOC. `gpuledger check` on the node lists them."
      - eval_time: 20m
        alertname: GPULedgerSourceUnavailable
        exp_alerts:
          - exp_labels: {severity: critical, node: gpue, code: source-unavailable, level: ERROR}
            exp_annotations:
              summary: "gpuledger source-unavailable on gpue: SOURCE_DOC"
              description: "1 source-unavailable finding(s), level ERROR, on gpue for 5m: SOURCE_DOC. `gpuledger check` on the node lists them."
EOF
# doc_of ALERT: the doc text the generated rule quotes in its summary.
doc_of() { sed -n "/alert: $1\$/,/^\$/p" "$WORK/default.rules.yml" | sed -n 's/^ *summary: "gpuledger [^ ]* on .*{{ end }}: \(.*\)"$/\1/p'; }
UNMANAGED_DOC=$(doc_of GPULedgerUnmanagedTenant) SOURCE_DOC=$(doc_of GPULedgerSourceUnavailable) python3 -c '
import os, sys
p = sys.argv[1]
s = open(p).read().replace("UNMANAGED_DOC", os.environ["UNMANAGED_DOC"]).replace("SOURCE_DOC", os.environ["SOURCE_DOC"])
open(p, "w").write(s)' "$WORK/default.rules.test.yml"
if [ -n "$promtool_why" ]; then
    skip "prometheus: the alerts name node, GPU, uuid and MIG slice (promtool test rules)" "$promtool_why"
elif said=$(cd "$WORK" && promtool test rules default.rules.test.yml 2>&1); then
    pass "prometheus: the alerts name node, GPU, uuid and MIG slice (promtool test rules)"
else
    fail "prometheus: the alerts name node, GPU, uuid and MIG slice (promtool test rules)" "$said"
fi

run rules --prometheus --rules "$NONE" --allow-unmanaged
expect_in "prometheus --allow-unmanaged: unmanaged-tenant is a warning" "$(alert_block GPULedgerUnmanagedTenant "$out")" "severity: warning"

run rules --prometheus --rules "$SITE/good"
expect_rc "prometheus with site rules: exit 0" 0
printf '%s\n' "$out" >"$WORK/site.rules.yml"
promtool_ok "prometheus with site rules: promtool check rules passes" "$WORK/site.rules.yml"
expect_in "prometheus with site rules: the site code has an alert" "$out" 'expr: gpuledger_gpu_finding{code="gpu-busy"} > 0'
expect_in "prometheus with site rules: named GPULedgerGpuBusy" "$out" "alert: GPULedgerGpuBusy"
block=$(alert_block GPULedgerHot "$out")
expect_in "prometheus with site rules: for from the rule's [\"for\"]" "$block" "for: 10m"
expect_in "prometheus with site rules: the replaced rule's level (BAD: critical)" "$block" "severity: critical"

odd=$WORK/odd-doc
mkdir "$odd"
cat >"$odd/odd.lua" <<'EOF'
return { code = "odd-doc", level = "WARN", ["for"] = "1h30m",
  doc = [[quotes " and \ backslash, {{ braces }} and $value]],
  evaluate = function() end }
EOF
run rules --prometheus --rules "$odd"
printf '%s\n' "$out" >"$WORK/odd.rules.yml"
promtool_ok "prometheus: a doc with quotes, backslashes and template braces still passes promtool" "$WORK/odd.rules.yml"
expect_in "prometheus: a compound duration" "$out" "for: 1h30m"
run rules --prometheus --rules "$BROKEN/syntax-error"
expect_rc "prometheus with a broken rule: exit 1" 1
expect_in "prometheus with a broken rule: names it on stderr" "$err" "broken.lua:8:"
run rules --prometheus --json
expect_rc "prometheus with --json: usage error" 2
PROMETHEUS_URL=http://prom.example:9090 run rules --rules "$NONE"
expect_in "PROMETHEUS_URL does not turn rules into --prometheus" "$out" "│ code"

# --- the examples, installed as docs/rules.md says --------------------------------
ex=$WORK/examples
mkdir "$ex"
cp "$EXAMPLES/memory_nearly_full.lua" "$EXAMPLES/reserved_idle_long.lua" "$EXAMPLES/thresholds.lua" "$ex/"
cp "$EXAMPLES/allow_listed_container.lua" "$ex/unmanaged_tenant.lua"
run rules --check "$ex" --replay "$SNAP" --json
expect_rc "examples: rules --check exits 0" 0
expect_lua "examples: memory-nearly-full on the replayed gpu0 (22100 of 23034 MiB, ratio 0.9)" "$out" \
    'for _, f in ipairs(j.inputs[2].findings) do if f.code == "memory-nearly-full" then return f.gpu:sub(1, 4) == "gpu0" and f.message:find("96%", 1, true) ~= nil end end; return false'
expect_lua "examples: the allow-listed dcgm-exporter is not reported" "$out" \
    'for _, f in ipairs(j.inputs[2].findings) do if f.code == "unmanaged-tenant" then return false end end; return true'
expect_lua "examples: an unmanaged container not on the list still is (demo ffmpeg-manual)" "$out" \
    'for _, f in ipairs(j.inputs[1].findings) do if f.code == "unmanaged-tenant" and f.message:find("ffmpeg-manual", 1, true) then return true end end; return false'
expect_lua "examples: thresholds.lua sets encoder_max 8" "$out" \
    'for _, f in ipairs(j.inputs[1].findings) do if f.code == "encoder-saturated" then return f.message:find("limit of 8", 1, true) ~= nil end end; return false'
expect_lua "examples: reserved-idle-long stays quiet without a history" "$out" \
    'for _, i in ipairs(j.inputs) do for _, f in ipairs(i.findings) do if f.code == "reserved-idle-long" then return false end end end; return true'
cp "$EXAMPLES/allow_listed_container.lua" "$ex/"
run rules --rules "$ex"
expect_rc "examples: allow_listed_container.lua under its own name defines unmanaged-tenant twice: exit 1" 1
expect_in "examples: ... and says so" "$err" "already defined"

# --- site scripts: the ls columns, and their sandbox ---------------------------------
run ls --demo --rules "$NONE"
plain=$out
run ls --demo --rules "$NONE" --scripts "$EXAMPLES/scripts"
expect_rc "columns override: exit 0" 0
expect_in "columns override: a power column" "$out" "│ power │"
expect_in "columns override: its cells" "$out" "│ 38 W  │"
expect_in "columns override: the default columns stay" "$out" "│ reserved by (nomad) "
GPULEDGER_SCRIPTS=$EXAMPLES/scripts run ls --demo --rules "$NONE"
expect_in "GPULEDGER_SCRIPTS: the same as --scripts" "$out" "│ power │"
run ls --demo --rules "$NONE" --scripts "$SRC/lua"
expect_eq "--scripts at the checkout's lua/: the same ls" "$out" "$plain"
run check --demo --rules "$NONE" --scripts "$SRC/lua"
expect_in "--scripts at the checkout's lua/: check works" "$out" "21 findings: 4 OK, 8 WARN, 8 BAD, 1 ERROR"

scripts=$WORK/scripts
mkdir -p "$scripts/gpuledger/render"
printf 'os.execute("touch %s/escaped")\nreturn {}\n' "$WORK" >"$scripts/gpuledger/render/columns.lua"
run ls --demo --rules "$NONE" --scripts "$scripts"
expect_rc "site script calling os.execute: fails" 1
expect_in "site script calling os.execute: names the file and line" "$err" "gpuledger/render/columns.lua:1:"
if [ ! -e "$WORK/escaped" ]; then pass "site script calling os.execute: ran nothing"; else fail "site script calling os.execute: ran nothing"; fi
printf 'local core = require "gpuledger.core"\nreturn {}\n' >"$scripts/gpuledger/render/columns.lua"
run ls --demo --rules "$NONE" --scripts "$scripts"
expect_in "site script requiring gpuledger.core: refused" "$err" 'require "gpuledger.core"'
printf 'return { columns = "nope" }\n' >"$scripts/gpuledger/render/columns.lua"
run ls --demo --rules "$NONE" --scripts "$scripts"
expect_in "a columns override of the wrong shape: says what it wants" "$err" "gpuledger.render.columns: want"
run ls --demo --scripts "$WORK/missing"
expect_rc "--scripts naming a missing directory: usage error" 2
run ls --demo --scripts relative/scripts
expect_rc "--scripts relative: usage error" 2

finish
