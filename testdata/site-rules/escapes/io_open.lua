-- Tries to read a file (line 4).
return { code = "io-open", level = "WARN",
  evaluate = function()
    local f = io.open("/etc/passwd")
  end }
