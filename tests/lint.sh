#!/usr/bin/env bash
# The project's style checks, as a test: C formatted by the committed
# .clang-format, Lua clean under luacheck (.luacheckrc: Lua 5.4, no globals),
# shell scripts clean under shellcheck, and a repository that explains itself
# (no file cites a document, decision or issue the tree does not hold). Run by
# ctest as `lint`.
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

# What the tree may not cite, one ERE each (case-sensitive, so the words of
# docs/health.md, a `--json` spec or a variable such as SPEC_ENV stay legal):
# research documents kept outside the repository and their sections, a
# decision number, an issue number, the research directory, another
# implementation named as the original. Say the fact, or link docs/.
OUTSIDE_REFERENCES=(
    '\b(SPEC|DESIGN|PITFALLS|API-SHAPES)\b'  # the documents, with or without .md
    '\bHEALTH\.md\b'
    '§'                                        # a section of a document the tree lacks
    '[Dd]ecisions? D?[0-9]+\b'                 # "decision D2"
    '\(D[0-9]{1,2}\)'                          # "(D1)"
    '\b[Ii]ssues? #?[0-9]+\b'                  # "issue 10", "Issue #5"
    '(\.\./|/work/)shared\b'
    '\boriginal (Go )?gpuledger\b'
    "\\bthe original's\\b"
)
if [ -d .git ] || git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t tracked < <(git ls-files | grep -vxE 'tests/lint\.sh|LICENSE')
else # a source tree without git (a release tarball): every file but build outputs
    mapfile -t tracked < <(find . -path ./.git -prune -o -path './build*' -prune -o -path ./dist -prune \
        -o -type f -print | sed 's|^\./||' | grep -vxE 'tests/lint\.sh|LICENSE')
fi
pattern=$(IFS='|'; echo "${OUTSIDE_REFERENCES[*]}")
if said=$(grep -nIE "$pattern" -- "${tracked[@]}" 2>/dev/null); then
    fail "no file cites a document, decision or issue outside the tree" "$(head -20 <<<"$said")" \
        "say the fact, or point into docs/ (docs/contract.md, docs/health.md, docs/sources.md)"
else
    pass "no file cites a document, decision or issue outside the tree (${#tracked[@]} files)"
fi

finish
