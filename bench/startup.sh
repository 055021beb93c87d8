#!/usr/bin/env bash
# The start-up benchmark (not a test; results go in bench/README.md, "Start-up:
# embedded bytecode or text"): the normal build, which embeds the default
# scripts as bytecode, against the same source built to embed them as text
# (GPULEDGER_LUA pointed at a program that is not Lua, so CMake falls back),
# in one hyperfine run each for `version` and `ls --demo`: the ratio of the
# two is the start-up's compile cost.
# usage: bench/startup.sh   (BYTECODE=build/gpuledger by default; the text
# build goes to build-bench-text/)
set -euo pipefail
cd "$(dirname "$0")/.."
BYTECODE=${BYTECODE:-build/gpuledger}
command -v hyperfine >/dev/null || { echo "bench: needs hyperfine" >&2; exit 1; }
[ -x "$BYTECODE" ] || { echo "bench: no $BYTECODE; run scripts/setup or set BYTECODE" >&2; exit 1; }
text=build-bench-text
cmake -S . -B "$text" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULEDGER_LUA=/bin/false >/dev/null
cmake --build "$text" -j2 --target gpuledger >/dev/null
for args in "version" "ls --demo"; do
    hyperfine -N --warmup 20 --runs 300 \
        -n "text: $args" "$text/gpuledger $args" \
        -n "bytecode: $args" "$BYTECODE $args"
done
