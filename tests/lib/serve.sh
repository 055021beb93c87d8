# shellcheck shell=bash disable=SC2034 # the variables set here are the callers'
# Shared by tests/cli/serve*.sh (source it after testlib.sh): start a
# `gpuledger serve` on a port it picks itself, ask it things with curl, stop
# it. Every serve started here is killed when the script ends.

# start_serve NAME ARGS...: starts `gpuledger serve ARGS` in the background
# (give it --listen HOST:0 so it picks a free port), its stderr in
# $WORK/NAME.err, and waits for its banner. Sets SERVE_PID, SERVE_LOG and
# URL (http://HOST:PORT). Returns 1 when no banner came within 60 s (the
# first refresh comes before it: site rules that loop use their deadline of
# CPU time, longer on the wall clock of a loaded machine).
start_serve() {
    local name=$1
    shift
    start_serving "$name" serve "$@"
}

# start_serving NAME COMMAND ARGS...: start_serve for any command that
# serves (serve, fleet serve): `gpuledger COMMAND ARGS`, once its first
# refresh has completed (until then every path answers 503 "no data yet").
# Returns 1 when no banner came within 30 s, or no data 60 s after it.
start_serving() {
    start_listening "$@" || return 1
    local i
    for i in $(seq 600); do
        case $(curl -s -g --max-time 5 "$URL/healthz") in
        "gpuledger: no data yet"*) ;;
        *) return 0 ;;
        esac
        kill -0 "$SERVE_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# start_listening NAME COMMAND ARGS...: start_serving without waiting for
# the first refresh: returns once the banner says where it listens.
start_listening() {
    local name=$1 i address=""
    shift
    SERVE_LOG=$WORK/$name.err
    "$GPULEDGER" "$@" 2>"$SERVE_LOG" &
    SERVE_PID=$!
    at_exit "kill -9 $SERVE_PID 2>/dev/null; wait $SERVE_PID 2>/dev/null" # (reaped here: no "Killed" notice later)
    for i in $(seq 600); do
        address=$(sed -n 's/^gpuledger .* serving on \(.*\) (\(refresh\|poll\) .*)$/\1/p' "$SERVE_LOG" | head -1)
        [ -n "$address" ] && break
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$address" ]; then
        URL=""
        return 1
    fi
    URL=http://$address
    return 0
}

# stop_serve SIGNAL: sends SIGNAL to the serve started last and waits for
# it (up to 60 s, then kill -9). Sets SERVE_RC.
stop_serve() {
    local i
    kill -"$1" "$SERVE_PID" 2>/dev/null
    for i in $(seq 600); do
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID"
    SERVE_RC=$?
}

# http METHOD URL [CURL ARGS...]: one request. Sets $status (000 when no
# answer), $headers (lower-cased names), $body and $size (bytes). HEAD's
# $body holds the headers curl printed.
http() {
    local method=$1 url=$2
    shift 2
    local method_args=(-X "$method")
    [ "$method" = HEAD ] && method_args=(-I)
    status=$(curl -s -g --max-time 10 "${method_args[@]}" -D "$WORK/headers" -o "$WORK/body" \
        -w '%{http_code}' "$@" "$url" 2>/dev/null) || true
    [ -n "$status" ] || status=000
    headers=$(tr -d '\r' <"$WORK/headers" 2>/dev/null | sed 's/^\([^:]*\):/\L\1:/')
    size=$(wc -c <"$WORK/body" 2>/dev/null || echo 0)
    body=$(cat "$WORK/body" 2>/dev/null)
    rm -f "$WORK/headers" "$WORK/body"
}

# header NAME: the value of response header NAME (lower-case) of the last http.
header() {
    printf '%s\n' "$headers" | sed -n "s/^$1: //p" | head -1
}

# expect_security_headers NAME: the last response carries the security headers of docs/contract.md#http.
expect_security_headers() {
    expect_eq "$1: Content-Security-Policy" "$(header content-security-policy)" \
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    expect_eq "$1: X-Content-Type-Options" "$(header x-content-type-options)" nosniff
    expect_eq "$1: Referrer-Policy" "$(header referrer-policy)" no-referrer
    expect_eq "$1: X-Frame-Options" "$(header x-frame-options)" DENY
    expect_eq "$1: Cache-Control" "$(header cache-control)" no-store
}

# wait_for NAME SECONDS COMMAND...: runs COMMAND every 0.2 s until it
# succeeds or SECONDS pass; passes or fails NAME.
wait_for() {
    local name=$1 seconds=$2
    shift 2
    for _ in $(seq $((seconds * 5))); do
        if "$@" >/dev/null 2>&1; then
            pass "$name"
            return 0
        fi
        sleep 0.2
    done
    fail "$name" "not within ${seconds}s: $*"
    return 1
}

# body_has URL NEEDLE: the GET of URL answers with NEEDLE in its body.
body_has() {
    curl -s -g --max-time 5 "$1" | grep -qF -- "$2"
}

# status_is URL CODE: the GET of URL answers with status CODE.
status_is() {
    [ "$(curl -s -g -o /dev/null -w '%{http_code}' --max-time 5 "$1")" = "$2" ]
}

# body_lacks URL NEEDLE: the GET of URL answers, without NEEDLE in its body.
body_lacks() {
    local got
    got=$(curl -s -g --max-time 5 "$1") || return 1
    case $got in *"$2"*) return 1 ;; esac
    return 0
}

# expect_clean_log NAME FILE: no crash, sanitizer report or traceback in FILE.
expect_clean_log() {
    local word text
    text=$(cat "$2" 2>/dev/null)
    for word in AddressSanitizer LeakSanitizer "runtime error" traceback Segmentation; do
        expect_not_in "$1: no '$word'" "$text" "$word"
    done
}

# need_program PROGRAM PACKAGE: PROGRAM is on PATH, installing the Debian
# PACKAGE first when it is not (scripts/install-missing). Returns 1 when it
# cannot be had; why is in $WORK/apt.log.
need_program() {
    command -v "$1" >/dev/null && return 0
    "$SRC/scripts/install-missing" "$2" >"$WORK/apt.log" 2>&1
    command -v "$1" >/dev/null
}

# free_port: a TCP port free on 127.0.0.1 just now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# browse NAME ARGS...: headless Chromium (always under timeout) with a
# fresh profile, its console on $WORK/NAME.console; stdout is the command's
# (--dump-dom URL, --screenshot=FILE URL).
browse() {
    local name=$1
    shift
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --disable-dev-shm-usage \
        --user-data-dir="$WORK/profile-$name" --enable-logging=stderr --v=0 "$@" 2>"$WORK/$name.console"
}
