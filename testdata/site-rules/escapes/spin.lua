-- Never returns (line 4): the instruction budget stops it.
return { code = "spin", level = "WARN",
  evaluate = function()
    while true do end
  end }
