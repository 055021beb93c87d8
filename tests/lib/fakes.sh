# shellcheck shell=bash disable=SC2034 # the variables set here are the callers'
# Shared by the whole-binary tests that run the fakes of tests/fakes/ (source
# it after testlib.sh): start fake_nomad.py, fake_engine.py or fake_node.py in the
# background, wait until it listens, and have it stopped when the script
# ends, however it ends. What to do when one does not start (fail which
# check, with what, and whether to go on) is the caller's.

# fake_start ERRFILE READY COMMAND...: runs COMMAND in the background, its
# stderr added to ERRFILE, stopped (stop_pid) when the script ends, and
# waits up to 10 s for it to write READY (wait_file). Sets fake_pid.
# Returns 1 when READY did not come (COMMAND died first, or was too slow).
fake_start() {
    local errfile=$1 ready=$2
    shift 2
    "$@" 2>>"$errfile" &
    fake_pid=$!
    at_exit "stop_pid $fake_pid"
    wait_file "$ready" "$fake_pid"
}

# fake_file_start NAME FILE ARGS...: starts fake_node.py answering FILE's
# bytes at every path (ARGS: --host, --port, --log), its port written to
# $WORK/NAME.port, its stderr added to $WORK/NAME.stderr. Once it listens,
# sets file_port. Returns 1 when it did not start.
fake_file_start() {
    local name=$1 file=$2
    shift 2
    fake_start "$WORK/$name.stderr" "$WORK/$name.port" python3 "$FAKES/fake_node.py" --mode file --file "$file" \
        --port-file "$WORK/$name.port" --max-seconds 300 "$@" || return 1
    file_port=$(cat "$WORK/$name.port")
}

# fake_nomad_start CONFIG ARGS...: starts fake_nomad.py on CONFIG with ARGS
# (--max-seconds, TLS), its port written to $WORK/nomad.port, its request
# log $WORK/nomad.log, its stderr added to $WORK/nomad.stderr. Once it
# listens, sets nomad_pid and nomad_port. Returns 1 when it did not start.
fake_nomad_start() {
    local config=$1
    shift
    fake_start "$WORK/nomad.stderr" "$WORK/nomad.port" python3 "$FAKES/fake_nomad.py" "$config" \
        --port-file "$WORK/nomad.port" --log "$WORK/nomad.log" "$@" || return 1
    nomad_pid=$fake_pid
    nomad_port=$(cat "$WORK/nomad.port")
}

# fake_nomad_up CONFIG: starts the fake Nomad on CONFIG for the whole
# script (it exits by itself after 300 s) and sets NOMAD, its http://
# address. When it cannot start, fails "fake Nomad starts" with its stderr
# and ends the script.
fake_nomad_up() {
    if ! fake_nomad_start "$1" --max-seconds 300; then
        fail "fake Nomad starts" "$(cat "$WORK/nomad.stderr")"
        finish
    fi
    NOMAD=http://127.0.0.1:$nomad_port
}

# docker_node_nomad: starts the fake Nomad of the Docker node
# (testdata/nomad/docker-node.json, fake_nomad_up) and sets the names its
# fixtures give: TOKEN, the token it expects (agent:read, node:read,
# read-job on "default" and "ml"); G0, G1, G3 and G5, GPUs of
# testdata/engine/docker-node/query-gpu.csv; the allocations ALLOC_A
# (default/train, trainer, worker: reserved on gpu0), ALLOC_B (ml/encode,
# encoders, enc: reserved on gpu4) and ALLOC_H (secret/hidden, miners,
# miner: hidden from TOKEN).
docker_node_nomad() {
    TOKEN=7d4b9a2e-31c5-4f08-b6e2-9f0a5c3d8e17
    G0=GPU-0c0ffee0-0000-4000-8000-000000000000
    G1=GPU-1c0ffee1-1111-4111-8111-111111111111
    G3=GPU-3c0ffee3-3333-4333-8333-333333333333
    G5=GPU-5c0ffee5-5555-4555-8555-555555555555
    ALLOC_A=aaaa0000-0000-4000-8000-00000000000a
    ALLOC_B=bbbb0000-0000-4000-8000-00000000000b
    ALLOC_H=dddd0000-0000-4000-8000-00000000000d
    fake_nomad_up "$TESTDATA/nomad/docker-node.json"
}

# fake_engine_start NAME ARGS...: starts fake_engine.py with ARGS (--mode,
# --fixture, --max-seconds, --port-file) on the socket $WORK/NAME.sock, its
# request log $WORK/NAME.log, its stderr added to $WORK/NAME.stderr; it is
# up once it writes $WORK/NAME.ready. Once it is, sets engine_pid. Returns
# 1 when it did not start.
fake_engine_start() {
    local name=$1
    shift
    fake_start "$WORK/$name.stderr" "$WORK/$name.ready" python3 "$FAKES/fake_engine.py" \
        --socket "$WORK/$name.sock" --ready-file "$WORK/$name.ready" --log "$WORK/$name.log" "$@" || return 1
    engine_pid=$fake_pid
}

# fake_smi_gpus DIR UUID...: makes DIR the answers of the fake nvidia-smi
# (tests/fakes/nvidia-smi, which FAKE_SMI_DIR points at): a query-gpu.csv
# with one NVIDIA L4 for each UUID, in the 12 fields the real one answers
# --query-gpu with, at index 0, 1, … on bus 00000000:01:00.0, 02, …, and
# busy: 2100 MiB used at 30 % for the first, 2400 MiB and 30 % more for each
# next (4500 MiB at 60 %). Its compute apps are the caller's to write.
fake_smi_gpus() {
    local dir=$1 i=0 uuid
    shift
    mkdir -p "$dir"
    : >"$dir/query-gpu.csv"
    for uuid in "$@"; do
        printf '%d, %s, NVIDIA L4, 00000000:%02X:00.0, %d, 23034, %d, %d, %d, %d.5, 0, 0\n' \
            "$i" "$uuid" $((i + 1)) $((2100 + 2400 * i)) $((30 + 30 * i)) $((10 + 10 * i)) $((50 + 5 * i)) \
            $((40 + 10 * i)) >>"$dir/query-gpu.csv"
        i=$((i + 1))
    done
}

# expect_no_token WHAT TOKEN TEXT: no form of TOKEN a server might echo it in
# is in TEXT: as sent, upper-cased, URL-encoded, base64 of "user:TOKEN", its
# first and last 12 bytes, and each part of 6 bytes or more of it cut in two
# where fakeserver.token_splits cuts it ({token_splits} of the fakes).
expect_no_token() {
    local what=$1 token=$2 text=$3 form
    local forms=("$token" "${token^^}" "$(printf 'user:%s' "$token" | base64 -w0)" "${token:0:12}" "${token: -12}")
    forms+=("$(python3 -c 'import sys; print("".join("%%%02X" % b for b in sys.argv[1].encode()))' "$token")")
    mapfile -t -O "${#forms[@]}" forms < <(python3 - "$FAKES" "$token" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import fakeserver
for cut in fakeserver.token_splits(sys.argv[2]).split("; "):
    for part in cut.split(" "):
        if len(part) >= 6:
            print(part)
PY
)
    for form in "${forms[@]}"; do
        expect_not_in "$what: no form of the token ($form)" "$text" "$form"
    done
}
