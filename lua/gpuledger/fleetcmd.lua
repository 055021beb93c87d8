-- `gpuledger fleet ls|check|serve` (SPEC §8, §6.3): find the nodes, read
-- every node's /ledger at once, reduce each ledger to its summary row (and,
-- for check and serve, judge it) the moment it arrives, then sum and render.
-- Every node is judged by the one judge (judge.lua) with the same rule set
-- and policy as `check`; the rules that see the whole fleet (evaluate_fleet)
-- then judge the summary. cli.lua passes the collector (collect/fleet.lua),
-- as it passes serve its snapshot.
local clock = require "gpuledger.clock"
local findings_mod = require "gpuledger.findings"
local fleet = require "gpuledger.fleet"
local html = require "gpuledger.render.html"
local judge_mod = require "gpuledger.judge"
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local serve = require "gpuledger.serve"
local table_render = require "gpuledger.render.table"
local text = require "gpuledger.text"

local M = {}

-- The judge of the fleet, from the rule set of config.site.rules and the
-- policy of config.policy (as `check`): node(ledger) → the node's findings,
-- fleet(summary) → the fleet rules' findings, and codes (for /metrics).
local function fleet_judge(core, config)
  local set = ruleset.load(core, config.site.rules)
  local policy = judge_mod.policy(set, config.policy)
  return {
    set = set,
    node = function(ledger)
      return judge_mod.judge(core, ledger, set, policy).findings
    end,
    fleet = function(summary)
      return judge_mod.fleet(core, fleet.view(summary), set, policy)
    end,
    codes = ruleset.codes(set, policy),
  }
end

-- Reads the targets' ledgers with collect (collect/fleet.lua) within timeout
-- seconds each; judge_node(ledger) → findings (nil: ls, no judging). Returns
-- the summary rows (in target order) and the findings of each row read.
function M.read(core, collect, targets, timeout, judge_node)
  local rows, node_findings, positions = {}, {}, {}
  for position, target in ipairs(targets) do
    positions[target] = position
    if target.error then
      rows[position] = fleet.unreachable_row(target, target.error)
    end
  end
  collect.read(core, targets, timeout, function(target, result)
    local ledger, why = fleet.answer_ledger(target.url, result, judge_node ~= nil)
    local row = ledger and fleet.node_row(target, ledger) or fleet.unreachable_row(target, why)
    rows[positions[target]] = row
    if ledger and judge_node then
      node_findings[row] = judge_node(ledger)
    end
  end)
  return rows, node_findings
end

-- One poll: discover, read, sum and (with a judge) judge. Returns at,
-- summary and (with a judge) the fleet's findings, worst first.
local function poll(core, collect, config, judge)
  local at = clock.format_time(core.now())
  local targets = collect.targets(core, config)
  local rows, node_findings = M.read(core, collect, targets, config.fleet.timeout, judge and judge.node)
  local summary = fleet.summarise(rows)
  if not judge then
    return at, summary
  end
  return at, summary, fleet.merge_findings(summary, node_findings, judge.fleet(summary))
end

local function say(s)
  io.stdout:write(s)
  io.stdout:flush()
end

local commands = {}

function commands.ls(core, collect, config)
  local at, summary = poll(core, collect, config, nil)
  say(config.json and render_json.fleet_ls(at, summary) or table_render.fleet_ls(summary))
  return 0
end

function commands.check(core, collect, config)
  local at, _, found = poll(core, collect, config, fleet_judge(core, config))
  local worst = findings_mod.worst(found)
  if config.json then
    say(render_json.fleet_check(at, found, worst))
  else
    say(table_render.check({ findings = found, counts = findings_mod.counts(found) }, config.output, true))
  end
  return findings_mod.exit_status(worst, config.exit_on)
end

local PLAIN = "text/plain; charset=utf-8"

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
    ["/style.css"] = serve.stylesheet(core),
    ["/fleet"] = { status = 200, content_type = "application/json", body = render_json.fleet(at, summary, found, worst) },
    ["/metrics"] = { status = 200, content_type = metrics.CONTENT_TYPE, body = metrics.fleet(summary, found, codes) },
    ["/healthz"] = healthz(summary),
  }
end

function commands.serve(core, collect, config)
  local judge = fleet_judge(core, config)
  local interval = config.serve.interval
  local function refresh()
    local ok, responses = xpcall(function()
      local at, summary, found = poll(core, collect, config, judge)
      return M.responses(core, at, summary, found, judge.codes,
        { interval = interval, grafana_url = config.serve.grafana_url })
    end, debug.traceback)
    if not ok then
      return serve.failed_responses(core, "fleet poll", tostring(responses), { "/", "/fleet", "/metrics" })
    end
    return responses
  end
  local function reload() -- SIGHUP: the site rules again, unless they are broken
    local fresh = fleet_judge(core, config)
    if #fresh.set.errors > 0 then
      io.stderr:write(string.format("gpuledger: SIGHUP: the rules in %s have %d error(s); keeping the last good rule set\n",
        config.site.rules, #fresh.set.errors))
      return
    end
    judge = fresh
  end
  return serve.listen_and_serve(core, config.serve.listen, interval, { "fleet serving", "poll" }, refresh, reload)
end

-- Runs `fleet <config.subcommand>` with core and collect (collect/fleet.lua);
-- returns the exit status.
function M.run(core, config, collect)
  return commands[config.subcommand](core, collect, config)
end

return M
