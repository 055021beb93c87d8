-- A site rule with a syntax error: the closing parenthesis of evaluate's
-- parameter list is missing on line 7; Lua notices it on line 8.
return {
  code = "broken",
  level = "WARN",
  doc = "never loads",
  evaluate = function(ledger, policy, emit
    emit { message = "unreachable" }
  end,
}
