-- `gpuledger ls`: the ledger of this node (or --replay / --demo), judged
-- so that each GPU has its health, as a table or JSON; the source errors
-- follow the table on stderr. Exit 0 unless the snapshot or the rendering
-- failed.
local cmd = require "gpuledger.cmd"
local text = require "gpuledger.text"

local M = {}

-- The renderers by format (config.format), each of the report and config.
-- They are required where they run (isolated.render: perhaps the site's).
M.RENDER = {
  text = function(report, config)
    return require("gpuledger.render.table").ls(report.ledger, config.output)
  end,
  json = function(report)
    return require("gpuledger.render.json").ledger(report.ledger)
  end,
}

function M.run(core, config)
  local report, status = cmd.print_report(core, config, M.RENDER)
  if not report then
    return status
  elseif config.format == "json" then
    return 0
  end
  for _, err in ipairs(report.ledger.errors or {}) do
    cmd.say(io.stderr, "gpuledger: " .. text.printable(err) .. "\n")
  end
  return 0
end

return M
