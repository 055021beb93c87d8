-- Tries to run a command (line 4).
return { code = "os-execute", level = "WARN",
  evaluate = function()
    os.execute("touch /tmp/gpuledger-escaped")
  end }
