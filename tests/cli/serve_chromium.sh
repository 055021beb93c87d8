#!/usr/bin/env bash
# The node page in a real browser (Debian `chromium`, headless, always under
# timeout; installed when missing, skipped with the reason when it cannot
# be): the rendered DOM has the GPU rows, the findings and a hostile
# container name as text, the console shows no Content Security Policy
# violation, and screenshots (light and dark) are kept as artifacts in
# $GPULEDGER_BUILD_DIR/artifacts/.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/serve.sh disable=SC1091
. "$(dirname "$0")/../lib/serve.sh"
URL="" SERVE_RC=0 SERVE_LOG="" SERVE_PID=""

unset GPULEDGER_RULES GPULEDGER_SCRIPTS
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
io.write(cjson.encode(s))' <"$WORK/demo.json" >"$WORK/hostile.json"

if ! start_serve page --replay "$WORK/hostile.json" --listen 127.0.0.1:0 --interval 5s --rules "$WORK/rules"; then
    fail "serve starts" "$(cat "$SERVE_LOG")"
    finish
fi

# browse NAME ARGS...: headless Chromium with a fresh profile, its console
# on $WORK/NAME.console; stdout is the command's.
browse() {
    local name=$1
    shift
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --disable-dev-shm-usage \
        --user-data-dir="$WORK/profile-$name" --enable-logging=stderr --v=0 "$@" 2>"$WORK/$name.console"
}

dom=$(browse dom --dump-dom "$URL/")
expect_in "the DOM is the page" "$dom" "<title>gpuledger · gpu-demo-01</title>"
expect_eq "four GPU rows" "$(grep -o '<tr><td class="num">' <<<"$dom" | wc -l)" 4
for gpu in "NVIDIA L4" "NVIDIA GeForce RTX 4090" "Tesla T4"; do
    expect_in "a row for $gpu" "$dom" "<td>$gpu</td>"
done
for code in unreserved-tenant unmanaged-tenant reserved-idle encoder-saturated held idle; do
    expect_in "the $code finding" "$dom" "<td>$code</td>"
done
expect_in "the hostile name is text" "$dom" '&lt;script&gt;alert("x")&lt;/script&gt;'
expect_eq "no script element in the DOM" "$(grep -c '<script' <<<"$dom")" 0
console=$(cat "$WORK/dom.console")
expect_not_in "no CSP violation in the console" "$console" "Content Security Policy"
expect_not_in "no refused stylesheet" "$console" "Refused to"

rm -f "$ARTIFACTS/serve-page.png" "$ARTIFACTS/serve-page-dark.png"
browse shot --window-size=1500,1000 --screenshot="$ARTIFACTS/serve-page.png" "$URL/" >/dev/null
expect_eq "a screenshot" "$(head -c 8 "$ARTIFACTS/serve-page.png" 2>/dev/null | od -An -c | tr -d ' ')" '211PNG\r\n032\n'
expect_not_in "no CSP violation while drawing" "$(cat "$WORK/shot.console")" "Content Security Policy"
browse dark --window-size=1500,1000 --force-dark-mode --screenshot="$ARTIFACTS/serve-page-dark.png" "$URL/" >/dev/null
expect_eq "a dark screenshot" "$(test -s "$ARTIFACTS/serve-page-dark.png" && echo yes)" yes
if cmp -s "$ARTIFACTS/serve-page.png" "$ARTIFACTS/serve-page-dark.png"; then
    fail "dark differs from light" "the two screenshots are the same"
else
    pass "dark differs from light"
fi

stop_serve TERM
expect_eq "serve exits 0" "$SERVE_RC" 0
expect_clean_log "serve" "$SERVE_LOG"
finish
