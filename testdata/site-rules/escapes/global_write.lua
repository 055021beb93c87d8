-- Tries to keep a global for the next refresh (line 4).
return { code = "global-write", level = "WARN",
  evaluate = function()
    seen_before = true
  end }
