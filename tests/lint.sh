#!/usr/bin/env bash
# The project's style checks, as a test: C formatted by the committed
# .clang-format, Lua clean under luacheck (.luacheckrc: Lua 5.4, no globals),
# shell scripts clean under shellcheck. Run by ctest as `lint`.
# shellcheck source-path=SCRIPTDIR source=lib/testlib.sh disable=SC1091
. "$(dirname "$0")/lib/testlib.sh"
cd "$SRC" || exit 1

check_tool() {
    command -v "$1" >/dev/null && return 0
    skip "$2" "$1 is not installed (scripts/test installs it)"
    return 1
}

if check_tool clang-format "C sources follow .clang-format"; then
    said=$(clang-format --dry-run --Werror src/*.c src/*.h tests/c/*.c tests/c/*.h 2>&1)
    if [ -z "$said" ]; then pass "C sources follow .clang-format"; else fail "C sources follow .clang-format" "${said:0:2000}" "fix with: clang-format -i src/*.[ch] tests/c/*.[ch]"; fi
fi

if check_tool luacheck "Lua is luacheck-clean"; then
    if said=$(luacheck --no-color --codes lua rules spec 2>&1); then pass "Lua is luacheck-clean"; else fail "Lua is luacheck-clean" "$(grep -E '\(W|\(E' <<<"$said" | head -20)"; fi
fi

if check_tool shellcheck "shell scripts are shellcheck-clean"; then
    mapfile -t scripts < <(grep -lE '^#!.*(ba)?sh' scripts/* tests/*.sh tests/cli/*.sh tests/lib/*.sh tests/fakes/* tests/real-gpu/*.sh tests/install/*.sh deploy/debian/* .ci/run bench/*.sh 2>/dev/null)
    if said=$(shellcheck -x "${scripts[@]}" 2>&1); then pass "shell scripts are shellcheck-clean (${#scripts[@]} files)"; else fail "shell scripts are shellcheck-clean" "${said:0:2000}"; fi
fi

finish
