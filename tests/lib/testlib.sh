# shellcheck shell=bash disable=SC2034 # the variables set here are the callers'
# Shared by the whole-binary tests in tests/cli/*.sh: source it, call `check`
# and friends, end with `finish`. Each script prints one line per check and
# closes with "N passed, N failed" (", N skipped" when some were skipped, each
# with its reason), exiting 1 on any failure, 77 when everything was skipped.
set -u

: "${GPULEDGER:?run through ctest, or set GPULEDGER to the built binary}"
: "${GPULEDGER_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
SRC=$GPULEDGER_SOURCE_DIR
FAKES=$SRC/tests/fakes
TESTDATA=$SRC/testdata
# This machine's own kernel log is not a fixture: tests read none unless they
# name one (--kernel-log, or GPULEDGER_KERNEL_LOG set again).
export GPULEDGER_KERNEL_LOG=off

# Every variable gpuledger, its fakes and the tools the tests start read:
# each test starts without them, so that what the shell that ran it had set
# (a developer's NOMAD_ADDR, DOCKER_HOST or site rules) never reaches the
# binary under test. A test sets again the ones it means.
TEST_ENVIRONMENT=(
    GPULEDGER_RULES GPULEDGER_SCRIPTS NO_COLOR PROMETHEUS_URL DOCKER_HOST MY_TOKEN
    FAKE_SMI_LOG FAKE_SMI_SPANS FAKE_JOURNAL FAKE_JOURNAL_EXIT FAKE_JOURNAL_STDERR FAKE_JOURNAL_CALLS
    NOMAD_ADDR NOMAD_TOKEN NOMAD_CACERT NOMAD_CAPATH NOMAD_CLIENT_CERT NOMAD_CLIENT_KEY
    NOMAD_TLS_SERVER_NAME
    CONSUL_HTTP_ADDR CONSUL_HTTP_TOKEN CONSUL_HTTP_SSL CONSUL_CACERT CONSUL_CAPATH
    CONSUL_CLIENT_CERT CONSUL_CLIENT_KEY CONSUL_TLS_SERVER_NAME
)
unset "${TEST_ENVIRONMENT[@]}"

passed=0 failed=0 skipped=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-test.XXXXXX")
cleanup_hooks=()
on_exit() {
    local hook
    for hook in "${cleanup_hooks[@]}"; do eval "$hook" || true; done
    rm -rf "$WORK"
}
trap on_exit EXIT

# at_exit CMD: run CMD when the script ends, however it ends.
at_exit() { cleanup_hooks+=("$1"); }

pass() { passed=$((passed + 1)); printf 'ok   %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; shift; [ $# -gt 0 ] && printf '     %s\n' "$@"; return 0; }
skip() { skipped=$((skipped + 1)); printf 'skip %s: %s\n' "$1" "$2"; }

# run ARGS...: runs gpuledger, leaving $out, $err and $rc.
run() {
    out=$("$GPULEDGER" "$@" 2>"$WORK/stderr"); rc=$?
    err=$(cat "$WORK/stderr")
}

# expect_rc NAME WANT: the last run exited WANT.
expect_rc() {
    if [ "$rc" -eq "$2" ]; then pass "$1"; else fail "$1" "exit $rc, want $2" "stderr: ${err:0:600}"; fi
}

# expect_in NAME HAYSTACK NEEDLE: NEEDLE occurs in HAYSTACK.
expect_in() {
    case "$2" in *"$3"*) pass "$1" ;; *) fail "$1" "missing: $3" "in: ${2:0:1200}" ;; esac
}

# expect_not_in NAME HAYSTACK NEEDLE: NEEDLE does not occur in HAYSTACK.
expect_not_in() {
    case "$2" in *"$3"*) fail "$1" "unexpected: $3" "in: ${2:0:1200}" ;; *) pass "$1" ;; esac
}

# expect_eq NAME GOT WANT
expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got:  $2" "want: $3"; fi
}

# jq_lua EXPR JSON: evaluates a Lua expression over decoded JSON (bound to j)
# with lua5.4 and cjson, printing the result; the suite's stand-in for jq.
jq_lua() {
    EXPR=$1 lua5.4 -e 'local cjson = require "cjson"
local j = cjson.decode(io.read("a"))
local function show(v)
  if type(v) == "table" then return cjson.encode(v) end
  return tostring(v)
end
print(show(load("return " .. os.getenv("EXPR"), "expr", "t", setmetatable({j = j, cjson = cjson}, {__index = _G}))()))' <<<"$2"
}

# expect_lua NAME JSON EXPR: the Lua expression EXPR over the decoded JSON
# (bound to j, with cjson) is true; EXPR may be statements that `return`
# the answer. A failure shows the first $expect_lua_shown characters of JSON
# (a script whose documents are long may raise it).
expect_lua_shown=1500
expect_lua() {
    local got expr=$3
    case $expr in *return*) expr="(function() $expr end)()" ;; esac
    got=$(jq_lua "$expr" "$2" 2>&1)
    if [ "$got" = true ]; then pass "$1"; else fail "$1" "not true: $3" "got: ${got:0:300}" "json: ${2:0:$expect_lua_shown}"; fi
}

# json_same A B: A and B decode to the same value, "at" left out; when they
# do not, prints false (or why they could not be decoded) and returns 1.
json_same() {
    local got
    got=$(A=$1 B=$2 lua5.4 -e '
local cjson = require "cjson"
local function canon(v)
  if type(v) ~= "table" then return cjson.encode(v) end
  local keys, parts = {}, {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. canon(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end
local a, b = cjson.decode(os.getenv("A")), cjson.decode(os.getenv("B"))
a.at, b.at = nil, nil
print(canon(a) == canon(b))' 2>&1)
    [ "$got" = true ] || { printf '%s\n' "$got"; return 1; }
}

# same_json NAME A B: A and B decode to the same value, "at" left out.
same_json() {
    local got
    if got=$(json_same "$2" "$3"); then pass "$1"; else fail "$1" "differ: $got" "a: ${2:0:1500}" "b: ${3:0:1500}"; fi
}

# expect_no_crash NAME: the last run's stderr ($err) shows no crash: no
# traceback, sanitizer report or segmentation fault (one check per word).
expect_no_crash() {
    local word
    for word in traceback AddressSanitizer "runtime error" LeakSanitizer Segmentation; do
        expect_not_in "$1: no '$word' on stderr" "$err" "$word"
    done
}

# readme_block MARKER: prints the first fenced block (``` or ```sh) of
# README.md after the first line holding MARKER: the tests that check the
# README's examples, or run its commands as written, find their blocks so.
# Returns 1 when there is none.
readme_block() {
    awk -v marker="$1" '!found && index($0, marker) { found = 1; next }
        found && !inside && /^```/ { inside = 1; next }
        inside && /^```$/ { done = 1; exit }
        inside { print }
        END { exit !done }' "$SRC/README.md"
}

# wait_file FILE PID: waits up to 10 s for FILE to be written while PID
# runs. Returns 1 when PID died first or FILE stayed empty.
wait_file() {
    local i
    for ((i = 0; i < 200; i++)); do
        [ -s "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# stop_pid PID: stops (SIGTERM) a background process this script started
# and reaps it; never fails, whether or not PID still runs.
# shellcheck disable=SC2317 # also called from the at_exit hooks
stop_pid() { kill "$1" 2>/dev/null && wait "$1" 2>/dev/null; return 0; }

# refusing_port HOST: sets REFUSING_PORT to a TCP port on HOST that refuses every connection
# while this script runs: a background process holds it bound, never listens on it, and ends
# once the script has (its parent gone). A port that was merely free, or one whose server was
# stopped, can be taken meanwhile by a server of a test running beside this one, which then
# answers in its place.
refusing_port() {
    local file
    file=$(mktemp "$WORK/refusing-port.XXXXXX")
    python3 -c 'import os, socket, sys, time
parent = os.getppid()
s = socket.socket()
s.bind((sys.argv[2], 0))
with open(sys.argv[1] + ".new", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".new", sys.argv[1])
while os.getppid() == parent:
    time.sleep(1)' "$file" "$1" </dev/null >/dev/null 2>&1 &
    local pid=$!
    disown "$pid" # (not a job of this script: its end is no news)
    wait_file "$file" "$pid" || { echo "refusing_port: no port held" >&2; exit 1; }
    REFUSING_PORT=$(cat "$file")
}

finish() {
    if [ "$skipped" -gt 0 ]; then
        printf '%d passed, %d failed, %d skipped\n' "$passed" "$failed" "$skipped"
    else
        printf '%d passed, %d failed\n' "$passed" "$failed"
    fi
    [ "$failed" -eq 0 ] || exit 1
    [ "$passed" -eq 0 ] && [ "$skipped" -gt 0 ] && exit 77
    exit 0
}
