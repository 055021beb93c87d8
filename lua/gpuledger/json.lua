-- JSON in and out. Decoding is lua-cjson's, with JSON null turned into nil
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

-- What an empty JSON array is decoded as before it is marked: cjson gives
-- [] and {} the same empty table, so each [] is first written as this
-- one-element array.
local EMPTY_ARRAY_MARK = "\u{F8FF}gpuledger-empty-array"
local EMPTY_ARRAY_TEXT = '["' .. EMPTY_ARRAY_MARK .. '"]'

-- s with each backslash and the character it escapes made two \1 bytes
-- (so that every quote left opens or closes a string); the same length.
local function unescaped(s)
  local parts, from = {}, 1
  local at = s:find("\\", 1, true)
  while at do
    parts[#parts + 1] = s:sub(from, at - 1) .. (at < #s and "\1\1" or "\1")
    from = at + 2
    at = s:find("\\", from, true)
  end
  parts[#parts + 1] = s:sub(from)
  return table.concat(parts)
end

-- s with every empty array outside a string written as EMPTY_ARRAY_TEXT.
-- Whether one is in a string is told by the number of quotes before it
-- (escaped ones aside), counted in C, not string by string: with a
-- one-character pattern, since a pattern such as '[^"]*"' walks the rest of
-- a text without a quote again from each of its characters (a tenth of a
-- second for serve's 90 KB of rendered pages, brought back from a child).
local function mark_empty_arrays(s)
  if not s:find("%[%s*%]") then
    return s
  end
  local plain = unescaped(s)
  local parts, from, counted, in_string = {}, 1, 1, false
  local open, close = plain:find("%[%s*%]")
  while open do
    local _, quotes = plain:sub(counted, open - 1):gsub('"', "")
    in_string = in_string ~= (quotes % 2 == 1)
    counted = open
    if not in_string then
      parts[#parts + 1] = s:sub(from, open - 1) .. EMPTY_ARRAY_TEXT
      from = close + 1
    end
    open, close = plain:find("%[%s*%]", close + 1)
  end
  parts[#parts + 1] = s:sub(from)
  return table.concat(parts)
end

-- True when v (a decoded table) is EMPTY_ARRAY_TEXT's.
local function is_mark(v)
  return #v == 1 and v[1] == EMPTY_ARRAY_MARK and next(v, next(v)) == nil
end

-- What stands for an empty array in M.decode's quick way: JSON with no
-- quote or backslash (so that it can stand inside a string as well) and
-- no "[]", whose value no document gpuledger reads holds.
local STAND_IN_TEXT = "[true,null,false,null,true]"

-- True when v (a decoded table) is STAND_IN_TEXT's.
local function is_stand_in(v)
  return v[1] == true and v[2] == cjson.null and v[3] == false and v[4] == cjson.null and v[5] == true
    and next(v, 5) == nil
end

-- Turns JSON null into nil and each table that is_empty (is_mark or
-- is_stand_in) into a json.array(), in value. Returns value and how many
-- empty arrays it made.
local function normalise(value, is_empty)
  if type(value) ~= "table" then
    return value, 0
  end
  if is_empty(value) then
    return M.array(), 1
  end
  local made = 0
  local function walk(t)
    for k, v in pairs(t) do
      if v == cjson.null then
        t[k] = nil
      elseif type(v) == "table" then -- a string, number or boolean has nothing in it
        if is_empty(v) then
          t[k] = M.array()
          made = made + 1
        else
          walk(v)
        end
      end
    end
  end
  walk(value)
  return value, made
end

-- s with every "[]" written as STAND_IN_TEXT, and how many there were; nil
-- when that would not say where the empty arrays are: an empty array with
-- white space in it, or STAND_IN_TEXT in s already. A "[]" in a string is
-- told afterwards (fewer stand-ins decoded than written). Plain searches
-- only: Lua's patterns cost a walk through s each.
local function stand_ins(s)
  if s:find(STAND_IN_TEXT, 1, true) then
    return nil
  end
  for _, blank in ipairs { " ", "\n", "\r", "\t", "\v", "\f" } do
    if s:find("[" .. blank, 1, true) then
      return nil
    end
  end
  local parts, from, count = {}, 1, 0
  local at = s:find("[]", 1, true)
  while at do
    parts[#parts + 1] = s:sub(from, at - 1)
    parts[#parts + 1] = STAND_IN_TEXT
    count = count + 1
    from = at + 2
    at = s:find("[]", from, true)
  end
  parts[#parts + 1] = s:sub(from)
  return table.concat(parts), count
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
-- written back as []). Returns the value, or nil and cjson's message. The
-- quick way (stand_ins) is taken when it can tell every empty array; the
-- other way (mark_empty_arrays: where the quotes are) gives the same value,
-- and the messages of a text cjson refuses.
function M.decode(s)
  local quick, count = stand_ins(s)
  if quick then
    local value = M.decode_raw(quick)
    if value ~= nil then -- a document may be only false
      local made
      value, made = normalise(value, is_stand_in)
      if made == count then
        return value
      end
    end
  end
  local value, why = M.decode_raw(mark_empty_arrays(s))
  if value == nil then
    return nil, why
  end
  return (normalise(value, is_mark))
end

-- The shortest text that reads back as the same finite number: integers
-- plain, floats as Go's strconv 'g' -1 writes them (98.5, 12, 15.5). Also
-- used for Prometheus sample values.
M.number_text = writer.number_text

-- Encodes value as compact JSON, or indented by the string `indent` per
-- level. omit: a set of object keys to leave out (default none). Tables
-- marked with json.array() are arrays, other tables with only the keys
-- 1..n (n > 0) arrays, the rest objects, their keys (as tostring writes
-- them) in sorted order, each key's value t[k] or t[tonumber(k)]. NaN and
-- the infinities are null. A table that contains itself, tables nested
-- more than 1000 deep and a value of another type (a function) are errors.
M.encode = writer.encode

return M
