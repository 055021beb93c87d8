#!/usr/bin/env bash
# What the bench scripts share (sourced, not run): starting and stopping a
# serve, the CPU time of a process, the made-up nodes of the per-process
# benches and the fleet benches' nodes.

# bench_work: makes WORK, a new directory under /tmp with an empty rules
# directory WORK/rules (no site rule: the embedded ones), and on exit stops
# the serve (SERVE_PID) and the fleet nodes (SERVER_PID) still running and
# removes WORK.
bench_work() {
    WORK=$(mktemp -d /tmp/gpuledger-bench.XXXXXX)
    SERVE_PID="" SERVER_PID=""
    trap '[ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null; [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
    mkdir "$WORK/rules"
}

# serve_start ERRFILE COMMAND...: runs COMMAND (a gpuledger serve or fleet
# serve listening on port 0) in the background with its stderr in ERRFILE,
# and waits up to 30 s for its "serving on" line. Sets SERVE_PID and SERVE_URL; exits 1
# with serve's stderr when it never listens.
serve_start() {
    local err=$1 address="" _
    shift
    : >"$err" # there before serve opens it, so that sed can read it at once
    "$@" 2>"$err" &
    SERVE_PID=$!
    for _ in $(seq 300); do
        address=$(sed -n 's/^gpuledger .* serving on \(.*\) (\(refresh\|poll\) .*)$/\1/p' "$err")
        [ -n "$address" ] && break
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$address" ] || { cat "$err" >&2; exit 1; }
    # shellcheck disable=SC2034 # read by the scripts that source this file
    SERVE_URL=http://$address
}

# serve_stop: stops the serve that serve_start started.
serve_stop() {
    kill "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null || true
    SERVE_PID=""
}

# cpu_ms PID [children]: user + system CPU time of PID in milliseconds;
# with "children", that of its reaped children too.
cpu_ms() {
    awk -v hz="$(getconf CLK_TCK)" -v kids="${2:-}" \
        '{ t = $14 + $15; if (kids == "children") t += $16 + $17; printf "%d\n", t * 1000 / hz }' "/proc/$1/stat"
}

# fleet_ledger BINARY FILE: writes to FILE the node ledger the fleet benches
# serve (bench/fleet_server.c): the demo node's first four GPUs twice, eight
# GPUs with distinct uuids, as BINARY's `ls --demo --json` gives them.
fleet_ledger() {
    "$1" ls --demo --json --node gpu-bench | lua5.4 -e '
local cjson = require "cjson"
local ledger = cjson.decode(io.read("a"))
local n = 4
for i = #ledger.entries, n + 1, -1 do ledger.entries[i] = nil end
for i = 1, n do
  local copy = cjson.decode(cjson.encode(ledger.entries[i]))
  copy.index = n + i - 1
  copy.uuid = copy.uuid:gsub("^GPU%-%x%x", "GPU-ff")
  ledger.entries[n + i] = copy
end
io.write(cjson.encode(ledger))' >"$2"
}

# The made-up nodes the per-process benches serve (processes.sh,
# refresh_instructions.sh), "GPUS PROCESSES" each.
# shellcheck disable=SC2034 # read by the scripts that source this file
PROCESS_SIZES=("1 8" "8 64" "8 512" "32 2048")

# process_snapshots BINARY DIR: writes DIR/<GPUS>x<PROCESSES>.json, the
# snapshot of each of PROCESS_SIZES (bench/big_snapshot.lua, with BINARY's
# build's JSON writer).
process_snapshots() {
    local size gpus processes
    for size in "${PROCESS_SIZES[@]}"; do
        read -r gpus processes <<<"$size"
        LUA_PATH="lua/?.lua;;" LUA_CPATH="$(dirname "$1")/lua/?.so;;" \
            lua5.4 bench/big_snapshot.lua "$gpus" "$processes" >"$2/${gpus}x$processes.json"
    done
}

# fleet_addresses N: sets FLEET_ADDRESSES to N loopback addresses
# 127.1.x.y, one a node: fleet reads each URL once however many
# registrations name it, so nodes sharing an address would be read once.
# Raises the open files limit to fit N sockets, or exits 1.
fleet_addresses() {
    local i
    ulimit -n $(($1 + 1024)) || { echo "bench: cannot open $1 sockets (ulimit -n)" >&2; exit 1; }
    FLEET_ADDRESSES=()
    for ((i = 0; i < $1; i++)); do FLEET_ADDRESSES+=("127.1.$((i / 250)).$((i % 250 + 1))"); done
}

# fleet_server_start DIR PORT CONSUL: starts the fleet benches' nodes,
# DIR/fleet_server (built from bench/fleet_server.c when missing), on PORT
# of 127.0.0.1 (for the Consul answer) and of each of FLEET_ADDRESSES,
# answering DIR/ledger.json and, to Consul's path, the file CONSUL; waits
# for it to listen. Sets SERVER_PID.
fleet_server_start() {
    local _
    [ -x "$1/fleet_server" ] || cc -O2 -o "$1/fleet_server" bench/fleet_server.c
    "$1/fleet_server" "$2" "$1/ledger.json" "$3" 127.0.0.1 "${FLEET_ADDRESSES[@]}" >"$1/server.out" &
    # shellcheck disable=SC2034 # read by the scripts that source this file
    SERVER_PID=$!
    for _ in $(seq 50); do grep -q ready "$1/server.out" 2>/dev/null && break; sleep 0.1; done
}

# fleet_nodes DIR BINARY N: N nodes answering BINARY's fleet_ledger (in
# DIR/ledger.json) and an empty Consul answer, started with
# fleet_server_start on a free port. Sets FLEET_TARGETS, the
# "address:port,…" of --targets, and SERVER_PID.
fleet_nodes() {
    local port
    fleet_ledger "$2" "$1/ledger.json"
    echo '[]' >"$1/consul.json"
    port=$(free_port)
    fleet_addresses "$3"
    fleet_server_start "$1" "$port" "$1/consul.json"
    # shellcheck disable=SC2034 # read by the scripts that source this file
    FLEET_TARGETS=$(fleet_targets "$port" "$3")
}

# fleet_targets PORT N: the --targets of the first N of FLEET_ADDRESSES on
# PORT, "address:port,…".
fleet_targets() {
    local targets
    targets=$(printf "%s:$1," "${FLEET_ADDRESSES[@]:0:$2}")
    echo "${targets%,}"
}

# free_port: a TCP port of 127.0.0.1 that nothing listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
