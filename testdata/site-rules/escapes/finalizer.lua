-- Tries to leave a finalizer that runs outside the budget (line 4).
return { code = "finalizer", level = "WARN",
  evaluate = function()
    setmetatable({}, { __gc = function() while true do end end })
  end }
