-- Tries to change what the next rule sees (line 4).
return { code = "ledger-write", level = "WARN",
  evaluate = function(ledger)
    ledger.entries[1].state = "free"
  end }
