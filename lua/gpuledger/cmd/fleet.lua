-- `gpuledger fleet ls|check|serve` (docs/contract.md#fleet): find the nodes, read
-- every node's /ledger at once, reduce each ledger to its summary row the
-- moment it arrives and judge it (judge.fleet_judging: the embedded rules
-- then, the site's files at the end), then sum, judge the fleet and render.
-- The nodes and the fleet are judged by the one judge (judge.fleet) with the same
-- rule set and policy as `check`: each node's ledger by the rules that
-- judge a node, the summary by the rules that see the whole fleet
-- (evaluate_fleet), each site rule file in a child. collect/fleet.lua finds
-- and reads the nodes. fleet serve reloads its rule set on SIGHUP as serve
-- does (served_rules.lua).
local clock = require "gpuledger.clock"
local cmd = require "gpuledger.cmd"
local collect = require "gpuledger.collect.fleet"
local findings = require "gpuledger.findings"
local fleet = require "gpuledger.fleet"
local html = require "gpuledger.render.html"
local judge = require "gpuledger.judge"
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local served_rules = require "gpuledger.served_rules"
local server = require "gpuledger.server"
local table_render = require "gpuledger.render.table"
local text = require "gpuledger.text"

local M = {}

-- Reads the targets' ledgers (collect/fleet.lua) as how says (timeout,
-- ca_cert, username, password: collect/fleet.lua's read), giving each
-- ledger read, built (judge.ledger_of), to judging's node as it arrives
-- (judge.fleet_judging). Returns the summary rows, in target order.
function M.read(core, targets, how, judging)
  local rows, positions = {}, {}
  for position, target in ipairs(targets) do
    positions[target] = position
    if target.error then
      rows[position] = fleet.unreachable_row(target, target.error)
    end
  end
  collect.read(core, targets, how, function(target, result)
    local ledger, why = fleet.answer_ledger(target.url, result, true)
    local row = ledger and fleet.node_row(target, ledger) or fleet.unreachable_row(target, why)
    rows[positions[target]] = row
    if ledger then
      judging.node(row, judge.ledger_of(ledger))
    end
  end)
  return rows
end

-- One poll: discover, read, sum and judge by the rule set of sources
-- (ruleset.read) under config.policy, extra_errors among the set's errors.
-- Returns at (RFC 3339) and the fleet's report (judge.fleet, keeping what
-- keep says of each node's findings: judge.fleet_judging).
local function judged_poll(core, config, sources, extra_errors, keep)
  local at = clock.format_time(core.now())
  local judging = judge.fleet_judging(core, sources, config.policy, keep)
  local rows = M.read(core, collect.targets(core, config), config.fleet, judging)
  return at, judge.fleet(judging, fleet.summarise(rows), extra_errors)
end

local commands = {}

-- The renderers of `fleet ls` by format (config.format), each of at, the
-- summary judged (its rows with their verdicts, worst first) and config.
M.RENDER_LS = {
  text = function(_, summary, config)
    return table_render.fleet_ls(summary, config.output)
  end,
  json = render_json.fleet_ls,
}

-- The renderers of `fleet check` by format (config.format), each of at, the
-- fleet's report (judge.fleet, keeping CHECK_KEEPS of each node's findings)
-- and config.
M.RENDER_CHECK = {
  text = function(_, report, config)
    return table_render.check(report, config.output, true)
  end,
  json = render_json.fleet_check,
}

-- What `fleet check --json` keeps of a node's findings (judge.fleet_judging's
-- keep), written once the node is judged: {levels = their JSON text by level
-- (render_json.finding_levels)}, all that render_json.fleet_check reads.
function M.keep_text(list)
  return { levels = render_json.finding_levels(list) }
end

-- What `fleet serve` keeps of the findings of row (nil for the fleet
-- rules'): M.keep_text's, and what its page and /metrics count them by
-- (fleet.digest). Holding the fleet's findings as tables until the poll is
-- rendered doubled the heap the collector walks at each of its cycles.
function M.keep_for_serving(list, row)
  local kept = fleet.digest(list, row)
  kept.levels = render_json.finding_levels(list)
  return kept
end

-- What `fleet check` keeps of each node's findings by format: the tables
-- for the text, their text for the JSON answer.
local CHECK_KEEPS = { text = "findings", json = M.keep_text }

-- The renderers of `fleet check --summary` by format (config.format), each
-- of at, the fleet's report and config: its findings grouped by level and
-- code (fleet.group_findings).
M.RENDER_SUMMARY = {
  text = function(_, report, config)
    return table_render.fleet_summary(fleet.group_findings(report.findings), report.findings, report.counts,
      config.output)
  end,
  json = function(at, report)
    return render_json.fleet_summary(at, fleet.group_findings(report.findings), report.worst)
  end,
}

-- fleet ls judges the nodes as fleet check does, for each node's worst
-- level and its BAD and ERROR counts, and the order worst first; it keeps
-- no finding.
function commands.ls(core, config)
  local at, report = judged_poll(core, config, ruleset.read(core, config.site.rules), nil, "verdicts")
  cmd.say(io.stdout, M.RENDER_LS[config.format](at, report.summary, config))
  return 0
end

function commands.check(core, config)
  local grouped = config.fleet.summary
  local at, report = judged_poll(core, config, ruleset.read(core, config.site.rules), nil,
    not grouped and CHECK_KEEPS[config.format] or "findings")
  local render = grouped and M.RENDER_SUMMARY or M.RENDER_CHECK
  cmd.say(io.stdout, render[config.format](at, report, config))
  return findings.exit_status(report.worst, config.exit_on)
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

-- Every response of fleet serve for one poll made at `at`, from the fleet's
-- report (judge.fleet, keeping M.keep_for_serving of each node's findings).
-- page: {interval, grafana_url, nomad_ui_url} of the fleet page.
function M.responses(core, at, report, page)
  local summary = report.summary
  local groups, counts = fleet.group_kept(summary, report.kept, report.fleet_kept, html.GROUP_FINDINGS_SHOWN)
  return {
    ["/"] = {
      status = 200, content_type = html.CONTENT_TYPE,
      body = html.fleet(summary, groups, report.worst, {
        counts = counts, at = at, interval = page.interval, version = core.version,
        grafana_url = page.grafana_url, nomad_ui_url = page.nomad_ui_url,
      }),
    },
    ["/style.css"] = server.stylesheet(core),
    ["/fleet"] = { status = 200, content_type = "application/json", body = render_json.fleet(at, report) },
    ["/metrics"] = { status = 200, content_type = metrics.CONTENT_TYPE, body = metrics.fleet(summary, groups, report.codes) },
    ["/healthz"] = healthz(summary),
  }
end

function commands.serve(core, config)
  local rules = served_rules.load(core, config.site.rules, config.policy)
  local interval = config.serve.interval
  local function refresh()
    local ok, responses = xpcall(function()
      local at, report = judged_poll(core, config, rules.sources, rules.refused(), M.keep_for_serving)
      return M.responses(core, at, report, {
        interval = interval, grafana_url = config.serve.grafana_url, nomad_ui_url = config.serve.nomad_ui_url,
      })
    end, debug.traceback)
    if not ok then
      return server.failed_responses(core, "fleet poll", tostring(responses), { "/", "/fleet", "/metrics" })
    end
    return responses
  end
  return server.serve(core, config.serve, interval, { "fleet serving", "poll" },
    { refresh = refresh, reload = rules.reload })
end

-- The user and password of a --fleet-basic-auth-file: its first line,
-- "user:password". Returns them, or nil and why (never the password).
local function basic_auth(core, path)
  local file, why = core.read_file(path, 4096)
  if not file then
    return nil, why
  end
  local user, password = (file:match("^[^\r\n]*") or ""):match("^([^:]+):(.+)$")
  if not user then
    return nil, "want one line, user:password"
  end
  return user, password
end

-- Runs `fleet <config.subcommand>` with core, reading the nodes with
-- collect/fleet.lua; returns the exit status (2 for a
-- --fleet-basic-auth-file that cannot be read).
function M.run(core, config)
  local path = config.fleet.basic_auth_file
  if path then
    local user, password = basic_auth(core, path)
    if not user then
      server.warn(string.format("--fleet-basic-auth-file %s: %s", path, password))
      return 2
    end
    config.fleet.username, config.fleet.password = user, password
  end
  return commands[config.subcommand](core, config)
end

return M
