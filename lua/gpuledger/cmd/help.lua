-- `gpuledger help [COMMAND]` (and -h, --help): the usage text on stdout,
-- listing only the commands this version has.
local cmd = require "gpuledger.cmd"
local options = require "gpuledger.options"

local M = {}

-- config.topic: the command (or fleet sub-command, `fleet check`) asked
-- about, or nil; commands: the set of
-- commands this version has (cli.lua).
function M.run(_, config, commands)
  cmd.say(io.stdout, options.usage(commands, config.topic))
  return 0
end

return M
