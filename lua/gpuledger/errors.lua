-- Errors as values: a rule's error is a table {file, line, message} from
-- where it is raised (core.call_limited's message handler, or load) to
-- where it is shown, so that the whole file name reaches the user however
-- long it is (Lua's own messages shorten it past LUA_IDSIZE).
local M = {}

-- An error: file and line may be nil (not known, or not at a line).
function M.new(file, line, message)
  return { file = file, line = line, message = message }
end

-- The error core.call_limited gave back: its table, or a string (Lua's
-- "not enough memory") as a message. file, when given, names the file of
-- an error raised at no line.
function M.of_call(err, file)
  if type(err) ~= "table" then
    return M.new(file, nil, tostring(err))
  end
  return M.new(err.file or file, err.line, err.message)
end

-- The error of load(text, chunkname) failing with message: Lua starts it
-- with the chunk's short name and the line, which this takes off by
-- comparing with that name, giving back the whole file name.
function M.of_load(message, chunkname, file)
  local short = debug.getinfo(assert(load("", chunkname)), "S").short_src
  local prefix = short .. ":"
  if message:sub(1, #prefix) == prefix then
    local line, rest = message:match("^(%d+): (.*)$", #prefix + 1)
    if line then
      return M.new(file, math.tointeger(tonumber(line)), rest)
    end
  end
  return M.new(file, nil, message)
end

-- How people read an error: "file:line: message", "file: message" or the
-- message alone. A string is shown as it is.
function M.text(err)
  if type(err) ~= "table" then
    return tostring(err)
  elseif err.file and err.line then
    return string.format("%s:%d: %s", err.file, err.line, err.message)
  elseif err.file then
    return string.format("%s: %s", err.file, err.message)
  end
  return err.message
end

return M
