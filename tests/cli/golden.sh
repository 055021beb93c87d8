#!/usr/bin/env bash
# Golden outputs (testdata/golden/, made by scripts/regenerate-golden): ls,
# ls --json, check and check --json of the demo node and of the H100 real
# capture. The outputs are produced the way the goldens were (the same
# script, --out into a scratch directory); text must match exactly with the
# header time masked (TIME), JSON must be equal once parsed, with "at" and
# every "stateSince" masked (key order and layout are free).
# shellcheck source-path=SCRIPTDIR source=../lib/testlib.sh disable=SC1091
. "$(dirname "$0")/../lib/testlib.sh"

GOLDEN=$TESTDATA/golden
REGENERATE=$SRC/scripts/regenerate-golden
HINT="if this change of output is intended, run: scripts/regenerate-golden $GPULEDGER (then review git diff testdata/golden)"

if ! "$REGENERATE" --out "$WORK/actual" "$GPULEDGER" >"$WORK/regenerate.out" 2>&1; then
    fail "outputs produced" "scripts/regenerate-golden --out failed:" "$(cat "$WORK/regenerate.out")"
else
    pass "outputs produced"
fi

# json_diff GOLDEN ACTUAL: prints the differences of the two JSON documents
# (parsed; "at" and "stateSince" masked at any depth), nothing when equal.
json_diff() {
    lua5.4 - "$1" "$2" <<'LUA'
local cjson = require "cjson"
local function load(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  local ok, value = pcall(cjson.decode, text)
  if not ok then
    return nil, path .. ": not JSON: " .. tostring(value)
  end
  return value
end
local function mask(v)
  if type(v) == "table" then
    for k, x in pairs(v) do
      if (k == "at" or k == "stateSince") and type(x) == "string" then
        v[k] = "TIME"
      else
        mask(x)
      end
    end
  end
  return v
end
local diffs = {}
local function show(v)
  if v == nil then return "(absent)" end
  local ok, text = pcall(cjson.encode, v)
  return ok and text or tostring(v)
end
local function compare(a, b, path)
  if #diffs >= 12 then return end
  if type(a) ~= "table" or type(b) ~= "table" then
    if a ~= b then
      diffs[#diffs + 1] = string.format("%s: golden %s, now %s", path, show(a), show(b))
    end
    return
  end
  local keys = {}
  for k in pairs(a) do keys[#keys + 1] = k end
  for k in pairs(b) do if a[k] == nil then keys[#keys + 1] = k end end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  for _, k in ipairs(keys) do
    compare(a[k], b[k], path .. (type(k) == "number" and ("[" .. k .. "]") or ("." .. k)))
  end
end
local golden, why = load(arg[1])
if not golden then print(why) os.exit(0) end
local actual, why2 = load(arg[2])
if not actual then print(why2) os.exit(0) end
compare(mask(golden), mask(actual), "$")
for _, d in ipairs(diffs) do print(d) end
LUA
}

# text_diff GOLDEN ACTUAL: the first lines that differ, numbered.
text_diff() {
    lua5.4 - "$1" "$2" <<'LUA'
local function lines(path)
  local t = {}
  for line in io.lines(path) do t[#t + 1] = line end
  return t
end
local a, b = lines(arg[1]), lines(arg[2])
local shown = 0
for i = 1, math.max(#a, #b) do
  if a[i] ~= b[i] and shown < 6 then
    print(string.format("line %d golden: %s", i, a[i] or "(none)"))
    print(string.format("line %d now:    %s", i, b[i] or "(none)"))
    shown = shown + 1
  end
end
LUA
}

for case_dir in "$GOLDEN"/*/; do
    case_name=$(basename "$case_dir")
    for file in ls.txt ls.json check.txt check.json; do
        golden=$GOLDEN/$case_name/$file actual=$WORK/actual/$case_name/$file
        name="$case_name/$file"
        if [ ! -f "$golden" ]; then
            fail "$name" "no golden file $golden" "$HINT"
            continue
        fi
        if [ ! -f "$actual" ]; then
            fail "$name" "no output produced for it"
            continue
        fi
        case $file in
            *.json)
                differences=$(json_diff "$golden" "$actual" 2>&1)
                if [ -z "$differences" ]; then
                    pass "$name equals the golden file (parsed)"
                else
                    fail "$name equals the golden file (parsed)" "$differences" "$HINT"
                fi
                ;;
            *)
                if [ "$(cat "$golden")" = "$(cat "$actual")" ]; then
                    pass "$name equals the golden file"
                else
                    fail "$name equals the golden file" "$(text_diff "$golden" "$actual")" "$HINT"
                fi
                ;;
        esac
    done
done
for case_name in demo h100; do
    [ -d "$GOLDEN/$case_name" ] || fail "golden case $case_name exists" "missing $GOLDEN/$case_name" "$HINT"
done

# The comparison itself must catch a change: a field changed in a copy of a
# golden file is reported, a re-ordered/re-indented copy is not.
lua5.4 -e 'local s = io.read("a"); io.write((s:gsub("\"memoryUsedMiB\": 19818", "\"memoryUsedMiB\": 19819")))' \
    <"$GOLDEN/h100/ls.json" >"$WORK/changed.json"
expect_in "the comparison reports a changed field" "$(json_diff "$GOLDEN/h100/ls.json" "$WORK/changed.json")" "memoryUsedMiB: golden 19818, now 19819"
lua5.4 -e 'local cjson = require "cjson"; io.write(cjson.encode(cjson.decode(io.read("a"))))' \
    <"$GOLDEN/h100/ls.json" >"$WORK/compact.json"
expect_eq "the comparison ignores layout and key order" "$(json_diff "$GOLDEN/h100/ls.json" "$WORK/compact.json")" ""
lua5.4 -e 'local s = io.read("a"); io.write((s:gsub("\"at\": \"TIME\"", "\"at\": \"2031-01-01T00:00:00Z\"")))' \
    <"$GOLDEN/h100/ls.json" >"$WORK/timed.json"
expect_eq "the comparison ignores the time" "$(json_diff "$GOLDEN/h100/ls.json" "$WORK/timed.json")" ""

# The same bytes with a site scripts directory (the .deb makes an empty
# /etc/gpuledger/scripts, which renders in the process as none does), and
# with a script in it: an empty list stays [], never {} (the renderer's
# child loads its own copy of the JSON module).
mkdir -p "$WORK/site-scripts/gpuledger"
plain=$("$GPULEDGER" ls --demo --json)
with_scripts=$("$GPULEDGER" ls --demo --json --scripts "$WORK/site-scripts")
expect_in "ls --json: an empty tenants list is []" "$plain" '"tenants":[]'
expect_eq "ls --json with an empty --scripts directory: the same document" "$with_scripts" "$plain"
cp "$SRC/lua/gpuledger/json.lua" "$WORK/site-scripts/gpuledger/json.lua"
with_scripts=$("$GPULEDGER" ls --demo --json --scripts "$WORK/site-scripts")
expect_eq "ls --json with the site's copy of gpuledger.json (in the child): the same document" "$with_scripts" "$plain"

finish
