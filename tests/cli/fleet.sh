#!/usr/bin/env bash
# fleet ls and fleet check (docs/contract.md#fleet) over real `gpuledger serve` processes
# (the demo node and a replayed one) and nodes that misbehave: a dead port,
# one that accepts and never answers, one that drips a byte a second, one
# answering HTML, one garbage, one a redirect, one serving a schema-0 ledger
# and one an older release's byte shape (null arrays). Asserts the
# counts, the job table, the order, the errors, and that the whole run ends
# within --timeout and a small margin however many nodes are slow.
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"

command -v python3 >/dev/null || { skip "fleet" "needs python3 for the misbehaving nodes"; finish; }
mkdir "$WORK/rules"
export GPULEDGER_RULES=$WORK/rules

start_serve demo --demo --node gpua --listen 127.0.0.1:0 --interval 1h || { fail "serve --demo starts" "$(cat "$SERVE_LOG")"; finish; }
DEMO=${URL#http://}
start_serve replay --replay "$TESTDATA/site-rules/snapshots/ci-node.json" --listen 127.0.0.1:0 --interval 1h ||
    { fail "serve --replay starts" "$(cat "$SERVE_LOG")"; finish; }
REPLAY=${URL#http://}

# node NAME MODE HOST [FILE]: a fake node; sets NODE (host:port).
node() {
    local name=$1 mode=$2 host=$3 file=${4:-}
    local args=(--mode "$mode" --host "$host" --port-file "$WORK/$name.port" --max-seconds 120)
    [ -n "$file" ] && args+=(--file "$file")
    if ! fake_start "$WORK/$name.stderr" "$WORK/$name.port" python3 "$FAKES/fake_node.py" "${args[@]}"; then
        fail "fake node $name starts" "$(cat "$WORK/$name.stderr")"
        finish
    fi
    NODE=$host:$(cat "$WORK/$name.port")
}
node go file 127.0.0.1 "$TESTDATA/fleet/go-ledger.json"; GO=$NODE
node old file 127.0.0.1 "$TESTDATA/fleet/schema0-ledger.json"; OLD=$NODE
node silent silent 127.0.0.2; SILENT=$NODE
node drip drip 127.0.0.3; DRIP=$NODE
node html html 127.0.0.4; HTML=$NODE
refusing_port 127.0.0.5
DEAD=127.0.0.5:$REFUSING_PORT
node garbage garbage 127.0.0.6; GARBAGE=$NODE
node redirect redirect 127.0.0.7; REDIRECT=$NODE
ALL=$SILENT,$DEMO,$DRIP,$GO,$HTML,$DEAD,$OLD,$GARBAGE,$REPLAY,$REDIRECT

# ---- fleet ls ---------------------------------------------------------------
started=$(date +%s%N)
run fleet ls --targets "$ALL" --timeout 2s
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
expect_rc "fleet ls exits 0 with nodes down" 0
expect_no_crash "fleet ls"
if [ "$elapsed_ms" -lt 4500 ]; then pass "fleet ls ends within --timeout 2s and a margin (${elapsed_ms} ms)"; else
    fail "fleet ls ends within --timeout 2s and a margin" "took ${elapsed_ms} ms"; fi
expect_in "header counts nodes, unreachable and GPUs" "$out" "gpuledger fleet · 10 node(s), 6 unreachable · 11 GPU(s)"
expect_eq "nodes worst first (ERROR, BAD, WARN), then by name, the unreachable by their host:port" \
    "$(printf '%s\n' "$out" | sed -n 's/^│ \([^ ]*\) .*/\1/p' | head -11 | tr '\n' ' ')" \
    "node $SILENT $DRIP $HTML $DEAD $GARBAGE $REDIRECT gpua gpu-ci-02 gpu-old gpu-go "
row() { printf '%s\n' "$out" | grep "^│ $1 " | head -1 | tr -s ' '; }
expect_in "the demo node's verdict (as fleet check's, below) and counts, its MIG slices in parentheses" "$(row gpua)" \
    "│ gpua │ ERROR │ 8 │ 1 │ 5 (2) │ 2 (1) │ 1 (0) │ 1 (0) │ 1 (1) │"
expect_in "a line under the table says what the parentheses count" "$out" \
    $'\n(n): MIG slices, beside the GPUs; a GPU in MIG mode counts once, in its slices\' state\n'
expect_in "the job table counts the job on the demo's MIG slice" "$out" "│ ml/llm-serve "
expect_in "the replayed node's counts" "$(row gpu-ci-02)" "│ gpu-ci-02 │ BAD │ 1 │ 0 │ 2 │ 0 │ 1 │ 1 │ 0 │ 22100/38394 MiB │"
expect_in "the Go-shaped ledger classified locally (held, reserved-idle, free)" "$(row gpu-go)" "│ gpu-go │ WARN │ 0 │ 0 │ 3 │ 1 │ 1 │ 0 │ 1 │ 1024/69102 MiB │"
expect_in "the schema-0 node, marked" "$(row gpu-old)" "│ gpu-old (schema 0) │ BAD │ 1 │ 0 │ 1 │ 0 │ 0 │ 1 │ 0 │ 2048/15360 MiB │"
expect_in "fleet totals, the last row" "$(row fleet)" "│ fleet │ ERROR │ 10 │ 7 │ 11 (2) │ 3 (1) │ 3 (0) │ 3 (0) │ 2 (1) │"
expect_in "the totals row last" "$(printf '%s\n' "$out" | sed -n '/^│ node /,/^$/p' | grep '^│' | tail -1)" "│ fleet "
expect_in "an unreachable node's row: dashes, memory too" "$(row "$DEAD")" "│ $DEAD │ ERROR │ 0 │ 1 │ - │ - │ - │ - │ - │ - │"
expect_eq "every row as wide as the header (no error widens the table)" \
    "$(printf '%s\n' "$out" | sed -n '/^│ node /,/^$/p' | grep '^│' | awk '{ print length($0) }' | sort -u | wc -l)" 1
error_line() { printf '%s\n' "$out" | grep "^$1: unreachable: "; }
expect_in "silent node: timed out, on its own line under the table" "$(error_line "$SILENT")" "Timeout was reached"
expect_in "dripping node: timed out" "$(error_line "$DRIP")" "Timeout was reached"
expect_in "HTML node: not JSON" "$(error_line "$HTML")" "the answer (text/html; charset=utf-8) is not JSON"
expect_in "dead port: refused" "$(error_line "$DEAD")" "Connection refused"
expect_in "garbage node: not JSON" "$(error_line "$GARBAGE")" "is not JSON"
expect_in "redirect not followed" "$(error_line "$REDIRECT")" "/ledger: HTTP 302"
expect_in "job table: default/restreamer (Go node)" "$out" "│ default/restreamer │ 1        │ 1    │"
expect_in "job table: video/worker summed over nodes" "$out" "│ video/worker       │ 2        │ 0    │"

run fleet ls --json --targets "$ALL" --timeout 2s
expect_rc "fleet ls --json exits 0" 0
expect_lua "fleet ls --json: {at, schema, summary}" "$out" \
    'j.schema == 1 and type(j.at) == "string" and #j.summary.nodes == 10 and j.summary.total.unreachable == 6'
expect_lua "fleet ls --json: schema of each node (0 unreachable or old, 1 read)" "$out" \
    'local s = {} for _, n in ipairs(j.summary.nodes) do s[#s + 1] = n.node .. "=" .. math.tointeger(n.schema) end
     return table.concat(s, " ") == "'"$SILENT=0 $DRIP=0 $HTML=0 $DEAD=0 $GARBAGE=0 $REDIRECT=0"' gpua=1 gpu-ci-02=1 gpu-old=0 gpu-go=1"'
expect_lua "fleet ls --json: each node's verdict, worst first" "$out" \
    'local s = {} for _, n in ipairs(j.summary.nodes) do s[#s + 1] = n.worst .. math.tointeger(n.badFindings) .. "/" .. math.tointeger(n.errorFindings) end
     return table.concat(s, " ") == "ERROR0/1 ERROR0/1 ERROR0/1 ERROR0/1 ERROR0/1 ERROR0/1 ERROR8/1 BAD1/0 BAD1/0 WARN0/0" and j.summary.total.worst == "ERROR"'
expect_lua "fleet ls --json: unreachable only on the unreachable, with its error" "$out" \
    'return j.summary.nodes[1].unreachable == 1 and j.summary.nodes[1].error ~= nil and j.summary.nodes[8].unreachable == nil and j.summary.nodes[8].error == nil'

# ---- fleet check ------------------------------------------------------------
run fleet check --targets "$REPLAY,$GO" --json --exit-on bad
expect_rc "fleet check --exit-on bad over a real serve and a Go-shaped node: worst BAD, exit 2" 2
expect_lua "fleet check --json: {at, findings, schema, worst}" "$out" 'j.schema == 1 and j.worst == "BAD" and #j.findings > 0'
expect_lua "every finding names its node" "$out" \
    'for _, f in ipairs(j.findings) do if f.node ~= "gpu-go" and f.node ~= "gpu-ci-02" then return false end end return true'
# the node's findings, without the since suffix (serve's history adds it)
# and the address fleet adds (checked below: URL, what each must have)
findings_of() {
    NODE=$1 URL=${2:-} lua5.4 -e 'local c = require "cjson" local j = c.decode(io.read("a"))
      local out = {} for _, f in ipairs(j.findings) do if f.node == os.getenv("NODE") then
        assert((f.url or "") == os.getenv("URL"), "url " .. tostring(f.url))
        f.message, f.url = f.message:gsub(", for [^,]*$", ""), nil out[#out + 1] = f end end
      print(c.encode({findings = out}))'
}
run fleet check --targets "$DEMO" --json
same_json "fleet check judges a node as check does, each finding with its address" \
    "$(printf '%s' "$out" | findings_of gpua "http://$DEMO")" "$("$GPULEDGER" check --demo --node gpua --json | findings_of gpua)"

verdict_counts='local n = {BAD = 0, ERROR = 0} for _, f in ipairs(j.findings) do n[f.level] = (n[f.level] or 0) + 1 end'
run fleet check --targets "$DEMO,$REPLAY" --json
check_verdict=$(jq_lua "(function() $verdict_counts return n.BAD .. '/' .. n.ERROR end)()" "$out")
run fleet ls --targets "$DEMO,$REPLAY" --json
expect_eq "fleet ls's BAD and ERROR counts are fleet check's" \
    "$(jq_lua "math.tointeger(j.summary.total.badFindings) .. '/' .. math.tointeger(j.summary.total.errorFindings)" "$out")" "$check_verdict"

run fleet check --targets "$ALL" --timeout 2s --exit-on warn
expect_rc "fleet check with unreachable nodes: ERROR, exit 3" 3
expect_in "the unreachable node is an ERROR naming its address" "$out" "gpuledger at http://$DEAD could not be read"
expect_in "node column (codes padded to the longest, the demo's health codes)" "$out" "source-unavailable          $DEAD"
expect_in "ERRORs first" "$(printf "%s\n" "$out" | head -1)" "ERROR source-unavailable"
expect_in "counts line" "$out" "findings:"
flat_out=$out
flat_count=$(printf '%s\n' "$out" | grep -c '^[A-Z]')

# ---- fleet check --summary: the same findings grouped by level and code ------------
run fleet check --summary --targets "$ALL" --timeout 2s --exit-on warn
expect_rc "fleet check --summary exits as fleet check" 3
expect_in "the six unreachable nodes and the demo's hidden alloc are one group, first, naming them" "$(printf "%s\n" "$out" | head -1)" \
    "ERROR source-unavailable          7 finding(s), 1 GPU(s) on 7 node(s): 127.0.0.2:"
expect_in "a code on one GPU of one node" "$out" "BAD   xid-fatal                   1 finding(s), 1 GPU(s) on 1 node(s): gpua"
expect_eq "the counts line is fleet check's" "$(printf '%s\n' "$out" | tail -1)" "$(printf '%s\n' "$flat_out" | tail -1)"
group_count=$(printf '%s\n' "$out" | grep -c '^[A-Z]')
if [ "$group_count" -lt "$flat_count" ]; then pass "fewer lines than findings ($group_count groups, $flat_count findings)"; else
    fail "fewer lines than findings" "$group_count groups, $flat_count findings"; fi
run fleet check --summary --json --targets "$DEMO,$DEAD" --timeout 2s
expect_rc "fleet check --summary --json exits 0 without --exit-on" 0
expect_lua "--summary --json: {at, groups, schema, worst}, each group with its findings" "$out" \
    'j.schema == 1 and j.worst == "ERROR" and j.groups[1].code == "source-unavailable" and j.groups[1].count == #j.groups[1].findings
     and #j.groups[1].nodes == 2'
run fleet ls --summary --targets "$DEMO"
expect_rc "fleet ls --summary is a usage error" 2
expect_in "it names where --summary goes" "$err" "--summary is not a flag of fleet ls: fleet check takes it"

run fleet check --targets "$DEMO" --allow-unmanaged --no-idle --temp-max 0 --encoder-max -1
expect_in "the policy flags apply to every node: unmanaged is WARN" "$out" "WARN  unmanaged-tenant            gpua"
expect_not_in "the policy flags apply to every node: no encoder-saturated" "$out" "encoder-saturated"

# ---- on an 80-column terminal -------------------------------------------------
# fleet ls and fleet check where an operator reads them: a pseudo-terminal
# 80 wide (tests/lib/on_terminal.py), and tmux's pane of 80 columns, whose
# screen shows each line as written, none broken by the terminal.
# widest TEXT: the most characters (not bytes) on one line of TEXT.
widest() { TEXT=$1 lua5.4 -e 'local n = 0; for line in (os.getenv("TEXT") .. "\n"):gmatch("([^\n]*)\n") do n = math.max(n, utf8.len(line)) end; print(n)'; }
run fleet ls --targets "$ALL" --timeout 2s
piped=$out
term=$(NO_COLOR=1 python3 "$SRC/tests/lib/on_terminal.py" 80 "$GPULEDGER" fleet ls --targets "$ALL" --timeout 2s)
expect_eq "fleet ls on 80 columns: no line is wider" "$(widest "$term")" "$(widest "$term" | awk '$1 <= 80')"
expect_in "fleet ls on 80 columns: the narrow layout" "$term" $'\nnode '
for name in gpua gpu-ci-02 gpu-go "$DEAD" fleet; do
    expect_eq "fleet ls on 80 columns: $name's verdict as piped" \
        "$(grep "^$name " <<<"$term" | head -1 | awk '{ print $2, $3, $4 }')" \
        "$(grep "^│ $name " <<<"$piped" | head -1 | tr -d '│' | awk '{ print $2, $3, $4 }')"
done
expect_eq "fleet ls on 80 columns: the nodes in the same order" \
    "$(sed -n '/^node /,/^$/p' <<<"$term" | sed -nE 's/^(.*[^ ]) +(OK|WARN|BAD|ERROR) +[0-9]+ .*/\1/p' | tr '\n' ',')" \
    "$(sed -n '/^│ node /,/^$/p' <<<"$piped" | grep '^│' | tail -n +2 | awk -F'│' '{ gsub(/^ +| +$/, "", $2); print $2 }' | tr '\n' ',')"
expect_eq "fleet ls on 80 columns: the GPU states on lines led by the node's name" \
    "$(grep -cE '^gpua +states +2 held · 1 reserved-idle' <<<"$term")" 1
expect_eq "fleet ls on 80 columns: the MIG slices per state on a line led by the node's name" \
    "$(grep -cE '^gpua .*MIG slices: 1 held, 1 free$' <<<"$term")" 1
expect_in "fleet ls on 80 columns: an error wraps with an indent" "$term" $'\n  '
if command -v tmux >/dev/null 2>&1; then
    # show_in_tmux NAME ARGS...: runs gpuledger ARGS in a detached tmux pane
    # 80x400 and leaves its screen in $screen (waits for the command's end).
    show_in_tmux() {
        local name=$1 i
        shift
        rm -f "$WORK/$name.done"
        tmux -L "gl-$$" new-session -d -s "$name" -x 80 -y 400 \
            "NO_COLOR=1 $(printf '%q ' "$GPULEDGER" "$@"); touch $(printf '%q' "$WORK/$name.done"); sleep 600"
        for ((i = 0; i < 600; i++)); do [ -e "$WORK/$name.done" ] && break; sleep 0.05; done
        screen=$(tmux -L "gl-$$" capture-pane -p -t "$name" -S 0 -E 399 | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}')
        tmux -L "gl-$$" kill-session -t "$name"
    }
    show_in_tmux fleet-ls fleet ls --targets "$ALL" --timeout 2s
    expect_eq "tmux, 80 columns: fleet ls's screen is its lines, none broken by the terminal" "$(wc -l <<<"$screen")" \
        "$(NO_COLOR=1 python3 "$SRC/tests/lib/on_terminal.py" 80 "$GPULEDGER" fleet ls --targets "$ALL" --timeout 2s | wc -l)"
    printf '%s\n' "$screen" >"$WORK/fleet-ls.tmux.txt"
    show_in_tmux fleet-check fleet check --targets "$DEMO,$REPLAY,$GO,$DEAD" --timeout 2s
    checked=$(NO_COLOR=1 python3 "$SRC/tests/lib/on_terminal.py" 80 "$GPULEDGER" fleet check --targets "$DEMO,$REPLAY,$GO,$DEAD" --timeout 2s)
    expect_eq "tmux, 80 columns: fleet check's screen is its lines, none broken by the terminal" "$(wc -l <<<"$screen")" "$(wc -l <<<"$checked")"
    expect_eq "fleet check on 80 columns: every line starts with its level" "$(sed '/^$/,$d' <<<"$checked" | grep -cvE '^(OK|WARN|BAD|ERROR) ')" 0
    tmux -L "gl-$$" kill-server 2>/dev/null
else
    skip "tmux, 80 columns: fleet ls and fleet check" "tmux is not installed"
fi

# ---- two addresses, one node name ---------------------------------------------
# A second node serving the Go node's ledger reports the name gpu-go too: each
# row, error and finding is the node at its own address, and a WARN says so.
node twin file 127.0.0.8 "$TESTDATA/fleet/go-ledger.json"; TWIN=$NODE
run fleet ls --targets "$GO,$TWIN,$TWIN"
expect_in "two rows, each named by its address" "$(row "gpu-go (http://$GO)")" "│ gpu-go (http://$GO) │ WARN │ 0 │ 0 │ 3 │"
expect_in "the twin's row" "$(row "gpu-go (http://$TWIN)")" "│ gpu-go (http://$TWIN) │ WARN │ 0 │ 0 │ 3 │"
expect_in "a target given twice is read once: 2 nodes, 6 GPUs" "$out" "gpuledger fleet · 2 node(s) · 6 GPU(s)"
run fleet check --targets "$GO,$TWIN"
expect_in "a WARN names the shared name and both addresses" "$out" \
    "2 nodes report the name \"gpu-go\" (http://$GO, http://$TWIN): each is listed as \"gpu-go (<address>)\"; give each node its own name"
expect_eq "each node's findings name it by its address" \
    "$(printf '%s\n' "$out" | grep -c "reserved-idle  *gpu-go (http://\($GO\|$TWIN\))")" 2
# In fleet check --json and /fleet a finding names its node as the node
# reports itself, and has the address it was read at (or could not be):
# what a script tells the two apart by. The WARN about the fleet has none.
places='local u = {} for _, f in ipairs(j.findings) do
      if f.code ~= "held" and f.code ~= "idle" then u[#u + 1] = f.code .. " " .. f.node .. " " .. tostring(f.url) end end
    table.sort(u) return table.concat(u, ",")'
PLACES="node-name-shared fleet nil,reserved-idle gpu-go http://$GO,reserved-idle gpu-go http://$TWIN,source-unavailable $DEAD http://$DEAD"
every_node_finding_addressed='for _, f in ipairs(j.findings) do if (f.node ~= "fleet") ~= (f.url ~= nil) then return false end end return true'
run fleet check --targets "$GO,$TWIN,$DEAD" --timeout 2s --json
expect_eq "fleet check --json: each node's findings have the address it was read at" \
    "$(jq_lua "(function() $places end)()" "$out")" "$PLACES"
expect_lua "fleet check --json: every finding about a node has its address" "$out" "$every_node_finding_addressed"
if start_serving twins fleet serve --targets "$GO,$TWIN,$DEAD" --listen 127.0.0.1:0 --interval 1h --timeout 2s; then
    http GET "$URL/fleet"
    expect_eq "/fleet: each node's findings have the address it was read at" \
        "$(jq_lua "(function() $places end)()" "$body")" "$PLACES"
    expect_lua "/fleet: every finding about a node has its address" "$body" "$every_node_finding_addressed"
    stop_serve TERM
else
    fail "fleet serve over the two nodes starts" "$(cat "$SERVE_LOG")"
fi

# ---- a site rule that sees the fleet (rules/examples/fleet_reserved_idle.lua) ----
mkdir "$WORK/site"
cp "$SRC/rules/examples/fleet_reserved_idle.lua" "$WORK/site/"
run fleet check --rules "$WORK/site" --targets "$DEMO,$REPLAY,$GO,$OLD"
expect_in "the fleet rule: 3 of 11 GPUs reserved-idle is over 10 %" "$out" \
    "WARN  fleet-reserved-idle         fleet  "
expect_in "the fleet rule's message names the jobs" "$out" \
    "3 of 11 GPUs (27%) are reserved by Nomad and held by nothing, over 10%: most idle reservations video/worker (2), default/ingest (1)"
expect_eq "the fleet's finding comes first among the WARNs" \
    "$(printf '%s\n' "$out" | grep -m1 'WARN')" "$(printf '%s\n' "$out" | grep 'fleet-reserved-idle')"
printf 'return { fleet_reserved_idle_share = 0.5 }\n' >"$WORK/site/thresholds.lua"
run fleet check --rules "$WORK/site" --targets "$DEMO,$REPLAY,$GO,$OLD"
expect_not_in "the fleet rule is quiet under the site's threshold (50 %)" "$out" "fleet-reserved-idle"
run check --demo --rules "$WORK/site"
expect_not_in "a node's own check skips a rule of the fleet only" "$out" "fleet-reserved-idle"

# ---- a broken site file: a rule-error of the fleet, once ----------------------
mkdir "$WORK/broken"
printf 'return 42\n' >"$WORK/broken/thresholds.lua"
BROKEN="$WORK/broken/thresholds.lua: returned a number, want a table of thresholds"
run fleet check --rules "$WORK/broken" --targets "$DEAD" --exit-on error
expect_rc "a broken site file, no node read: ERROR, exit 3" 3
expect_eq "no node read: the broken file is one rule-error, about the fleet" \
    "$(printf '%s\n' "$out" | grep -F "$BROKEN" | tr -s ' ' | cut -d' ' -f1-3)" "ERROR rule-error fleet"
run fleet check --rules "$WORK/broken" --targets "$REPLAY,$GO" --exit-on error
expect_rc "a broken site file over two nodes that have no ERROR: exit 3" 3
expect_eq "two nodes read: the broken file is one rule-error, about the fleet" \
    "$(printf '%s\n' "$out" | grep -F "$BROKEN" | tr -s ' ' | cut -d' ' -f1-3)" "ERROR rule-error fleet"

# ---- bad input --------------------------------------------------------------
run fleet ls --targets "gpud"
expect_rc "a target without a port is a usage error" 2
run fleet ls --targets "ftp://a:1"
expect_rc "a target with another scheme is a usage error" 2
finish
