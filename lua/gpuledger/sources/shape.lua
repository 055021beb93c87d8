-- The shape of a source's answer, checked where it enters the ledger: a
-- field of the wrong JSON type (`Config.Env: -1`, `DeviceIDs: "GPU-x"`, a
-- GPU's cell as a number in a replayed snapshot) becomes a source error
-- naming the field, never an internal error further on. A shape is a type
-- name ("string", "number", "boolean", "table"), "any" (any value, a null
-- among a list's items too), M.number(min, max) and M.whole(min, max) (a
-- number, a whole one, from min to max), {list = shape} (a JSON array of
-- them, without a null unless of "any"; with max = N, of at most N items),
-- {map = shape} (an object of them), M.required(shape) (a field that must
-- be there) or a table of field → shape (an object with those fields).
-- Other fields may be absent.
local cjson = require "cjson"
local json = require "gpuledger.json"
local walk = require "gpuledger.shape_check" -- the walk, in C (src/shape_check.c)

local M = {}

-- The shape of a field that must be present, of shape.
function M.required(shape)
  return { required = shape }
end

-- The shape of a number from min to max (integers both).
function M.number(min, max)
  return { range = { min, max } }
end

-- The shape of a whole number from min to max (integers both): JSON's
-- 23034.5, 1e20 or 1e308 where a count belongs is no count.
function M.whole(min, max)
  return { range = { min, max }, whole = true }
end

-- The largest whole number a JSON number carries exactly (2^53).
M.MAX_WHOLE = 1 << 53

-- How an error names who answered a source: "<source> <origin>", origin
-- being its address, binary, file or journal command; where the snapshot
-- keeps none (one written before it kept the source's `what`: "address",
-- "log", …; a live collection always names it), it says so, the snapshot
-- then being all there is: "<source> (the snapshot names no <what>)".
function M.named(source, origin, what)
  if type(origin) == "string" and origin ~= "" then
    return source .. " " .. origin
  end
  return string.format("%s (the snapshot names no %s)", source, what)
end

-- The error for an answer of source (its name, or an engine and its
-- endpoint) that is not as it should be: "<source>: unexpected answer: <why>".
function M.unexpected(source, why)
  return string.format("%s: unexpected answer: %s", source, why)
end

-- nil when value has the shape (or is absent: nil, or lua-cjson's null),
-- else what is wrong with the first field that does not (an object's
-- fields, and a map's items, tried in the order of their names), named by its path
-- from path ("<path>.a[2].b"): "<field> is a <type>, want <what>", or is
-- missing (a required field), is null (a list's item), is a number out of
-- range, has too many items, or is an object where a list belongs.
function M.check(value, shape, path)
  local below, what = walk.check(value, shape)
  if below then
    return path .. below .. what
  end
  return nil
end

-- How a message names a value that is not what it wants, as the checks
-- do (" is a table, want …"): "a <type>"; absent (the message's own word
-- for it: "missing", "null") when the value is nil or lua-cjson's null.
function M.what_is(value, absent)
  if value == nil or value == cjson.null then
    return absent
  end
  return "a " .. type(value)
end

-- nil when value, the decoded answer of source (who answered, as its
-- errors begin: "consul http://…", "nomad http://…: GET /v1/…"), is a JSON
-- array, else source's unexpected answer naming what it is, as the checks
-- do: "<source>: unexpected answer: the answer is an object, want a list"
-- (or a string, a number, a boolean, null).
function M.not_a_list(source, value)
  if json.is_array(value) then
    return nil
  end
  local what = type(value) == "table" and "an object" or M.what_is(value, "null")
  return M.unexpected(source, string.format("the answer is %s, want a list", what))
end

-- nil when value, the decoded answer of source (as M.not_a_list's), is a
-- JSON object, else source's unexpected answer naming what it is: "<source>:
-- unexpected answer: the answer is a list, want an object" (or a string, a
-- number, a boolean, null).
function M.not_an_object(source, value)
  if type(value) == "table" and not json.is_array(value) then
    return nil
  end
  local what = type(value) == "table" and "a list" or M.what_is(value, "null")
  return M.unexpected(source, string.format("the answer is %s, want an object", what))
end

-- The items of a list (one that has the shape {list = "any"}: a JSON array
-- as decoded, its nulls holes in it) that have item_shape, and why each
-- other one does not ("<path>[i]…", a null too), so that one bad record
-- costs only itself; then the path of each kept one, by its place among
-- them (path_of(k): "<path>[i]"), written only when asked for.
function M.items(list, item_shape, path)
  local kept, whys, places = {}, {}, {}
  local check = walk.check_item
  for i = 1, walk.length(list) do
    local below, what = check(list[i], item_shape)
    if below then
      whys[#whys + 1] = string.format("%s[%d]%s%s", path, i, below, what)
    else
      kept[#kept + 1] = list[i]
      places[#places + 1] = i
    end
  end
  local function path_of(k)
    return string.format("%s[%d]", path, places[k])
  end
  return kept, whys, path_of
end

-- The length of a table read as a JSON array as decoded (its largest
-- index: a null is a hole in it, which ipairs would stop at), or nil when
-- it has another key (an object).
M.length = walk.length

-- An item of a list as a snapshot keeps it: the item, or lua-cjson's null
-- (json.NULL) for a JSON null (a hole), so that the ledger names it
-- (M.items) and the items after it keep their places.
function M.kept_item(item)
  if item == nil then
    return cjson.null
  end
  return item
end

-- Rows of cells as nvidia-smi's queries are kept in a snapshot.
M.ROWS = { rows = { list = { list = "string" } }, fields = { list = "string" }, error = "string" }

return M
