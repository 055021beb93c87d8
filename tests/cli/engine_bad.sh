#!/usr/bin/env bash
# gpuledger against a Docker Engine API that misbehaves (docs/sources.md#docker-and-podman;
# each bad input with a test, errors in libcurl's words), played by fake_engine.py: a
# socket that is missing, refused, hanging mid-answer, answering 500, invalid
# JSON or 20 MB, a container that vanishes between list and inspect, a
# JSON null in the container list, a container id shorter than 12 characters, a GPU process in a container no
# engine knows, and tcp:// and http:// endpoints. Each failure is one
# source-unavailable naming docker, the endpoint and the cause, while the
# GPUs of the fake nvidia-smi stay in the ledger and `ls` exits 0.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
out="" err="" rc=0 # what run leaves

G0=GPU-e0e0e0e0-0000-4000-8000-0000000000e0
G1=GPU-e1e1e1e1-1111-4111-8111-1111111111e1
FIXTURE=$TESTDATA/engine/containers.json
mkdir "$WORK/no-rules"

# engine_up ARGS...: starts fake_engine.py with ARGS on $WORK/engine.sock
# (and, with --port-file, on TCP: the port is then in $engine_port), its
# request log in $WORK/engine.log. Sets engine_pid.
engine_pid=""
engine_up() {
    engine_down
    rm -f "$WORK/engine.ready" "$WORK/engine.port"
    : >"$WORK/engine.log"
    if ! fake_engine_start engine --max-seconds 120 "$@"; then
        fail "fake engine starts ($*)" "$(tail -n 5 "$WORK/engine.stderr")"
        finish
    fi
    engine_port=$(cat "$WORK/engine.port" 2>/dev/null)
}
engine_down() { [ -z "$engine_pid" ] || stop_pid "$engine_pid"; engine_pid=""; }

# The fake nvidia-smi: two L4s, the test's own `sleep` on gpu0 (a host
# process: its real /proc/<pid>/cgroup names no container).
sleep 600 &
host_pid=$!
at_exit "stop_pid $host_pid"
mkdir "$WORK/smi"
cp "$TESTDATA/engine/small-node/query-gpu.csv" "$WORK/smi/"
echo "$G0, $host_pid, 512, sleep" >"$WORK/smi/compute-apps.csv"

# gl DOCKER ARGS...: runs gpuledger ARGS with --docker DOCKER, no Podman, no
# Nomad. Leaves $out, $err, $rc and $elapsed_ms.
gl() {
    local docker=$1 start end
    shift
    start=$(date +%s%N)
    FAKE_SMI_DIR=$WORK/smi run "$@" --nvidia-smi "$FAKES/nvidia-smi" --node test-node --rules "$WORK/no-rules" \
        --docker "$docker" --podman off --no-nomad
    end=$(date +%s%N)
    elapsed_ms=$(((end - start) / 1000000))
    printf '%s\n%s\n' "$out" "$err" >>"$WORK/all-output"
}

# The rest of the ledger (a Lua expression over ls --json): both GPUs, the
# host process on gpu0, Nomad off.
LEDGER_INTACT='#j.entries == 2 and j.entries[1].uuid == "'$G0'" and j.entries[2].uuid == "'$G1'" and j.entries[1].tenants[1].kind == "host" and j.entries[1].tenants[1].pids[1] == '$host_pid' and j.sources.nvidia == "read" and j.sources.proc == "read" and j.nomadRead == false'

# broken NAME ENDPOINT LUA-CAUSE: the checks every failure shares. check
# --json has exactly one source-unavailable, node-level, whose message
# starts with "docker ENDPOINT" and satisfies LUA-CAUSE (over m, the
# message); the GPU findings are still there; ls --json shows the ledger
# with docker failed; ls exits 0 with the error on stderr.
broken() {
    local name=$1 endpoint=$2 cause=$3
    gl "$endpoint" check --json
    expect_rc "$name: check exits 0" 0
    expect_lua "$name: one source-unavailable naming docker, the endpoint and the cause" "$out" \
        'local n, m = 0, nil for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then n = n + 1 m = f.message if f.gpu ~= nil or f.level ~= "ERROR" then return false end end end
         if n ~= 1 or m:sub(1, #"docker '"$endpoint"'") ~= "docker '"$endpoint"'" then return false end
         local said = ('"$cause"') return said ~= nil and said ~= false'
    expect_lua "$name: worst ERROR, GPU findings intact (host process on gpu0, idle gpu1)" "$out" \
        'local codes = {} for _, f in ipairs(j.findings) do codes[#codes + 1] = f.code .. "@" .. (f.gpu or "node") end
         return j.worst == "ERROR" and table.concat(codes, " ") == "source-unavailable@node unmanaged-tenant@gpu0 GPU-e0e0e0e0 idle@gpu1 GPU-e1e1e1e1"'
    gl "$endpoint" ls --json
    expect_rc "$name: ls --json exits 0" 0
    expect_lua "$name: ls --json keeps the ledger, docker failed" "$out" \
        "$LEDGER_INTACT"' and j.sources.docker == "failed" and #j.errors == 1'
    gl "$endpoint" ls
    expect_rc "$name: ls exits 0" 0
    expect_in "$name: ls shows both GPUs" "$out" "2 GPU(s) · "
    expect_in "$name: ls counts the source error" "$out" "1 source error(s)"
    expect_in "$name: ls says the error on stderr" "$err" "gpuledger: docker $endpoint"
}

# --- the socket is missing ----------------------------------------------------
broken "missing socket" "unix://$WORK/absent.sock" \
    'm:find("No such file", 1, true) ~= nil or m:find("connect", 1, true) ~= nil'

# --- refusing: reads the request, closes with no answer ----------------------------
engine_up --mode refuse
broken "refusing" "unix://$WORK/engine.sock" \
    'm:find("connect", 1, true) or m:find("reset", 1, true) or m:find("nothing", 1, true) or m:find("Empty", 1, true) or m:find("Recv failure", 1, true)'

# --- hanging mid-answer: the 5 s timeout -------------------------------------------
engine_up --mode hang-mid-answer --fixture "$FIXTURE" --hang-seconds 60
gl "unix://$WORK/engine.sock" check --json
if [ "$elapsed_ms" -lt 9000 ]; then
    pass "hanging: check returns within the 5 s timeout + margin (${elapsed_ms} ms)"
else
    fail "hanging: check returns within the 5 s timeout + margin" "took ${elapsed_ms} ms"
fi
expect_lua "hanging: one source-unavailable saying timed out" "$out" \
    'local n, m = 0, "" for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then n = n + 1 m = f.message end end
     return n == 1 and m:find("docker unix://'"$WORK"'/engine.sock", 1, true) == 1 and m:find("timed out", 1, true) ~= nil'
expect_lua "hanging: GPU findings intact" "$out" \
    'local n = 0 for _, f in ipairs(j.findings) do if f.gpu then n = n + 1 end end return n == 2'
gl "unix://$WORK/engine.sock" ls --json
expect_rc "hanging: ls --json exits 0" 0
expect_lua "hanging: ls --json keeps the ledger" "$out" "$LEDGER_INTACT"' and j.errors[1]:find("timed out", 1, true) ~= nil'
if [ "$elapsed_ms" -lt 9000 ]; then pass "hanging: ls within 9 s (${elapsed_ms} ms)"; else fail "hanging: ls within 9 s" "took ${elapsed_ms} ms"; fi

# --- HTTP 500 ------------------------------------------------------------------------
engine_up --mode 500 --fixture "$FIXTURE"
broken "HTTP 500" "unix://$WORK/engine.sock" \
    'm:find("HTTP 500", 1, true) ~= nil and m:find("fake engine: internal error", 1, true) ~= nil'

# --- invalid JSON ----------------------------------------------------------------------
engine_up --mode invalid-json --fixture "$FIXTURE"
broken "invalid JSON" "unix://$WORK/engine.sock" 'm:find("JSON", 1, true) ~= nil'

# --- 20 MB answers -------------------------------------------------------------------------
engine_up --mode huge
broken "20 MB answer" "unix://$WORK/engine.sock" 'm:find("exceeds", 1, true) ~= nil'
engine_up --mode huge --chunked
broken "20 MB chunked answer" "unix://$WORK/engine.sock" 'm:find("exceeds", 1, true) ~= nil'

# --- a container vanishing between list and inspect ------------------------------------
engine_up --mode vanish --fixture "$FIXTURE"
gl "unix://$WORK/engine.sock" check --json
expect_rc "vanish: check exits 0" 0
expect_lua "vanish: no source-unavailable" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end return true'
gl "unix://$WORK/engine.sock" ls --json
expect_rc "vanish: ls --json exits 0" 0
vanish_json=$out
expect_lua "vanish: no errors, docker read" "$vanish_json" 'j.errors == nil and j.sources.docker == "read"'
expect_lua "vanish: the others are there (gpu1-user on gpu1, no pids)" "$vanish_json" \
    'local t = j.entries[2].tenants[1] return #j.entries[2].tenants == 1 and t.container == "gpu1-user" and t.kind == "docker" and #t.pids == 0 and t.image == "busybox:1.36"'
expect_not_in "vanish: the vanished container is not in the ledger" "$vanish_json" "vanished"
expect_not_in "vanish: the vanished id is not in the ledger" "$vanish_json" "deaddead"
expect_not_in "vanish: the stopped container is not a tenant" "$vanish_json" "stopped"
expect_in "vanish: the vanished container was asked for" "$(cat "$WORK/engine.log")" "/containers/deaddeaddeaddeaddeaddeaddeaddeaddeaddeaddeaddeaddeaddeaddeaddead/json"

# --- a JSON null in the container list ---------------------------------------------------
# The null is one error naming the engine, its address and the item; the
# containers listed after it are still inspected and hold their GPUs.
engine_up --mode null-item --fixture "$FIXTURE"
gl "unix://$WORK/engine.sock" check --json
expect_rc "null item: check exits 0" 0
expect_lua "null item: one source-unavailable ERROR naming the engine, its address and the item" "$out" \
    'local n, m = 0, "" for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then n = n + 1 m = f.message if f.gpu ~= nil or f.level ~= "ERROR" then return false end end end
     return n == 1 and m == "docker unix://'"$WORK"'/engine.sock: GET /containers/json: unexpected answer: [1] is null, want an object"'
gl "unix://$WORK/engine.sock" ls --json
expect_rc "null item: ls --json exits 0" 0
expect_lua "null item: the ledger intact, docker read, the one error in errors" "$out" "$LEDGER_INTACT"' and j.sources.docker == "read" and #j.errors == 1'
expect_lua "null item: gpu1-user, listed after the null, is gpu1's tenant" "$out" \
    'local t = j.entries[2].tenants[1] return j.entries[2].uuid == "'$G1'" and #j.entries[2].tenants == 1 and t.container == "gpu1-user" and t.kind == "docker"'
expect_in "null item: gpu1-user was inspected" "$(cat "$WORK/engine.log")" \
    "/containers/e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1/json"

# --- a container id shorter than 12 characters -----------------------------------------
# Listed and inspected (fake_engine, the fixture's "abc123"): a tenant whose
# containerId is the short id, holding gpu0 by DeviceRequests ["0"].
engine_up --mode ok --fixture "$FIXTURE"
gl "unix://$WORK/engine.sock" ls --json
expect_rc "short id, inspected: ls --json exits 0" 0
expect_lua "short id, inspected: a tenant with containerId abc123 on gpu0" "$out" \
    'for _, t in ipairs(j.entries[1].tenants) do if t.containerId == "abc123" then return t.container == "shorty" and t.kind == "docker" and #t.pids == 0 end end return false'
expect_lua "short id, inspected: no error" "$out" 'j.errors == nil'
expect_not_in "ok: no environment value kept" "$out" "env-secret-93c1d"
expect_not_in "ok: no non-Nomad label kept" "$out" "label-secret-5f0a"
gl "unix://$WORK/engine.sock" snapshot
expect_not_in "ok: snapshot keeps no environment value" "$out" "env-secret-93c1d"
expect_not_in "ok: snapshot keeps no non-Nomad label" "$out" "label-secret-5f0a"
expect_in "ok: snapshot keeps NVIDIA_VISIBLE_DEVICES" "$out" "NVIDIA_VISIBLE_DEVICES=$G1"
engine_down

# canned_engine.py SOCKET LOG IDS STATUS BODY: an engine that lists the
# containers IDS (comma-separated, maybe none) and answers every inspect
# with STATUS and BODY as they are (fake_engine answers an inspect from its
# fixture only, and lists only what it can inspect).
cat >"$WORK/canned_engine.py" <<'EOF'
import json, socketserver, sys
from http.server import BaseHTTPRequestHandler

socket_path, log_path, ids, inspect_status, inspect_body = sys.argv[1:6]

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def address_string(self): return "local"
    def do_GET(self):
        with open(log_path, "a") as log:
            log.write(self.path + "\n")
        if self.path.split("?")[0].endswith("/containers/json"):
            status = 200
            data = json.dumps([{"Id": i, "Names": ["/c"], "State": "running", "Labels": {}} for i in ids.split(",") if i])
        else:
            status, data = int(inspect_status), inspect_body
        data = data.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

server = Server(socket_path, Handler)
with open(socket_path + ".ready", "w") as ready:
    ready.write("1\n")
server.serve_forever()
EOF

# canned_up NAME IDS STATUS BODY: starts canned_engine.py on $WORK/NAME.sock,
# its request log $WORK/NAME.log. Sets canned_pid; returns 1 when it did
# not start (a failure is recorded).
canned_up() {
    local name=$1
    shift
    rm -f "$WORK/$name.sock" "$WORK/$name.sock.ready"
    if ! fake_start "$WORK/$name.stderr" "$WORK/$name.sock.ready" \
        timeout 120 python3 "$WORK/canned_engine.py" "$WORK/$name.sock" "$WORK/$name.log" "$@"; then
        fail "the $name engine starts" "$(cat "$WORK/$name.stderr")"
        return 1
    fi
    canned_pid=$fake_pid
}

# Listed, and the inspect is a 404: a container that vanished.
if canned_up short abc 404 '{"message": "No such container: abc"}'; then
    gl "unix://$WORK/short.sock" check --json
    expect_rc "short id, inspect 404: check exits 0 (no crash)" 0
    expect_lua "short id, inspect 404: the container is skipped, no source-unavailable" "$out" \
        'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" then return false end end return #j.findings == 2'
    gl "unix://$WORK/short.sock" ls --json
    expect_rc "short id, inspect 404: ls --json exits 0" 0
    expect_lua "short id, inspect 404: ledger intact, docker read" "$out" "$LEDGER_INTACT"' and j.errors == nil and j.sources.docker == "read"'
    expect_in "short id, inspect 404: it was inspected by its short id" "$(cat "$WORK/short.log")" "/containers/abc/json"
    expect_not_in "short id, inspect 404: no Lua error on stderr" "$err" "stack traceback"
    stop_pid "$canned_pid"
fi

# --- a GPU process in a container no engine lists: a lazy inspect, a 404 -----------------
# A private procfs root (--proc) says the host pid is in a Docker container
# that the engine does not know: it is inspected, answered 404, and the
# process becomes a docker tenant known only by its 12-character id.
UNKNOWN=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
mkdir -p "$WORK/proc/$host_pid"
printf '0::/system.slice/docker-%s.scope\n' "$UNKNOWN" >"$WORK/proc/$host_pid/cgroup"
engine_up --mode ok --fixture "$FIXTURE"
FAKE_SMI_DIR=$WORK/smi run ls --json --nvidia-smi "$FAKES/nvidia-smi" --node test-node --rules "$WORK/no-rules" \
    --docker "unix://$WORK/engine.sock" --podman off --no-nomad --proc "$WORK/proc"
expect_rc "unknown container: ls --json exits 0" 0
expect_lua "unknown container: a docker tenant with only its 12-character id, unidentified" "$out" \
    'local t = j.entries[1].tenants[1] return t.kind == "docker" and t.containerId == "0123456789ab" and t.container == nil and t.pids[1] == '"$host_pid"' and t.unidentified == true'
expect_lua "unknown container: no error" "$out" 'j.errors == nil'
expect_in "unknown container: it was inspected on the engine" "$(cat "$WORK/engine.log")" "/containers/$UNKNOWN/json"

# unidentified LABEL CAUSE ENDPOINT: with the engine at ENDPOINT, check
# --json (the private procfs root) says the GPU of the unknown container's
# process cannot be accounted for (an ERROR source-unavailable on gpu0
# naming the container, its pid and CAUSE) and does not call it unmanaged;
# ls marks it ?not identified.
unidentified() {
    local label=$1 cause=$2 endpoint=$3
    gl "$endpoint" check --json --proc "$WORK/proc"
    expect_rc "$label: check exits 0" 0
    expect_lua "$label: source-unavailable ERROR on gpu0 naming the container and the cause" "$out" \
        'for _, f in ipairs(j.findings) do if f.code == "source-unavailable" and f.gpu == "gpu0 GPU-e0e0e0e0" then
           return f.level == "ERROR" and f.message:find("container 0123456789ab holds this GPU (pids ['"$host_pid"'], 512 MiB), but no engine could identify it (", 1, true) == 1
             and f.message:find("'"$cause"'", 1, true) ~= nil end end return false'
    expect_lua "$label: not called unmanaged" "$out" \
        'for _, f in ipairs(j.findings) do if f.code == "unmanaged-tenant" and f.message:find("0123456789ab", 1, true) then return false end end return true'
    gl "$endpoint" ls --proc "$WORK/proc"
    expect_in "$label: ls marks the tenant ?not identified" "$out" "docker:0123456789ab (512 MiB) ?not identified"
}
unidentified "unknown container" "not known to docker" "unix://$WORK/engine.sock"
engine_down

# The engine lists the container and its inspect answers 500; then the
# engine lists nothing and its inspect (the lazy one) answers garbage.
if canned_up picky "$UNKNOWN" 500 '{"message": "fake engine: inspect broke"}'; then
    unidentified "inspect 500" "GET /containers/$UNKNOWN/json: HTTP 500 (fake engine: inspect broke)" "unix://$WORK/picky.sock"
    stop_pid "$canned_pid"
fi
if canned_up picky "" 200 '{"Id": "0123'; then
    unidentified "inspect garbage" "GET /containers/$UNKNOWN/json: the answer is not JSON" "unix://$WORK/picky.sock"
    stop_pid "$canned_pid"
fi

# --- tcp:// and http:// endpoints ------------------------------------------------------------
engine_up --mode ok --fixture "$FIXTURE" --port-file "$WORK/engine.port"
for scheme in tcp http; do
    gl "$scheme://127.0.0.1:$engine_port" ls --json
    expect_rc "$scheme://: ls --json exits 0" 0
    expect_lua "$scheme://: the containers are read over TCP" "$out" \
        'j.errors == nil and j.sources.docker == "read" and j.entries[2].tenants[1].container == "gpu1-user"'
done
gl "http://127.0.0.1:$engine_port/" ls --json
expect_lua "http:// with a trailing /: read too" "$out" 'j.errors == nil and j.entries[2].tenants[1].container == "gpu1-user"'
engine_up --mode 500 --port-file "$WORK/engine.port"
broken "tcp:// answering 500" "tcp://127.0.0.1:$engine_port" 'm:find("HTTP 500", 1, true) ~= nil'
engine_up --mode invalid-json --port-file "$WORK/engine.port"
broken "http:// answering invalid JSON" "http://127.0.0.1:$engine_port" 'm:find("JSON", 1, true) ~= nil'
engine_down
# Nothing listens on that port any more.
broken "tcp:// refused" "tcp://127.0.0.1:$engine_port" \
    'm:find("refused", 1, true) ~= nil or m:find("connect", 1, true) ~= nil'

expect_not_in "no sanitizer report in any run" "$(cat "$WORK/all-output")" "Sanitizer"
expect_not_in "no undefined behaviour reported in any run" "$(cat "$WORK/all-output")" "runtime error:"

finish
