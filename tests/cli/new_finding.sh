#!/usr/bin/env bash
# docs/architecture.md says a new default finding is one file in rules/ and
# its spec in spec/rules/, nothing else. This makes it so in a copy of the
# tree: it adds rules/zz_memory_full.lua and spec/rules/zz_memory_full_spec.lua,
# builds the copy, and wants the whole spec suite to pass there (the new
# spec among it), `gpuledger rules` to list the code in its place and
# `gpuledger check` to find it, with nothing else of the tree touched.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"

for tool in cmake busted lua5.4; do
    if ! command -v "$tool" >/dev/null; then
        echo "skip: $tool is needed to build and test a copy of the tree"
        exit 77
    fi
done

TREE=$WORK/tree
mkdir "$TREE"
tar -C "$SRC" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$TREE" -xf -

cat >"$TREE/rules/zz_memory_full.lua" <<'LUA'
-- A GPU whose memory is all but full: the next allocation on it may fail.
return {
  code = "zz-memory-full",
  level = "WARN",
  doc = "a GPU's memory is more than 99% used",
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if (gpu.memoryTotalMiB or 0) > 0 and gpu.memoryUsedMiB * 100 > gpu.memoryTotalMiB * 99 then
        emit { gpu = gpu, message = string.format("%d of %d MiB used", gpu.memoryUsedMiB, gpu.memoryTotalMiB) }
      end
    end
  end,
}
LUA
cat >"$TREE/spec/rules/zz_memory_full_spec.lua" <<'LUA'
-- rules/zz_memory_full.lua, as embedded in the core.
local H = require "helper"

describe("zz-memory-full", function()
  it("a GPU over 99% used is WARN, with what is used", function()
    local f = H.rule_one("zz-memory-full", { H.gpu { memoryUsedMiB = 23000, memoryTotalMiB = 23034 } })
    assert.equal("WARN", f.level)
    assert.equal("23000 of 23034 MiB used", f.message)
  end)

  it("is not claimed at 99% or under", function()
    H.rule_none("zz-memory-full", { H.gpu { memoryUsedMiB = 99, memoryTotalMiB = 100 } })
  end)
end)
LUA

if cmake -S "$TREE" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Debug >"$WORK/cmake.out" 2>&1 &&
    cmake --build "$WORK/build" --target gpuledger gpuledger_core_module gpuledger_json_write_module gpuledger_shape_check_module -j2 >>"$WORK/cmake.out" 2>&1; then
    pass "the copy with the new rule builds"
else
    fail "the copy with the new rule builds" "$(tail -20 "$WORK/cmake.out")"
    finish
fi

specs=$(cd "$TREE" && LUA_PATH="$TREE/lua/?.lua;$TREE/?.lua;$TREE/spec/?.lua;;" LUA_CPATH="$WORK/build/lua/?.so;;" \
    GPULEDGER_SOURCE_DIR=$TREE lua5.4 "$(command -v busted)" --output=TAP spec 2>&1)
spec_rc=$?
expect_eq "the whole spec suite passes with the new rule" "$spec_rc" 0
expect_in "the new rule's spec ran: its first case" "$specs" "zz-memory-full a GPU over 99% used is WARN"
if [ "$spec_rc" -ne 0 ]; then
    printf '%s\n' "$specs" | grep -A8 '^not ok' | head -60
fi

GPULEDGER=$WORK/build/gpuledger
mkdir "$WORK/no-rules"
run rules --json --rules "$WORK/no-rules"
expect_rc "rules: exit 0" 0
expect_lua "rules: the new code is listed, from the embedded file, after the ranked codes" "$out" \
    'for i, r in ipairs(j.rules) do if r.code == "zz-memory-full" then return r.origin == "embedded" and r.file == "zz_memory_full" and r.rank == nil and j.rules[i - 1].code < r.code end end; return false'
run check --demo --json --rules "$WORK/no-rules"
expect_lua "check: the new rule runs on the demo node (no rule-error)" "$out" \
    'for _, f in ipairs(j.findings) do if f.code == "rule-error" then return false end end; return true'
run rules --prometheus --rules "$WORK/no-rules"
expect_in "rules --prometheus: an alert for the new code" "$out" 'expr: gpuledger_gpu_finding{code="zz-memory-full"} > 0'

finish
