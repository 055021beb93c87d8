-- A site rule that grows its memory without bound: the rule memory budget
-- must stop it (line 9).
return {
  code = "hog",
  level = "WARN",
  doc = "allocates until stopped",
  evaluate = function()
    local s = "x"
    while true do s = s .. s end
  end,
}
