-- JSON in and out. Decoding gives lua-cjson's values, with JSON null turned into nil
-- (cjson.null is a light userdata, and truthy) and empty arrays marked as arrays, so
-- that [] is written back as []. Encoding is ours, in C (src/json_write.c),
-- because Debian's cjson 2.1.0 cannot write an empty array (and our arrays
-- are [], never null): tables marked with json.array() are arrays, other
-- tables with only 1..n keys are arrays, the rest objects with keys in
-- sorted order. Strings are written as Go writes them (<, >, & and U+2028/9
-- escaped, bad UTF-8 as U+FFFD, each byte as text.valid_utf8 replaces it).
local cjson = require "cjson"
local writer = require "gpuledger.json_write"

local M = {}

-- The mark is the metatable's name, not the metatable itself: a site's
-- --scripts directory makes a renderer's child load its own copy of this
-- module, and an array marked by the other copy must still be one.
local ARRAY_NAME = "json.array"
local ARRAY = { __name = ARRAY_NAME }

-- Marks t (default: a new table) as a JSON array and returns it.
function M.array(t)
  return setmetatable(t or {}, ARRAY)
end

-- True when t is a table marked with json.array() (by any copy of this module).
function M.is_array(t)
  local mt = getmetatable(t)
  return type(mt) == "table" and rawget(mt, "__name") == ARRAY_NAME
end

-- JSON null as M.decode_raw gives it (lua-cjson's null: a light userdata,
-- and truthy).
M.NULL = cjson.null

-- Decodes text as lua-cjson does: JSON null is M.NULL, an empty array an
-- empty table as an empty object is; only an array at the top is marked
-- (json.array), so that a reader can tell it from an object. For a reader
-- that checks the shape of what it reads, taking M.NULL as absent, and
-- drops the nulls itself: cheaper than M.decode's passes. Returns the
-- value, or nil and cjson's message.
function M.decode_raw(s)
  local ok, value = pcall(cjson.decode, s)
  if not ok then
    return nil, (tostring(value):gsub("^.-: ", "", 1))
  end
  if value == cjson.null then
    return nil, "null where a value was expected"
  end
  if type(value) == "table" and s:find("^%s*%[") then
    return M.array(value)
  end
  return value
end

-- Decodes text: JSON null is nil, an empty array a json.array() (so it is
-- written back as []). Returns the value, or nil and cjson's message.
-- The common text (an object or array as RFC 8259 writes it) is read in
-- one pass in C (src/json_read.c), to the same value. Any other goes to
-- cjson, which decodes [] as it decodes {}, so each empty array outside a string
-- is first written as a value that can be told afterwards, and the decoded
-- tree walked (both in C, src/json_tree.c): as a stand-in of five values
-- that no document gpuledger reads holds, unless the text holds it; else,
-- or when cjson refuses the text, as a one-element array of a private-use
-- string, which gives the same value, and the messages of a text cjson
-- refuses.
function M.decode(s)
  local read = writer.read(s, ARRAY)
  if read ~= nil then
    return read
  end
  local quick = writer.mark_empty_arrays(s, "stand-in")
  local value = quick and M.decode_raw(quick)
  if value ~= nil then -- a document may be only false
    return writer.normalise(value, cjson.null, ARRAY, "stand-in")
  end
  local why
  value, why = M.decode_raw(writer.mark_empty_arrays(s, "mark"))
  if value == nil then
    return nil, why
  end
  return writer.normalise(value, cjson.null, ARRAY, "mark")
end

-- value as the integer it stands for when it is a float with a whole
-- value (lua-cjson decodes JSON's 4242 as the float 4242.0); any other
-- value as it is: a string too, "8" or "1e3" (a name, not a number).
function M.whole(value)
  return math.type(value) == "float" and math.tointeger(value) or value
end

-- The shortest text that reads back as the same finite number: integers
-- plain, floats as Go's strconv 'g' -1 writes them (98.5, 12, 15.5). Also
-- used for Prometheus sample values.
M.number_text = writer.number_text

-- Encodes value as compact JSON, or indented by the string `indent` per
-- level. omit: a set of object keys to leave out (default none). Tables
-- marked with json.array() are arrays, other tables with only the keys
-- 1..n (n > 0) arrays, the rest objects, their keys (as tostring writes
-- them) in sorted order, each key's value t[k] or t[tonumber(k)]. NaN,
-- the infinities and M.NULL (a null a list keeps in its place) are null. A table that contains itself, tables nested
-- more than 1000 deep and a value of another type (a function) are errors.
M.encode = writer.encode

return M
