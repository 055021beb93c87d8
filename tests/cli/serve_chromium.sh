#!/usr/bin/env bash
# The node page in a real browser (Debian `chromium`, headless, always under
# timeout; installed when missing, skipped with the reason when it cannot
# be): the rendered DOM has the GPU rows, the findings and a hostile
# container name as text, the console shows no Content Security Policy
# violation; the GPU rows with a BAD or ERROR finding stand out, each finding
# links to its GPU's row, memory and utilisation are bars, the header counts
# the findings per level, a health code or another finding on its GPU's row one
# per line, a nearly full memory bar marked; at 420, 800 and 1400 px nothing needs sideways
# scrolling (measured in the browser); and screenshots at 1400 and 420 px,
# light and dark, are kept as artifacts in $GPULEDGER_BUILD_DIR/artifacts/.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID="" PHONE_URL=""

mkdir "$WORK/rules"
if ! need_program chromium chromium; then
    skip "chromium" "Debian's chromium is not installed and could not be: $(tail -1 "$WORK/apt.log" 2>/dev/null)"
    finish
fi
ARTIFACTS=${GPULEDGER_BUILD_DIR:-$WORK}/artifacts
mkdir -p "$ARTIFACTS"

# The demo node with a container named <script>alert("x")</script>.
"$GPULEDGER" snapshot --demo >"$WORK/demo.json"
lua5.4 -e 'local cjson = require "cjson"
local s = cjson.decode(io.read("a"))
s.sources.docker.containers[3].Name = "/<script>alert(\"x\")</script>"
s.sources.nvidia.query_gpu.rows[2][5] = "22500" -- gpu1 at 98 % of its memory: its bar red
io.write(cjson.encode(s))' <"$WORK/demo.json" >"$WORK/hostile.json"

if ! start_serve page --replay "$WORK/hostile.json" --listen 127.0.0.1:0 --interval 5s --rules "$WORK/rules"; then
    fail "serve starts" "$(cat "$SERVE_LOG")"
    finish
fi

dom=$(browse dom --dump-dom "$URL/")
expect_in "the DOM is the page" "$dom" "<title>gpuledger · gpu-demo-01</title>"
expect_eq "five GPU rows, keyed by uuid" "$(grep -o '<tr id="gpu-GPU-[0-9a-f-]*" class="gpu' <<<"$dom" | wc -l)" 5
expect_in "gpu2, with an ERROR finding, stands out" "$dom" \
    '<tr id="gpu-GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52" class="gpu alarm ERROR">'
expect_in "gpu0, with none worse than OK, does not" "$dom" '<tr id="gpu-GPU-3f8a2c1e-7b4d-4e9a-8c21-5d6f7a8b9c01" class="gpu">'
expect_in "a finding links to its GPU's row" "$dom" '<a href="#gpu-GPU-c41b9e27-0a5f-4d3c-b8e6-2f7a1d9c4e52">gpu2 GPU-c41b9e27</a>'
expect_eq "utilisation (where known: not under MIG) and memory as bars per GPU, memory per MIG slice" "$(grep -o '<meter class="\(util\|memory\)"' <<<"$dom" | wc -l)" 11
expect_in "gpu1's memory bar marked amber at 85 % and red at 95 % (rules/thresholds.lua)" "$dom" \
    '<meter class="memory" min="0" max="23034" low="19578" high="21882" optimum="0" value="22500"></meter> 22500/23034 MiB'
expect_in "gpu1's health codes one per line, its reserved-idle under them" "$dom" \
    '<li>row-remap-pending</li><li>nomad-schedules-failing-gpu</li><li>xid-memory</li><li><span class="level WARN">WARN</span> reserved-idle</li>'
expect_in "without --nomad-ui-url, a reservation shows the command that shows its allocation" "$dom" \
    'worker/worker <code class="command">nomad alloc status -namespace=video 4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e</code>'
expect_in "the header names the driver, CUDA and the Nomad node" "$dom" \
    '<p class="meta context">driver 580.95.05 · CUDA 13.0 · nomad dc1 · pool default · class gpu</p>'
expect_in "the header counts the findings per level" "$dom" '<span class="count"><span class="level ERROR">ERROR</span> 1</span>'
expect_in "the header counts BAD (the demo's health findings among them)" "$dom" '<span class="count"><span class="level BAD">BAD</span> 8</span>'
for gpu in "NVIDIA L4" "NVIDIA GeForce RTX 4090" "Tesla T4"; do
    expect_in "a row for $gpu" "$dom" "<td data-label=\"model\">$gpu</td>"
done
for code in unreserved-tenant unmanaged-tenant reserved-idle encoder-saturated held idle; do
    expect_in "the $code finding" "$dom" "<td data-label=\"code\">$code</td>"
done
expect_in "the hostile name is text" "$dom" '&lt;script&gt;alert("x")&lt;/script&gt;'
expect_eq "no script element in the DOM" "$(grep -c '<script' <<<"$dom")" 0
console=$(cat "$WORK/dom.console")
expect_not_in "no CSP violation in the console" "$console" "Content Security Policy"
expect_not_in "no refused stylesheet" "$console" "Refused to"

# --- the page at a phone's width and a desktop's --------------------------------
# Headless Chromium will not make a window narrower than 500 px, so the page
# is measured and photographed inside an iframe of the width wanted: a copy
# of it (and its stylesheet) served from a loopback server this test starts,
# with a script added that measures, in the browser, how far the page is
# wider than its frame and which cells and verdict badges fall outside it,
# and tells the harness page, whose DOM Chromium dumps.
phone=$WORK/phone
mkdir "$phone"
curl -s "$URL/style.css" >"$phone/style.css"
curl -s "$URL/" | sed -e '/http-equiv="refresh"/d' -e 's|</body>|<script src="measure.js"></script></body>|' >"$phone/page.html"
cat >"$phone/measure.js" <<'EOF'
window.addEventListener('load', function () {
  var width = document.documentElement.clientWidth, outside = 0;
  document.querySelectorAll('td, .level, .state, .mark').forEach(function (element) {
    var box = element.getBoundingClientRect();
    if (box.right > width + 0.5 || box.left < -0.5) outside++;
  });
  parent.postMessage({ width: width, overflow: document.documentElement.scrollWidth - width, outside: outside }, '*');
});
EOF
cat >"$phone/harness.js" <<'EOF'
window.addEventListener('message', function (event) {
  Object.keys(event.data).forEach(function (key) { document.body.setAttribute('data-' + key, event.data[key]); });
});
EOF
echo 'body { margin: 0; } iframe { border: 0; display: block; }' >"$phone/harness.css"
for width in 420 800 1400; do
    printf '<!DOCTYPE html><html><head><link rel="stylesheet" href="harness.css"></head><body><iframe src="page.html" width="%d" height="8000"></iframe><script src="harness.js"></script></body></html>\n' \
        "$width" >"$phone/at-$width.html"
done
python3 -m http.server 0 --bind 127.0.0.1 --directory "$phone" >"$WORK/http.log" 2>&1 &
http_pid=$!
at_exit "stop_pid $http_pid"
wait_for "the loopback server of the page copy starts" 10 grep -q "port [0-9]" "$WORK/http.log"
PHONE_URL=http://127.0.0.1:$(grep -o 'port [0-9]*' "$WORK/http.log" | head -1 | cut -d' ' -f2)
for width in 420 800 1400; do
    measured=$(browse "measure-$width" --window-size=$((width > 500 ? width + 20 : 500)),1000 --virtual-time-budget=3000 \
        --dump-dom "$PHONE_URL/at-$width.html" | grep -o '<body[^>]*>')
    expect_in "at $width px: the page is measured in a frame $width px wide" "$measured" "data-width=\"$width\""
    expect_in "at $width px: nothing is wider than the frame (no sideways scrolling)" "$measured" 'data-overflow="0"'
    expect_in "at $width px: no cell and no verdict lies outside it" "$measured" 'data-outside="0"'
done

# screenshot NAME ARGS...: a PNG in $ARTIFACTS/NAME.png, checked to be one.
screenshot() {
    local name=$1
    shift
    rm -f "$ARTIFACTS/$name.png"
    browse "$name" --screenshot="$ARTIFACTS/$name.png" "$@" >/dev/null
    expect_eq "screenshot $name.png" "$(head -c 8 "$ARTIFACTS/$name.png" 2>/dev/null | od -An -c | tr -d ' ')" '211PNG\r\n032\n'
    expect_not_in "no CSP violation while drawing $name" "$(cat "$WORK/$name.console")" "Content Security Policy"
}
screenshot page-1400-light --window-size=1400,1100 "$URL/"
screenshot page-1400-dark --window-size=1400,1100 --force-dark-mode "$URL/"
screenshot page-420-light --window-size=500,3600 --virtual-time-budget=3000 "$PHONE_URL/at-420.html"
screenshot page-420-dark --window-size=500,3600 --virtual-time-budget=3000 --force-dark-mode "$PHONE_URL/at-420.html"
for width in 1400 420; do
    if cmp -s "$ARTIFACTS/page-$width-light.png" "$ARTIFACTS/page-$width-dark.png"; then
        fail "at $width px, dark differs from light" "the two screenshots are the same"
    else
        pass "at $width px, dark differs from light"
    fi
done

stop_serve TERM
expect_eq "serve exits 0" "$SERVE_RC" 0
expect_clean_log "serve" "$SERVE_LOG"
finish
