-- Tries to turn off the count hook (line 4).
return { code = "debug-sethook", level = "WARN",
  evaluate = function()
    debug.sethook()
  end }
