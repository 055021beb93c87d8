-- `gpuledger report`: GPU-hours per job, per node and state, and per tenant
-- used without a reservation over --since, from Prometheus. --since is
-- checked before any request; any failure of Prometheus is one line and
-- exit 1.
local clock = require "gpuledger.clock"
local cmd = require "gpuledger.cmd"
local collect = require "gpuledger.collect.prometheus"
local prometheus = require "gpuledger.sources.prometheus"
local render_json = require "gpuledger.render.json"
local report = require "gpuledger.report"
local table_render = require "gpuledger.render.table"
local text = require "gpuledger.text"

local M = {}

-- Writes part to stdout: the writers' write.
local function to_stdout(part)
  io.stdout:write(part)
end

-- The writers by format (config.format), each of the report
-- (report.builder's) to stdout, in parts as it is made.
M.WRITE = {
  text = function(built)
    table_render.write_report(built, to_stdout)
    io.stdout:flush()
  end,
  json = function(built)
    render_json.write_report(built, to_stdout)
    io.stdout:flush()
  end,
}

-- The report of Prometheus' answers over window, each sample counted as it
-- is read, or nil and why.
local function built_report(core, config, window)
  local builder = report.builder()
  local asked, problem = collect.query(core, config.report, window, builder.add)
  if not asked then
    return nil, problem
  end
  return builder.report(window, clock.format_time(core.now()))
end

-- How far the heap may grow past what was live before Lua's collector
-- starts its next cycle, in percent: while an answer is read, what is live
-- is its text and the report's entries, and each series read leaves a few
-- small tables behind; at Lua's default (200: the heap doubles) those pile
-- up to as much again. At 120 they stay within a fifth of it, in a number
-- of cycles that does not grow with the answer.
local GC_PAUSE = 120

function M.run(core, config)
  collectgarbage("incremental", GC_PAUSE)
  local window, why = prometheus.window(config.report.since)
  if not window then
    return cmd.failure(why)
  end
  local built, problem = built_report(core, config, window)
  if not built then
    return cmd.failure(text.printable(problem))
  end
  collectgarbage("collect") -- the tallies' indexes are garbage now: not piled up with the output
  M.WRITE[config.format](built)
  return 0
end

return M
