-- A site rule whose evaluate never returns: the rule time budget must stop it
-- (the loop is on line 9).
return {
  code = "spin",
  level = "WARN",
  doc = "loops forever",
  evaluate = function()
    local n = 0
    while true do n = n + 1 end
  end,
}
