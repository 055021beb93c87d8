#!/usr/bin/env bash
# A node without an NVIDIA driver (nvidia-smi nowhere in PATH), as the Nomad
# system job meets one when it runs on every node: ls says there is no GPU,
# check finds nothing, serve is healthy, and nothing but Nomad is asked (the
# Docker socket, the kernel log and /proc named here do not exist: asking
# them would be a source error). A GPU that Nomad fingerprinted on such a
# node is still reported (gpu-lost); a named path that does not exist stays
# a source error.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=../lib/fakes.sh
. "$SRC/tests/lib/fakes.sh"
# shellcheck source=../lib/serve.sh
. "$SRC/tests/lib/serve.sh"
out="" err="" rc=0 # what run leaves

unset GPULEDGER_KERNEL_LOG
mkdir "$WORK/no-rules"
ABSENT=(--nvidia-smi gpuledger-test-no-nvidia-smi --docker "unix://$WORK/no-docker.sock" --proc "$WORK/no-proc"
    --kernel-log "$WORK/no-kern.log" --rules "$WORK/no-rules" --node cpu-node-1)

run ls "${ABSENT[@]}" --no-nomad
expect_rc "ls exits 0" 0
expect_in "ls says there is no GPU, and why" "$out" "
no NVIDIA GPU on this node (nvidia-smi is not installed)
"
expect_in "... and that nothing but nvidia-smi was asked" "$out" \
    "sources: nvidia read · health off · mig off · kernel_log off · proc off · docker off · podman off · nomad off"
expect_eq "... with nothing on stderr" "$err" ""
run ls --json "${ABSENT[@]}" --no-nomad
expect_lua "ls --json: no entry, nvidiaInstalled false, no error" "$out" \
    'return #j.entries == 0 and j.nvidiaInstalled == false and j.errors == nil'
run check --json "${ABSENT[@]}" --no-nomad --exit-on warn
expect_rc "check --exit-on warn exits 0" 0
expect_lua "check: no finding" "$out" 'return #j.findings == 0 and j.worst == "OK"'

# Nomad fingerprinted a GPU here: the driver is gone, not absent.
python3 -c 'import json, sys
json.dump({"node_id": "5b8e2d1c-4a3f-4e6d-8c7b-9a0f1e2d3c4b", "acl": False,
  "devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA L4", "Instances": [
    {"ID": "GPU-3f8a2c1e-0000-4000-8000-000000000001", "Healthy": True, "HealthDescription": "",
     "Locality": {"PciBusID": "00000000:01:00.0"}}]}], "allocations": []}, open(sys.argv[1], "w"))' "$WORK/nomad.json"
fake_nomad_up "$WORK/nomad.json"
run check --json "${ABSENT[@]}" --nomad-addr "$NOMAD"
expect_lua "a GPU Nomad fingerprinted on the node is gpu-lost" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "gpu-lost" then return f.uuid == "GPU-3f8a2c1e-0000-4000-8000-000000000001" end end return false'

run ls "${ABSENT[@]/gpuledger-test-no-nvidia-smi/$WORK/bin/nvidia-smi}" --no-nomad
expect_in "a named path that does not exist is still a source error" "$err" "nvidia-smi query-gpu: $WORK/bin/nvidia-smi: not found"

if start_serve no-gpu "${ABSENT[@]}" --no-nomad --listen 127.0.0.1:0; then
    http GET "$URL/healthz"
    expect_eq "serve: /healthz 200" "$status" 200
    http GET "$URL/metrics"
    expect_in "serve: nvidia-smi is up" "$body" 'gpuledger_source_up{node="cpu-node-1",source="nvidia"} 1'
    expect_not_in "serve: no GPU series" "$body" "gpuledger_gpu_info{"
    stop_serve TERM
    expect_eq "serve stops cleanly" "$SERVE_RC" 0
else
    fail "serve starts on a node without nvidia-smi" "$(cat "$SERVE_LOG")"
fi
finish
