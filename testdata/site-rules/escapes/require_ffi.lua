-- Tries to load a C module (line 4).
return { code = "require-ffi", level = "WARN",
  evaluate = function()
    local ffi = require "ffi"
  end }
