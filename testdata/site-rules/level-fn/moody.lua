-- A level function that raises (line 5): the rule's findings come out ERROR
-- and a rule-error says why.
return {
  code = "moody",
  level = function(policy) error("no mood today") end,
  evaluate = function(ledger, policy, emit)
    emit { message = "moody finding" }
  end,
}
