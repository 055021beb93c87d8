-- `gpuledger snapshot`: this node's raw source answers as pretty JSON, the
-- file --replay reads back.
local cmd = require "gpuledger.cmd"
local json = require "gpuledger.json"

local M = {}

function M.run(core, config)
  local snap, why = cmd.snapshot(core, config)
  if not snap then
    return cmd.failure(why)
  end
  cmd.say(io.stdout, json.encode(snap, "  ") .. "\n")
  return 0
end

return M
