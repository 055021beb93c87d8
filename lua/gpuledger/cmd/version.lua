-- `gpuledger version` (and --version, -v): "gpuledger <version>".
local cmd = require "gpuledger.cmd"

local M = {}

function M.run(core)
  cmd.say(io.stdout, "gpuledger " .. core.version .. "\n")
  return 0
end

return M
