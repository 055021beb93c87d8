-- A site rule that loads fine and raises when it is evaluated (line 8).
return {
  code = "raiser",
  level = "BAD",
  doc = "raises at evaluate",
  evaluate = function(ledger)
    local count = #ledger.entries
    error("boom after " .. count .. " entries")
  end,
}
