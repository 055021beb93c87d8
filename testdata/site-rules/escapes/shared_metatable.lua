-- Tries to replace the metatable of the shared ledger (line 4).
return { code = "shared-metatable", level = "WARN",
  evaluate = function(ledger)
    setmetatable(ledger, {})
  end }
