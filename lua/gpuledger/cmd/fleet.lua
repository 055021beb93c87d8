-- `gpuledger fleet ls|check|serve` (docs/contract.md#fleet): find the nodes, read
-- every node's /ledger at once, reduce each ledger to its summary row the
-- moment it arrives (and, for check and serve, give its tenants their
-- verdicts and keep it), then sum, judge and render. The nodes and the
-- fleet are judged together by the one judge (judge.rules) with the same
-- rule set and policy as `check`: each node's ledger by the rules that
-- judge a node, the summary by the rules that see the whole fleet
-- (evaluate_fleet), each site rule file in a child. collect/fleet.lua finds
-- and reads the nodes.
local clock = require "gpuledger.clock"
local collect = require "gpuledger.collect.fleet"
local findings_mod = require "gpuledger.findings"
local fleet = require "gpuledger.fleet"
local html = require "gpuledger.render.html"
local judge = require "gpuledger.judge"
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local server = require "gpuledger.server"
local table_render = require "gpuledger.render.table"
local text = require "gpuledger.text"

local M = {}

-- Reads the targets' ledgers (collect/fleet.lua) within timeout
-- seconds each; with judging true (check, serve) keeps each ledger read,
-- made readable for the rules and its tenants given their verdicts.
-- Returns the summary rows (in target order) and the ledger of each row
-- read (by row; empty without judging).
function M.read(core, targets, timeout, judging)
  local rows, ledgers, positions = {}, {}, {}
  for position, target in ipairs(targets) do
    positions[target] = position
    if target.error then
      rows[position] = fleet.unreachable_row(target, target.error)
    end
  end
  collect.read(core, targets, timeout, function(target, result)
    local ledger, why = fleet.answer_ledger(target.url, result, judging)
    local row = ledger and fleet.node_row(target, ledger) or fleet.unreachable_row(target, why)
    rows[positions[target]] = row
    if ledger and judging then
      ledgers[row] = judge.ledger_of(ledger)
    end
  end)
  return rows, ledgers
end

-- One poll: discover, read and sum; with rules (the rule set's sources,
-- ruleset.read) judge every node read and the fleet under config.policy.
-- Returns at, summary and, with rules, the fleet's findings (worst first)
-- and the set's codes with their levels (for /metrics).
local function poll(core, config, rules)
  local at = clock.format_time(core.now())
  local targets = collect.targets(core, config)
  local rows, ledgers = M.read(core, targets, config.fleet.timeout, rules ~= nil)
  local summary = fleet.summarise(rows)
  if not rules then
    return at, summary
  end
  local read, rows_read = {}, {}
  for _, row in ipairs(summary.nodes) do
    if ledgers[row] then
      read[#read + 1], rows_read[#rows_read + 1] = ledgers[row], row
    end
  end
  local set, found, fleet_found = judge.rules(core, rules, config.policy, read, { view = fleet.view(summary) })
  local node_findings = {}
  for i, row in ipairs(rows_read) do
    node_findings[row] = found[i]
  end
  return at, summary, fleet.merge_findings(summary, node_findings, fleet_found), ruleset.codes(set)
end

local function say(s)
  io.stdout:write(s)
  io.stdout:flush()
end

local commands = {}

function commands.ls(core, config)
  local at, summary = poll(core, config, nil)
  say(config.json and render_json.fleet_ls(at, summary) or table_render.fleet_ls(summary))
  return 0
end

function commands.check(core, config)
  local at, _, found = poll(core, config, ruleset.read(core, config.site.rules))
  local worst = findings_mod.worst(found)
  if config.json then
    say(render_json.fleet_check(at, found, worst))
  else
    say(table_render.check({ findings = found, counts = findings_mod.counts(found) }, config.output, true))
  end
  return findings_mod.exit_status(worst, config.exit_on)
end

local PLAIN = server.PLAIN

-- /healthz: 503 with "<node>: <error>" lines when no node could be read.
local function healthz(summary)
  if summary.total.unreachable < #summary.nodes then
    return { status = 200, content_type = PLAIN, body = "ok\n" }
  end
  local lines = {}
  for i, row in ipairs(summary.nodes) do
    lines[i] = text.printable(row.node .. ": " .. row.error)
  end
  return { status = 503, content_type = PLAIN, body = table.concat(lines, "\n") .. "\n" }
end

-- Every response of fleet serve for one poll. page: {interval,
-- grafana_url} of the fleet page.
function M.responses(core, at, summary, found, codes, page)
  local worst = findings_mod.worst(found)
  return {
    ["/"] = {
      status = 200, content_type = html.CONTENT_TYPE,
      body = html.fleet(summary, found, worst, {
        counts = findings_mod.counts(found), at = at, interval = page.interval, version = core.version,
        grafana_url = page.grafana_url,
      }),
    },
    ["/style.css"] = server.stylesheet(core),
    ["/fleet"] = { status = 200, content_type = "application/json", body = render_json.fleet(at, summary, found, worst) },
    ["/metrics"] = { status = 200, content_type = metrics.CONTENT_TYPE, body = metrics.fleet(summary, found, codes) },
    ["/healthz"] = healthz(summary),
  }
end

function commands.serve(core, config)
  local rules = ruleset.read(core, config.site.rules)
  local interval = config.serve.interval
  local function refresh()
    local ok, responses = xpcall(function()
      local at, summary, found, codes = poll(core, config, rules)
      return M.responses(core, at, summary, found, codes,
        { interval = interval, grafana_url = config.serve.grafana_url })
    end, debug.traceback)
    if not ok then
      return server.failed_responses(core, "fleet poll", tostring(responses), { "/", "/fleet", "/metrics" })
    end
    return responses
  end
  local function reload() -- SIGHUP: the site rules again, unless they are broken
    local fresh = ruleset.read(core, config.site.rules)
    local set = judge.rules(core, fresh, config.policy, {})
    if #set.errors > 0 then
      io.stderr:write(string.format("gpuledger: SIGHUP: the rules in %s have %d error(s); keeping the last good rule set\n",
        config.site.rules, #set.errors))
      return
    end
    rules = fresh
  end
  return server.serve(core, config.serve.listen, interval, { "fleet serving", "poll" }, { refresh = refresh, reload = reload })
end

-- Runs `fleet <config.subcommand>` with core, reading the nodes with
-- collect/fleet.lua; returns the exit status.
function M.run(core, config)
  return commands[config.subcommand](core, config)
end

return M
