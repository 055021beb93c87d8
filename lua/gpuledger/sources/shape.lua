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
local M = {}

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

-- What a failed check says: "<path> …" (fmt formatted with path and the
-- rest), or true when path is nil (only whether the value fits was asked,
-- so no text is built).
local function failure(path, fmt, ...)
  if path == nil then
    return true
  end
  return string.format(fmt, path, ...)
end

-- nil when the number value is within shape's range (and whole, if it must
-- be), else "<path> is <value>, want <what>" (true without a path).
local function number_why(value, shape, path)
  local min, max = shape.range[1], shape.range[2]
  if value ~= value or value < min or value > max or (shape.whole and value ~= math.floor(value)) then
    return failure(path, "%s is %.14g, want %s", value, want_of(shape))
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

local why_not

-- nil when the i-th item of list has item_shape, else why not, naming it
-- "<path>[i]" (true without a path); a JSON null (a hole ipairs would stop
-- at) has no shape but "any".
local function item_why(list, i, item_shape, path)
  local item_path = path and string.format("%s[%d]", path, i)
  if list[i] == nil and item_shape ~= "any" then
    return failure(item_path, "%s is null, want %s", want_of(item_shape))
  end
  return why_not(list[i], item_shape, item_path)
end

-- nil when value has the shape (or is nil), else "<path> is a <type>, want
-- <what>" for the first field that does not; true instead of the text when
-- path is nil.
why_not = function(value, shape, path)
  if shape == "any" then
    return nil
  elseif type(shape) == "table" and shape.required then
    if value == nil then
      return failure(path, "%s is missing, want %s", want_of(shape))
    end
    return why_not(value, shape.required, path)
  elseif value == nil then
    return nil
  end
  local kind = type(value)
  if type(shape) == "table" and shape.range then
    if kind ~= "number" then
      return failure(path, "%s is a %s, want %s", kind, want_of(shape))
    end
    return number_why(value, shape, path)
  elseif type(shape) == "string" or kind ~= "table" then
    if kind ~= shape then
      return failure(path, "%s is a %s, want %s", kind, want_of(shape))
    end
    return nil
  end
  if shape.list then
    local length = list_length(value)
    if not length then
      return failure(path, "%s is an object, want a list")
    elseif shape.max and length > shape.max then
      return failure(path, "%s has %d items, want at most %d", length, shape.max)
    end
    for i = 1, length do
      local why = item_why(value, i, shape.list, path)
      if why then
        return why
      end
    end
  elseif shape.map then
    for key, item in pairs(value) do
      local why = why_not(item, shape.map, path and path .. "." .. tostring(key))
      if why then
        return why
      end
    end
  else
    for key, field in pairs(shape) do
      local why = why_not(value[key], field, path and path .. "." .. key)
      if why then
        return why
      end
    end
  end
  return nil
end

-- nil when value has the shape (or is nil), else "<path> is a <type>, want
-- <what>" for the first field that does not. The paths are written only
-- for a value that does not fit.
function M.check(value, shape, path)
  if why_not(value, shape, nil) then
    return why_not(value, shape, path)
  end
  return nil
end

-- The items of a list (one that has the shape {list = "any"}: a JSON array
-- as decoded, its nulls holes in it) that have item_shape, and why each
-- other one does not ("<path>[i]…", a null too), so that one bad record
-- costs only itself; then each kept item's path ("<path>[i]").
function M.items(list, item_shape, path)
  local kept, whys, paths = {}, {}, {}
  for i = 1, list_length(list) do
    if item_why(list, i, item_shape, nil) then
      whys[#whys + 1] = item_why(list, i, item_shape, path)
    else
      kept[#kept + 1] = list[i]
      paths[#paths + 1] = string.format("%s[%d]", path, i)
    end
  end
  return kept, whys, paths
end

-- Rows of cells as nvidia-smi's queries are kept in a snapshot.
M.ROWS = { rows = { list = { list = "string" } }, fields = { list = "string" }, error = "string" }

return M
