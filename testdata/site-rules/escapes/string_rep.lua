-- Asks for 1 GB at once: the memory budget refuses it (no line: Lua calls no
-- handler on a memory error; the file is named).
return { code = "string-rep", level = "WARN",
  evaluate = function()
    local s = string.rep("x", 1024 * 1024 * 1024)
  end }
