#!/usr/bin/env bash
# The fleet page of a 20-node fleet in a real browser (Debian `chromium`,
# headless, installed when missing, skipped with the reason when it cannot
# be): seventeen nodes answering ledgers of their own (the demo node's, a CI
# node's, an idle H100's, each under its own name, served by
# tests/fakes/fake_node.py) and three dead ones, behind a real `fleet serve`.
# At 500 px (the page measured inside a frame 500 px wide, as
# serve_chromium.sh measures the node page) nothing is wider than the frame
# and every cell of the node, job and finding cards shows its label; at
# 1400 px the table fits. Screenshots at 1400 and 500 px are kept in
# $GPULEDGER_BUILD_DIR/artifacts/ (docs/fleet-page-*.png are copies).
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/lib/serve.sh
. "$SRC/tests/lib/serve.sh"
# shellcheck source=tests/lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

command -v python3 >/dev/null || { skip "fleet page" "needs python3 for the fake nodes"; finish; }
if ! need_program chromium chromium; then
    skip "chromium" "Debian's chromium is not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
    finish
fi
ARTIFACTS=${GPULEDGER_BUILD_DIR:-$WORK}/artifacts
mkdir -p "$ARTIFACTS" "$WORK/rules"
export GPULEDGER_RULES=$WORK/rules

# Three kinds of node: the demo's (ERROR, BAD), a CI node's (BAD), an idle H100 (WARN).
"$GPULEDGER" ls --json --demo >"$WORK/kind-1.json"
"$GPULEDGER" ls --json --replay "$TESTDATA/site-rules/snapshots/ci-node.json" >"$WORK/kind-2.json"
FAKE_SMI_DIR=$TESTDATA/nvidia/h100-80gb-hbm3-590.48.01/idle "$GPULEDGER" ls --json --nvidia-smi "$FAKES/nvidia-smi" \
    --no-docker --no-nomad --kernel-log off >"$WORK/kind-3.json"
targets=""
for n in $(seq 1 17); do
    name=$(printf 'gpu-node-%02d' "$n")
    NAME=$name lua5.4 -e 'local cjson = require "cjson"
local l = cjson.decode(io.read("a"))
l.node = os.getenv("NAME")
io.write(cjson.encode(l))' <"$WORK/kind-$((n % 3 + 1)).json" >"$WORK/$name.json"
    fake_file_start "$name" "$WORK/$name.json" || { fail "node $name starts" "$(cat "$WORK/$name.stderr")"; finish; }
    targets=$targets,127.0.0.1:$file_port
done
for _ in 1 2 3; do
    refusing_port 127.0.0.1
    targets=$targets,127.0.0.1:$REFUSING_PORT
done

if ! start_serving fleet fleet serve --targets "${targets#,}" --listen 127.0.0.1:0 --interval 1h --timeout 2s; then
    fail "fleet serve starts" "$(cat "$SERVE_LOG")"
    finish
fi
dom=$(browse dom --dump-dom "$URL/")
expect_in "20 nodes, 3 unreachable" "$dom" "20 node(s), 3 unreachable"
expect_eq "20 node rows and the fleet's" "$(sed -n '/<table class="nodes">/,/<\/table>/p' <<<"$dom" | grep -c '<td data-label="node">')" 21
expect_in "the dead nodes' ERROR grouped first, naming them" "$dom" \
    '<details class="group ERROR"><summary><span class="level ERROR">ERROR</span> <span class="code">source-unavailable</span>'
expect_not_in "no CSP violation" "$(cat "$WORK/dom.console")" "Content Security Policy"

# --- measured in the browser, inside a frame of the width wanted -----------------
page=$WORK/page
mkdir "$page"
curl -s "$URL/style.css" >"$page/style.css"
curl -s "$URL/" | sed -e '/http-equiv="refresh"/d' -e 's|</body>|<script src="measure.js"></script></body>|' >"$page/page.html"
cat >"$page/measure.js" <<'JS'
window.addEventListener('load', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var width = document.documentElement.clientWidth, outside = 0, unlabelled = 0, cards = 0;
  document.querySelectorAll('td, .level, .state, .mark, summary').forEach(function (element) {
    var box = element.getBoundingClientRect();
    if (box.right > width + 0.5 || box.left < -0.5) outside++;
  });
  document.querySelectorAll('table.nodes td, table.jobs td, table.group-findings td').forEach(function (td) {
    cards++;
    var label = getComputedStyle(td, '::before').content;
    if (!td.getAttribute('data-label') || label === 'none' || label === 'normal' || label === '""') unlabelled++;
  });
  parent.postMessage({ width: width, overflow: document.documentElement.scrollWidth - width, outside: outside,
    cells: cards, unlabelled: unlabelled }, '*');
});
JS
cat >"$page/harness.js" <<'JS'
window.addEventListener('message', function (event) {
  Object.keys(event.data).forEach(function (key) { document.body.setAttribute('data-' + key, event.data[key]); });
});
JS
echo 'body { margin: 0; } iframe { border: 0; display: block; }' >"$page/harness.css"
for width in 500 1400; do
    printf '<!DOCTYPE html><html><head><link rel="stylesheet" href="harness.css"></head><body><iframe src="page.html" width="%d" height="%d"></iframe><script src="harness.js"></script></body></html>\n' \
        "$width" 40000 >"$page/at-$width.html"
done
python3 -m http.server 0 --bind 127.0.0.1 --directory "$page" >"$WORK/http.log" 2>&1 &
at_exit "stop_pid $!"
wait_for "the loopback server of the page copy starts" 10 grep -q "port [0-9]" "$WORK/http.log"
PAGE_URL=http://127.0.0.1:$(grep -o 'port [0-9]*' "$WORK/http.log" | head -1 | cut -d' ' -f2)
for width in 500 1400; do
    measured=$(browse "measure-$width" --window-size=$((width + 20)),1000 --virtual-time-budget=3000 \
        --dump-dom "$PAGE_URL/at-$width.html" | grep -o '<body[^>]*>')
    expect_in "at $width px: measured in a frame $width px wide" "$measured" "data-width=\"$width\""
    expect_in "at $width px: nothing is wider than the frame (no sideways scrolling)" "$measured" 'data-overflow="0"'
    expect_in "at $width px: no cell, badge or group line lies outside it" "$measured" 'data-outside="0"'
    if [ "$width" = 500 ]; then
        expect_in "at 500 px: every node, job and finding cell is a line of its card with its label" "$measured" 'data-unlabelled="0"'
        expect_not_in "at 500 px: there are such cells" "$measured" 'data-cells="0"'
    fi
done

# --- screenshots -------------------------------------------------------------
for shot in "1400 1400,1150 $URL/" "500 520,1500 $PAGE_URL/at-500.html"; do
    read -r width size url <<<"$shot"
    rm -f "$ARTIFACTS/fleet-page-20-$width.png"
    browse "shot-$width" --window-size="$size" --virtual-time-budget=3000 --screenshot="$ARTIFACTS/fleet-page-20-$width.png" "$url" >/dev/null
    expect_eq "screenshot at $width px" "$(head -c 8 "$ARTIFACTS/fleet-page-20-$width.png" 2>/dev/null | od -An -c | tr -d ' ')" '211PNG\r\n032\n'
    expect_not_in "no CSP violation while drawing at $width px" "$(cat "$WORK/shot-$width.console")" "Content Security Policy"
done

stop_serve TERM
expect_eq "fleet serve exits 0" "$SERVE_RC" 0
finish
