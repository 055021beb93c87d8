-- `gpuledger check`: this node (or --replay / --demo) judged by the rule
-- set, its findings worst first as a table or JSON; the exit status says
-- the worst level, per --exit-on.
local cmd = require "gpuledger.cmd"
local findings = require "gpuledger.findings"

local M = {}

-- The renderers by format (config.format), each of the report and config.
-- They are required where they run (isolated.render: perhaps the site's).
M.RENDER = {
  text = function(report, config)
    return require("gpuledger.render.table").check(report, config.output)
  end,
  json = function(report)
    return require("gpuledger.render.json").findings(report)
  end,
}

function M.run(core, config)
  local report, status = cmd.print_report(core, config, M.RENDER)
  if not report then
    return status
  end
  return findings.exit_status(report.worst, config.exit_on)
end

return M
