-- The program: reads the command line, gets a snapshot (collected live, or
-- from --replay / --demo), builds the ledger, judges it and prints. main()
-- returns the exit status; usage errors are 2 with one line on stderr.
local core = require "gpuledger.core"
local json = require "gpuledger.json"
local options = require "gpuledger.options"
local sandbox = require "gpuledger.sandbox"

local M = {}

local function say(stream, s)
  stream:write(s)
  stream:flush()
end

local function usage_error(message)
  say(io.stderr, "gpuledger: " .. message .. "\n")
  return 2
end

-- Reports a failure of the command itself (not of a source) and gives its status.
local function failure(why)
  say(io.stderr, "gpuledger: " .. why .. "\n")
  return 1
end

-- A site directory given on the command line or in the environment must
-- exist; the built-in default may be missing (no site files).
local function check_site_dir(site, name)
  if site[name .. "_named"] and core.stat(site[name]) ~= "dir" then
    return string.format("--%s %s: no such directory", name, site[name])
  end
end

-- The snapshot to work on: --demo, --replay FILE, or this node now.
local function get_snapshot(config)
  local snapshot = require "gpuledger.snapshot"
  local snap, why
  if config.input.demo then
    snap = snapshot.demo(core)
  elseif config.input.replay then
    snap, why = snapshot.load(core, config.input.replay)
  else
    snap = require("gpuledger.collect.node").collect(core, config)
  end
  if snap and config.input.node_given then
    snap.node = config.node
  end
  return snap, why
end

-- The history as judge.judge takes it, for ls and check with --history:
-- read only, never written; nil without --history.
local function read_history(config)
  if not config.serve.history then
    return nil
  end
  local record, why = require("gpuledger.history").load(core, config.serve.history)
  return { record = record, error = why, max_gap = 3 * config.serve.interval }
end

-- Judges this run's snapshot: with the rule set (check) or without (ls).
-- Returns the report (judge.lua), or nil and why the snapshot is missing.
local function judged(config, with_rules)
  local snap, why = get_snapshot(config)
  if not snap then
    return nil, why
  end
  -- --history is in live time: a replayed node is read as of now.
  if config.serve.history and (config.input.demo or config.input.replay) then
    snap.at = require("gpuledger.clock").format_time(core.now())
  end
  local sources = with_rules and require("gpuledger.ruleset").read(core, config.site.rules) or nil
  return require("gpuledger.judge").judge(core, snap, sources, config.policy, read_history(config))
end

-- Renders with render() (isolated.render: in a child when there is a scripts
-- directory) and prints the result; returns nil, or why it could not render.
local function print_rendered(config, render)
  local out, why = require("gpuledger.isolated").render(core, config.site.scripts, render)
  if not out then
    return "rendering: " .. why
  end
  say(io.stdout, out)
end

local commands = {}

function commands.ls(config)
  local report, why = judged(config, true) -- the rules give each GPU its health
  if not report then
    return failure(why)
  end
  local ledger = report.ledger
  local bad_render = print_rendered(config, function()
    if config.json then
      return require("gpuledger.render.json").ledger(ledger)
    end
    return require("gpuledger.render.table").ls(ledger, config.output)
  end)
  if bad_render then
    return failure(bad_render)
  elseif config.json then
    return 0
  end
  for _, err in ipairs(ledger.errors or {}) do
    say(io.stderr, "gpuledger: " .. require("gpuledger.text").printable(err) .. "\n")
  end
  return 0
end

function commands.check(config)
  local report, why = judged(config, true)
  if not report then
    return failure(why)
  end
  local bad_render = print_rendered(config, function()
    if config.json then
      return require("gpuledger.render.json").findings(report)
    end
    return require("gpuledger.render.table").check(report, config.output)
  end)
  if bad_render then
    return failure(bad_render)
  end
  return require("gpuledger.findings").exit_status(report.worst, config.exit_on)
end

function commands.snapshot(config)
  local snap, why = get_snapshot(config)
  if not snap then
    return failure(why)
  end
  say(io.stdout, json.encode(snap, "  ") .. "\n")
  return 0
end

function commands.rules(config)
  return require("gpuledger.rulescmd").run(core, config)
end

-- serve: gpuledger.serve runs it, getting each refresh's snapshot here.
function commands.serve(config)
  return require("gpuledger.serve").run(core, config, get_snapshot)
end

-- fleet: gpuledger.fleetcmd runs it, reading the nodes with collect/fleet.lua.
function commands.fleet(config)
  return require("gpuledger.fleetcmd").run(core, config, require "gpuledger.collect.fleet")
end

-- report: --since is checked before any request; any failure of
-- Prometheus is one line and exit 1.
function commands.report(config)
  local prometheus = require "gpuledger.sources.prometheus"
  local report = require "gpuledger.report"
  local window, why = prometheus.window(config.report.since)
  if not window then
    return failure(why)
  end
  local answers, problem = require("gpuledger.collect.prometheus").query(core, config.report, window)
  if not answers then
    return failure(require("gpuledger.text").printable(problem))
  end
  local built = report.build(answers, window, require("gpuledger.clock").format_time(core.now()))
  say(io.stdout, config.json and report.json(built) or report.text(built))
  return 0
end

function commands.version()
  say(io.stdout, "gpuledger " .. core.version .. "\n")
  return 0
end

-- The set of commands this version has (those of `commands`).
local function available()
  local set = {}
  for name in pairs(commands) do
    set[name] = true
  end
  return set
end

function commands.help(config)
  say(io.stdout, options.usage(available(), config.topic))
  return 0
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
      local topic = problem.command ~= "help" and available()[problem.command] and problem.command or nil
      say(io.stdout, options.usage(available(), topic))
      return 0
    elseif problem.version then
      return commands.version()
    end
    return usage_error(problem.message)
  end
  local config = options.config(opts, core.getenv, core.terminal_columns())
  local why = check_site_dir(config.site, "rules") or check_site_dir(config.site, "scripts")
  if why then
    return usage_error(why)
  end
  if config.node == "" then
    config.node = core.hostname() or ""
  end
  local command = commands[config.command]
  if not command then
    say(io.stderr, string.format("gpuledger: %s is not available in this version of gpuledger yet\n", config.command))
    return 1
  end
  return command(config)
end

return M
