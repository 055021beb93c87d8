-- The shape of a source's answer, checked where it enters the ledger: a
-- field of the wrong JSON type (`Config.Env: -1`, `DeviceIDs: "GPU-x"`, a
-- GPU's cell as a number in a replayed snapshot) becomes a source error
-- naming the field, never an internal error further on. A shape is a type
-- name ("string", "number", "boolean", "table"), {list = shape} (a JSON
-- array of them, without a null), {map = shape} (an object of them),
-- M.required(shape) (a field that must be there) or a table of field →
-- shape (an object with those fields). Other fields may be absent.
local M = {}

local ARTICLE = { list = "a list", map = "an object", object = "an object" }

local function want_of(shape)
  if type(shape) == "string" then
    return "a " .. shape
  elseif shape.required then
    return want_of(shape.required)
  end
  return ARTICLE[shape.list and "list" or shape.map and "map" or "object"]
end

-- The shape of a field that must be present, of shape.
function M.required(shape)
  return { required = shape }
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

-- nil when value has the shape (or is nil), else "<path> is a <type>, want
-- <what>" for the first field that does not.
function M.check(value, shape, path)
  if type(shape) == "table" and shape.required then
    if value == nil then
      return string.format("%s is missing, want %s", path, want_of(shape))
    end
    return M.check(value, shape.required, path)
  elseif value == nil then
    return nil
  end
  local kind = type(value)
  if type(shape) == "string" or kind ~= "table" then
    if kind ~= shape then
      return string.format("%s is a %s, want %s", path, kind, want_of(shape))
    end
    return nil
  end
  if shape.list then
    local length = list_length(value)
    if not length then
      return string.format("%s is an object, want a list", path)
    end
    for i = 1, length do
      local item_path = string.format("%s[%d]", path, i)
      if value[i] == nil then -- a JSON null: a hole ipairs would stop at
        return string.format("%s is null, want %s", item_path, want_of(shape.list))
      end
      local why = M.check(value[i], shape.list, item_path)
      if why then
        return why
      end
    end
  elseif shape.map then
    for key, item in pairs(value) do
      local why = M.check(item, shape.map, path .. "." .. tostring(key))
      if why then
        return why
      end
    end
  else
    for key, field in pairs(shape) do
      local why = M.check(value[key], field, path .. "." .. key)
      if why then
        return why
      end
    end
  end
  return nil
end

-- The items of a list (one that has the shape {list = "table"}) that have
-- item_shape, and why each other one does not ("<path>[i]…"), so that one
-- bad record costs only itself.
function M.items(list, item_shape, path)
  local kept, whys = {}, {}
  for i, item in ipairs(list) do
    local why = M.check(item, item_shape, string.format("%s[%d]", path, i))
    if why then
      whys[#whys + 1] = why
    else
      kept[#kept + 1] = item
    end
  end
  return kept, whys
end

-- Rows of cells as nvidia-smi's queries are kept in a snapshot.
M.ROWS = { rows = { list = { list = "string" } }, fields = { list = "string" }, error = "string" }

return M
