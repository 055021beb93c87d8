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

-- The renderers by format (config.format), each of the report (report.build).
M.RENDER = { text = table_render.report, json = render_json.report }

-- The report of Prometheus' answers over window, or nil and why.
local function built_report(core, config, window)
  local answers, problem = collect.query(core, config.report, window)
  if not answers then
    return nil, problem
  end
  return report.build(answers, window, clock.format_time(core.now()))
end

function M.run(core, config)
  local window, why = prometheus.window(config.report.since)
  if not window then
    return cmd.failure(why)
  end
  local built, problem = built_report(core, config, window)
  if not built then
    return cmd.failure(text.printable(problem))
  end
  collectgarbage("collect") -- the answers' samples are garbage now: not piled up with the output
  cmd.say(io.stdout, M.RENDER[config.format](built))
  return 0
end

return M
