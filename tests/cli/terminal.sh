#!/usr/bin/env bash
# What ls and check look like where a person reads them: on a terminal
# (a pseudo-terminal of a chosen width, tests/lib/on_terminal.py) ls fits
# its width, wrapping the tenants and never cutting a verdict; piped or with
# --wide it is the full table; every line names its GPU. check marks levels
# with emoji only on a terminal without NO_COLOR, and aligns the `where`
# column to the longest name.
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"
out="" # what run leaves (with $err and $rc)

mkdir "$WORK/rules"
# A site rule with a finding about the node, so that check's `where` column
# holds the node's name as well as GPU labels.
cat >"$WORK/rules/node_note.lua" <<'EOF'
return {
  code = "node-note", level = "WARN", doc = "a finding about the node",
  evaluate = function(_, _, emit) emit { message = "a note about the node" } end,
}
EOF
LONG_NODE=gpu-node-with-a-rather-long-name-07

# on_terminal COLUMNS ARGS...: runs gpuledger ARGS on a terminal COLUMNS wide,
# with the site rules of $rules, leaving $out and $rc.
rules=$WORK/rules
on_terminal() {
    local columns=$1
    shift
    out=$(python3 "$SRC/tests/lib/on_terminal.py" "$columns" "$GPULEDGER" "$@" --rules "$rules" 2>&1)
    rc=$?
}

# widest TEXT: the most characters (not bytes) on one line of TEXT.
widest() { TEXT=$1 lua5.4 -e 'local n = 0; for line in (os.getenv("TEXT") .. "\n"):gmatch("([^\n]*)\n") do n = math.max(n, utf8.len(line)) end; print(n)'; }

# count TEXT NEEDLE: how many times NEEDLE occurs in TEXT.
count() { grep -o -F -- "$2" <<<"$1" | wc -l; }

# --- ls ------------------------------------------------------------------------
run ls --demo --rules "$WORK/rules"
expect_rc "ls piped: exit 0" 0
piped=$out
expect_in "ls piped: the full table" "$piped" "│ gpu    │ model"
expect_eq "ls piped: as wide as it needs (203 columns)" "$(widest "$piped")" 203
expect_eq "ls piped: every line of a GPU names it (grep unmanaged keeps the card)" \
    "$(grep -F unmanaged <<<"$piped" | grep -c '^│ 2 ')" 2

for columns in 80 100 60; do
    on_terminal "$columns" ls --demo
    expect_rc "ls on $columns columns: exit 0" 0
    narrow=$out
    if [ "$(widest "$narrow")" -le "$columns" ]; then
        pass "ls on $columns columns: no line is wider"
    else
        fail "ls on $columns columns: no line is wider" "widest: $(widest "$narrow")" "$narrow"
    fi
    for mark in '!unmanaged' '!unreserved' '?alloc hidden from the token' held reserved-idle unaccounted free; do
        expect_eq "ls on $columns columns: '$mark' as often as in the full table, never cut" \
            "$(count "$narrow" "$mark")" "$(count "$piped" "$mark")"
    done
    expect_eq "ls on $columns columns: every line between the header and sources starts with its GPU's index (a slice's: 4/mig0)" \
        "$(sed -n '/^gpu  *model/,/^sources:/p' <<<"$narrow" | sed 1d | grep -v '^sources:' | grep -Ecv '^[0-4](/mig[01])? ')" 0
    expect_eq "ls on $columns columns: the tenants of gpu2 and their marks, on lines of gpu2 only" \
        "$(grep -E '!unmanaged|!unreserved|ffmpeg-manual|host:python3' <<<"$narrow" | grep -cv '^2 ')" 0
done
on_terminal 210 ls --demo
expect_eq "ls on 210 columns: the full table, which fits" "$out" "$piped"
on_terminal 80 ls --demo --wide
expect_eq "ls --wide on 80 columns: the full table" "$out" "$piped"
on_terminal 80 ls --demo --json
expect_in "ls --json on a terminal: JSON" "$out" '"entries":['

# --- check ---------------------------------------------------------------------
run check --demo --node "$LONG_NODE" --rules "$WORK/rules"
piped=$out
for glyph in 🟢 🟡 🔴 ⚫; do
    expect_not_in "check piped: no $glyph" "$piped" "$glyph"
done
expect_in "check piped: a level starts the line (codes padded to the longest)" "$piped" $'\nBAD   unreserved-tenant           gpu2 GPU-c41b9e27'
on_terminal 100 check --demo --node "$LONG_NODE"
expect_in "check on a terminal: coloured levels" "$out" "🔴 BAD   unreserved-tenant"
NO_COLOR=1 on_terminal 100 check --demo --node "$LONG_NODE"
expect_not_in "check with NO_COLOR on a terminal: no emoji" "$out" "🔴"
NO_COLOR="" on_terminal 100 check --demo --node "$LONG_NODE"
expect_in "check with an empty NO_COLOR: emoji (no-color.org)" "$out" "🔴"

# Each finding line: LEVEL CODE WHERE MESSAGE; the message starts in the same
# column on every line, after the longest where (the node's name here).
columns_at=$(LINES_=$piped NODE=$LONG_NODE lua5.4 -e '
local seen = {}
for line in os.getenv("LINES_"):gmatch("[^\n]+") do
  local where_start = line:match("^%u+%s+%S+%s+()")
  if where_start then
    local rest = line:sub(where_start)
    local where = rest:find(os.getenv("NODE"), 1, true) == 1 and os.getenv("NODE") or (rest:match("^gpu%d+/mig%d+ %S+ %S+") or rest:match("^gpu%d+ %S+"))
    local message = rest:sub(#where + 1):match("^%s*()")
    seen[utf8.len(line:sub(1, where_start - 1)) + #where + message - 1] = true
  end
end
local list = {}
for k in pairs(seen) do list[#list + 1] = k end
print(#list == 1 and "one column" or ("columns " .. table.concat(list, " ")))')
expect_eq "check: every message starts in one column, after the longest where" "$columns_at" "one column"
expect_in "check: the node's findings are there" "$piped" "$LONG_NODE"

# On a terminal a long message wraps under its column, two further in, and
# every line still starts with the finding's level and where (a GPU by its
# label alone where the message has little room); the words are those of
# the piped line (a word wider than the column split, never cut).
# same_findings TERMINAL PIPED: "same" when each finding of TERMINAL, its
# lines joined, holds the characters of PIPED's line for it, in order, and
# each of its further lines starts with its level and where (a GPU, or the
# node $LONG_NODE).
same_findings() {
    TERMINAL=$1 PIPED=$2 NODE=$LONG_NODE lua5.4 -e '
local node = os.getenv("NODE")
local function is_where(word) return word:match("^gpu%d+$") or word == node end
local function findings(s)
  local list = {}
  for line in s:gmatch("[^\n]+") do
    local level, first, rest = line:match("^%S*%s*(%u+)%s+(%S+)%s+(.*)$")
    if level == "OK" or level == "WARN" or level == "BAD" or level == "ERROR" then
      if is_where(first) then -- a further line: no code
        if #list == 0 then return nil, "a further line first: " .. line end
        rest = first .. " " .. rest
      else
        list[#list + 1] = { level .. " " .. first, {} }
      end
      local where_end = rest:find(node, 1, true) == 1 and #node + 1 or select(2, rest:find("^gpu[%w/]*")) + 1
      rest = rest:sub(where_end):gsub("^%s+GPU%-%x+", "") -- a GPU named by its label alone on a narrow terminal
      table.insert(list[#list][2], rest)
    end
  end
  for _, f in ipairs(list) do f[2] = table.concat(f[2], " "):gsub("%s+", "") end
  return list
end
local a, why = findings(os.getenv("TERMINAL"))
local b = findings(os.getenv("PIPED"))
if not a then print(why) return end
if #a ~= #b then print(#a .. " findings, piped " .. #b) return end
for i = 1, #a do
  if a[i][1] ~= b[i][1] or a[i][2] ~= b[i][2] then print("finding " .. i .. " differs: " .. a[i][1] .. " " .. a[i][2] .. " / " .. b[i][2]) return end
end
print("same")'
}
for columns in 80 120 60; do
    NO_COLOR=1 on_terminal "$columns" check --demo --node "$LONG_NODE"
    wrapped=$out
    expect_rc "check on $columns columns: exit 0" 0
    expect_eq "check on $columns columns: every finding line starts with its level" \
        "$(sed '/^$/,$d' <<<"$wrapped" | grep -cvE '^(OK|WARN|BAD|ERROR) ')" 0
    expect_eq "check on $columns columns: the same findings and words as piped, each line naming its GPU or node" \
        "$(same_findings "$wrapped" "$piped")" same
done
# The node's own name sets the where column above; with the demo's short
# name the columns fit 80 and 120 (narrower than its columns plus 24, a
# message runs on at 24).
for columns in 80 120; do
    NO_COLOR=1 on_terminal "$columns" check --demo
    if [ "$(widest "$out")" -le "$columns" ]; then
        pass "check on $columns columns: no line is wider"
    else
        fail "check on $columns columns: no line is wider" "widest: $(widest "$out")" "$out"
    fi
done
on_terminal 80 check --demo
if [ "$(widest "$out")" -le 79 ]; then # an emoji is two columns wide
    pass "check on 80 columns with emoji: no line is wider"
else
    fail "check on 80 columns with emoji: no line is wider" "widest: $(widest "$out") characters" "$out"
fi
on_terminal 80 check --demo --node "$LONG_NODE" --wide
expect_eq "check --wide on a terminal: one line per finding" "$(grep -cE '^[^ ]+ (OK|WARN|BAD|ERROR) ' <<<"$out")" \
    "$(grep -cE '^(OK|WARN|BAD|ERROR) ' <<<"$piped")"

# --- the README's examples are what the binary prints ---------------------------
mkdir "$WORK/no-rules"
rules=$WORK/no-rules
on_terminal 80 ls --demo
expect_eq "README: the ls example is ls --demo on an 80-column terminal" "$(readme_block "\`gpuledger ls --demo\` runs")" "$out"
run check --demo --rules "$rules"
expect_eq "README: the check example is check --demo, piped" "$(readme_block "and \`gpuledger check --demo\`, piped")" "$out"
on_terminal 80 check --demo
excerpt=$(readme_block "The first two findings above, on an 80-column terminal")
expect_eq "README: the wrapped example is the start of check --demo on an 80-column terminal" \
    "$(head -n "$(wc -l <<<"$excerpt")" <<<"$out")" "$excerpt"

finish
