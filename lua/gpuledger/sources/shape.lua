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

local M = {}

local NULL = cjson.null -- a JSON null as lua-cjson decodes it

local ARTICLE = { list = "a list", map = "an object", object = "an object" }

local function want_of(shape)
  if type(shape) == "string" then
    return "a " .. shape
  elseif shape.required then
    return want_of(shape.required)
  elseif shape.range then
    return string.format("a %snumber from %d to %d", shape.whole and "whole " or "", shape.range[1], shape.range[2])
  end
  return ARTICLE[shape.list and "list" or shape.map and "map" or "object"]
end

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

-- nil when the number value is within shape's range (and whole, if it must
-- be), else what is wrong with it (" is <value>, want <what>").
local function number_why(value, shape)
  local min, max = shape.range[1], shape.range[2]
  if value ~= value or value < min or value > max or (shape.whole and value ~= math.floor(value)) then
    return string.format(" is %.14g, want %s", value, want_of(shape))
  end
  return nil
end

-- The length of a table read as a JSON array, or nil when it has a key
-- that is not a whole number from 1 on (a JSON object).
local function list_length(value)
  local length = 0
  for key in pairs(value) do
    if math.type(key) ~= "integer" or key < 1 then
      return nil
    end
    length = math.max(length, key)
  end
  return length
end

-- The error for an answer of source (its name, or an engine and its
-- endpoint) that is not as it should be: "<source>: unexpected answer: <why>".
function M.unexpected(source, why)
  return string.format("%s: unexpected answer: %s", source, why)
end

local compile

-- The checker of a list's items of item_shape: as compile's, but a JSON
-- null (a hole ipairs would stop at, or lua-cjson's null) has no shape but
-- "any".
local function item_checker(item_shape)
  local check = compile(item_shape)
  if item_shape == "any" then
    return check
  end
  local null_why = " is null, want " .. want_of(item_shape)
  return function(item)
    if item == nil or item == NULL then
      return "", null_why
    end
    return check(item)
  end
end

-- The type names a shape can be (a field of one is checked in line: most
-- are, and a call for each costs more than the check).
local TYPES = { string = true, number = true, boolean = true, table = true }

-- What is wrong with value, no table (nor absent), where a table of want
-- belongs.
local function not_a_table(value, want)
  return string.format(" is a %s, want %s", type(value), want)
end

-- The fewest fields of an object shape whose values are first read by
-- their own fields (a record that has few of them, such as a /proc record,
-- is then checked in fewer steps); with fewer, each field of the shape is
-- looked up instead, which is as quick.
local MANY_FIELDS = 8

-- The checker (compile's) of a list, map or object shape. Each checks in
-- line what it can (a field or item absent or of its type name, a null
-- item) and calls another checker only for the rest.
local function table_checker(shape)
  local want = want_of(shape)
  if shape.list then
    local item_shape, max = shape.list, shape.max
    local check = compile(item_shape)
    local kind = TYPES[item_shape] and item_shape -- a list of such items: each one's type, in line
    local null_why = item_shape ~= "any" and " is null, want " .. want_of(item_shape) -- (item_checker's)
    return function(value)
      if value == nil or value == NULL then
        return nil
      elseif type(value) ~= "table" then
        return "", not_a_table(value, want)
      end
      local length = #value
      if next(value, length > 0 and length or nil) ~= nil then -- keys past 1..#value: a hole, or an object
        length = list_length(value)
        if not length then
          return "", " is an object, want a list"
        end
      end
      if max and length > max then
        return "", string.format(" has %d items, want at most %d", length, max)
      end
      if not null_why then
        return nil -- a list of anything, nulls too
      end
      for i = 1, length do
        local item = value[i]
        if not kind or type(item) ~= kind then
          local below, what
          if item == nil or item == NULL then
            below, what = "", null_why
          else
            below, what = check(item)
          end
          if below then
            return "[" .. i .. "]" .. below, what
          end
        end
      end
      return nil
    end
  elseif shape.map then
    local check = compile(shape.map)
    local kind = TYPES[shape.map] and shape.map
    return function(value)
      if value == nil or value == NULL then
        return nil
      elseif type(value) ~= "table" then
        return "", not_a_table(value, want)
      end
      for key, item in pairs(value) do
        if not kind or type(item) ~= kind then
          local below, what = check(item)
          if below then
            return "." .. tostring(key) .. below, what
          end
        end
      end
      return nil
    end
  end
  local keys, checks, kinds = {}, {}, {}
  local index, required = {}, {} -- each field's position; the required ones'
  for key, field in pairs(shape) do
    keys[#keys + 1], checks[#checks + 1] = key, compile(field)
    kinds[#kinds + 1] = TYPES[field] and field or false
    index[key] = #keys
    if type(field) == "table" and field.required then
      required[#required + 1] = key
    end
  end
  local count = #keys
  -- Whether value (a table) has the shape, read by its own fields: most
  -- records have fewer than the shape names. Not when it has more fields
  -- than the shape (an answer as the source gave it): nil, to be read by
  -- the shape's fields instead.
  local function fits(value)
    local seen = 0
    for key, field in next, value do
      seen = seen + 1
      if seen > count then
        return nil
      end
      local i = index[key]
      if i and type(field) ~= kinds[i] and checks[i](field) then
        return false
      end
    end
    for k = 1, #required do
      local field = value[required[k]]
      if field == nil or field == NULL then
        return false
      end
    end
    return true
  end
  return function(value)
    if value == nil or value == NULL then
      return nil
    elseif type(value) ~= "table" then
      return "", not_a_table(value, want)
    elseif count >= MANY_FIELDS and fits(value) then
      return nil
    end
    -- the first field of the shape's order that does not fit
    for i = 1, count do
      local field, kind = value[keys[i]], kinds[i]
      if not kind or (field ~= nil and type(field) ~= kind) then -- a field of a type name may be absent
        local below, what = checks[i](field)
        if below then
          return "." .. keys[i] .. below, what
        end
      end
    end
    return nil
  end
end

-- The checkers of compile by shape, each made once.
local CHECKERS = setmetatable({}, { __mode = "k" })

-- The checker of shape: a function of a value that returns nil when the
-- value has the shape (or is absent: nil, or lua-cjson's null), else where
-- the first field that does not is below the value ("" for the value
-- itself, ".a[2].b") and what is wrong with it (" is a <type>, want
-- <what>"). The path is put together only for that field, on the way out;
-- what does not depend on the value (the fields, their checkers, the
-- wording) is worked out here, once per shape.
compile = function(shape)
  if CHECKERS[shape] then
    return CHECKERS[shape]
  end
  local checker
  if shape == "any" then
    checker = function()
      return nil
    end
  elseif type(shape) == "string" then
    local want = want_of(shape)
    checker = function(value)
      if value == nil or value == NULL then
        return nil
      end
      local kind = type(value)
      if kind ~= shape then
        return "", string.format(" is a %s, want %s", kind, want)
      end
      return nil
    end
  elseif shape.required then
    local check, missing = compile(shape.required), " is missing, want " .. want_of(shape)
    checker = function(value)
      if value == nil or value == NULL then
        return "", missing
      end
      return check(value)
    end
  elseif shape.range then
    local want = want_of(shape)
    checker = function(value)
      if value == nil or value == NULL then
        return nil
      end
      local kind = type(value)
      if kind ~= "number" then
        return "", string.format(" is a %s, want %s", kind, want)
      end
      local why = number_why(value, shape)
      return why and "", why
    end
  else
    checker = table_checker(shape)
  end
  CHECKERS[shape] = checker
  return checker
end

-- nil when value has the shape (or is absent: nil, or lua-cjson's null),
-- else "<path> is a <type>, want <what>" for the first field that does not.
function M.check(value, shape, path)
  local below, what = compile(shape)(value)
  if below then
    return path .. below .. what
  end
  return nil
end

-- The items of a list (one that has the shape {list = "any"}: a JSON array
-- as decoded, its nulls holes in it) that have item_shape, and why each
-- other one does not ("<path>[i]…", a null too), so that one bad record
-- costs only itself; then the path of each kept one, by its place among
-- them (path_of(k): "<path>[i]"), written only when asked for.
function M.items(list, item_shape, path)
  local kept, whys, places = {}, {}, {}
  local check = item_checker(item_shape)
  for i = 1, list_length(list) do
    local below, what = check(list[i])
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

-- Rows of cells as nvidia-smi's queries are kept in a snapshot.
M.ROWS = { rows = { list = { list = "string" } }, fields = { list = "string" }, error = "string" }

return M
