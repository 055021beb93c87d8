-- What the commands of cmd/ share (docs/architecture.md): their output, the
-- node they read (collected live, or --replay / --demo) and its report from
-- the judge. Each command is a module
-- cmd/<name>.lua whose run(core, config, commands) gives the exit status;
-- cli.lua only parses and dispatches.
local M = {}

-- Writes s to stream at once (a pipe reader sees every line as it is done).
function M.say(stream, s)
  stream:write(s)
  stream:flush()
end

-- Reports a failure of the command itself (not of a source) and gives its status.
function M.failure(why)
  M.say(io.stderr, "gpuledger: " .. why .. "\n")
  return 1
end

-- The snapshot to work on: --demo, --replay FILE, or this node now (kept:
-- what collect.node keeps across the collections of one serve, nil for
-- one). Returns it, or nil and why it could not be had.
function M.snapshot(core, config, kept)
  local snapshot = require "gpuledger.snapshot"
  local snap, why
  if config.input.demo then
    snap = snapshot.demo(core)
  elseif config.input.replay then
    snap, why = snapshot.load(core, config.input.replay)
  else
    snap = require("gpuledger.collect.node").collect(core, config, kept)
  end
  if snap and config.input.node_given then
    snap.node = config.node
  end
  return snap, why
end

-- The history as judge.judge takes it, for ls and check with --history:
-- read only, never written; nil without --history.
local function read_history(core, config)
  if not config.serve.history then
    return nil
  end
  local record, why = require("gpuledger.history").load(core, config.serve.history)
  return { record = record, error = why, max_gap = 3 * config.serve.interval }
end

-- This run's snapshot judged with the rule set of --rules (the rules give
-- each GPU its health, so ls judges too). Returns the report (judge.lua),
-- or nil and why the snapshot is missing.
function M.judged(core, config)
  local snap, why = M.snapshot(core, config)
  if not snap then
    return nil, why
  end
  -- --history is in live time: a replayed node is read as of now.
  if config.serve.history and (config.input.demo or config.input.replay) then
    snap.at = require("gpuledger.clock").format_time(core.now())
  end
  local sources = require("gpuledger.ruleset").read(core, config.site.rules)
  return require("gpuledger.judge").judge(core, snap, sources, config.policy, read_history(core, config))
end

-- This run's report (M.judged), printed by the renderer of config.format in
-- renderers (a command's RENDER table; isolated.render: in a child when
-- the scripts directory holds a script). Returns the report, or nil and the
-- command's exit status when the snapshot or the rendering failed.
function M.print_report(core, config, renderers)
  local report, why = M.judged(core, config)
  if not report then
    return nil, M.failure(why)
  end
  local out, bad = require("gpuledger.isolated").render(core, config.site.scripts, function()
    return renderers[config.format](report, config)
  end)
  if not out then
    return nil, M.failure("rendering: " .. bad)
  end
  M.say(io.stdout, out)
  return report
end

return M
