-- The program: parses the command line and hands it to its command. Each
-- command of options.COMMANDS is a module cmd/<name>.lua whose
-- run(core, config, commands) gives the exit status (commands: the set of
-- command names, for help); what the commands share is cmd.lua. main()
-- returns the exit status; usage errors are 2 with one line on stderr.
local core = require "gpuledger.core"
local options = require "gpuledger.options"
local sandbox = require "gpuledger.sandbox"

local M = {}

local function say(stream, s)
  stream:write(s)
  stream:flush()
end

-- A site directory given on the command line or in the environment must
-- exist; the built-in default may be missing (no site files).
local function check_site_dir(site, name)
  local named = site[name .. "_named"]
  if named and core.stat(site[name]) ~= "dir" then
    return named .. ": no such directory"
  end
end

-- Runs the command `name` (of options.COMMANDS) with config; returns its
-- exit status.
local function run(name, config)
  local commands = {}
  for command in pairs(options.COMMANDS) do
    commands[command] = true
  end
  return require("gpuledger.cmd." .. name).run(core, config, commands)
end

-- Runs the command line args (argv without the program name); returns the
-- exit status. The host's entry point: it sets up the sandbox; site scripts
-- run only in the children of isolated.lua (judge.lua hands it the site's
-- rule files), never here.
function M.main(args)
  sandbox.setup()
  local opts, problem = options.parse(args, core.getenv)
  if not opts then
    if problem.help then
      return run("help", { topic = problem.topic })
    elseif problem.version then
      return run("version", {})
    end
    say(io.stderr, "gpuledger: " .. problem.message .. "\n")
    return 2
  end
  local config = options.config(opts, core.getenv, core.terminal_columns())
  local why = check_site_dir(config.site, "rules") or check_site_dir(config.site, "scripts")
  if why then
    say(io.stderr, "gpuledger: " .. why .. "\n")
    return 2
  end
  if config.node == "" then
    config.node = core.hostname() or ""
  end
  return run(config.command, config)
end

return M
