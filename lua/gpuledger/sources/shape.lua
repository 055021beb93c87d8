-- The shape of a source's answer, checked where it enters the ledger: a
-- field of the wrong JSON type (`Config.Env: -1`, `DeviceIDs: "GPU-x"`, a
-- GPU's cell as a number in a replayed snapshot) becomes a source error
-- naming the field, never an internal error further on. A shape is a type
-- name ("string", "number", "boolean"), {list = shape} (a JSON array of
-- them), {map = shape} (an object of them) or a table of field → shape (an
-- object with those fields). Every field may be absent.
local M = {}

local ARTICLE = { list = "a list", map = "an object", object = "an object" }

local function want_of(shape)
  if type(shape) == "string" then
    return "a " .. shape
  end
  return ARTICLE[shape.list and "list" or shape.map and "map" or "object"]
end

-- nil when value has the shape (or is nil), else "<path> is a <type>, want
-- <what>" for the first field that does not.
function M.check(value, shape, path)
  if value == nil then
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
    for i, item in ipairs(value) do
      local why = M.check(item, shape.list, string.format("%s[%d]", path, i))
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

-- Rows of cells as nvidia-smi's queries are kept in a snapshot.
M.ROWS = { rows = { list = { list = "string" } }, fields = { list = "string" }, error = "string" }

return M
