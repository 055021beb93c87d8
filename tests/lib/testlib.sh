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
