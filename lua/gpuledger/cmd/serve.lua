-- `gpuledger serve` (docs/contract.md#http): the node agent. Each
-- refresh, on the main thread, reads the node (or --replay / --demo),
-- builds the ledger, records it in the history, judges it and
-- renders every response once; core.serve swaps the set in whole and
-- answers requests from it on its own threads. SIGHUP reloads the site
-- rules, keeping the last good set when the new one has errors (which then
-- show as rule-error findings until a good reload); SIGTERM/SIGINT stop
-- it, and the history is saved once more. A source that starts failing,
-- and one read again, is one line on stderr.
local clock = require "gpuledger.clock"
local cmd = require "gpuledger.cmd"
local history = require "gpuledger.history"
local judge = require "gpuledger.judge"
local isolated = require "gpuledger.isolated"
local served_rules = require "gpuledger.served_rules"
local server = require "gpuledger.server"
local snapshot = require "gpuledger.snapshot"
local text = require "gpuledger.text"

local M = {}

local PLAIN = server.PLAIN
local JSON = "application/json"
local warn = server.warn

-- The /healthz response: 200 "ok", or 503 with the source errors; either
-- way followed by the rule errors ("rule-error: …", a refused reload's
-- too), which leave serve healthy (it judges with the rules that loaded).
local function healthz(report)
  local lines = {}
  for _, err in ipairs(report.ledger.errors or {}) do
    lines[#lines + 1] = text.printable(err)
  end
  local status = #lines > 0 and 503 or 200
  if status == 200 then
    lines[1] = "ok"
  end
  for _, finding in ipairs(report.findings) do
    if finding.code == "rule-error" then
      lines[#lines + 1] = "rule-error: " .. text.printable(finding.message)
    end
  end
  return { status = status, content_type = PLAIN, body = table.concat(lines, "\n") .. "\n" }
end

-- Watches the sources refresh after refresh: says on stderr, once, when a
-- source starts failing and when it is read again, so that the journal
-- tells the story without a line per refresh. Returns a function of the
-- refresh's snapshot, or nil and why the snapshot itself (the --replay
-- file) could not be had, which it calls "input".
local function source_watch()
  local failing = {}
  return function(snap, why)
    local now = {}
    if why then
      for name, err in pairs(failing) do -- the other sources were not asked: as they were
        now[name] = err
      end
      now.input = why
    else
      for name, source in pairs(snap.sources or {}) do
        if type(source) == "table" and source.ok == false then
          now[name] = source.error or "failed"
        end
      end
    end
    local names = {}
    for name in pairs(now) do
      names[#names + 1] = name
    end
    for name in pairs(failing) do
      names[#names + 1] = not now[name] and name or nil
    end
    table.sort(names)
    for _, name in ipairs(names) do
      if now[name] and not failing[name] then
        warn(string.format("source %s failing: %s", name, now[name]))
      elseif failing[name] and not now[name] then
        warn(string.format("source %s read again", name))
      end
    end
    failing = now
  end
end

-- Every response of one refresh, from its report (judge.lua) and the
-- history h. page: {interval, version, grafana_url, nomad_ui_url} of the node page; refresh:
-- {at, seconds} of this refresh, for /metrics (nil: none). The renderers
-- are required here, where they run (isolated.render: perhaps the site's).
function M.responses(core, report, h, page, refresh)
  local page_html = require "gpuledger.render.html"
  local metrics = require "gpuledger.render.metrics"
  local render_json = require "gpuledger.render.json"
  return {
    ["/metrics"] = {
      status = 200, content_type = metrics.CONTENT_TYPE,
      body = metrics.node(report, h, refresh, { version = core.version, lua = _VERSION:match("%d+%.%d+") }),
    },
    ["/ledger"] = { status = 200, content_type = JSON, body = render_json.ledger(report.ledger) },
    ["/findings"] = { status = 200, content_type = JSON, body = render_json.findings(report) },
    ["/healthz"] = healthz(report),
    ["/"] = { status = 200, content_type = page_html.CONTENT_TYPE, body = page_html.node(report, page) },
    ["/style.css"] = server.stylesheet(core),
  }
end

-- The message handler of a refresh without GPULEDGER_DEBUG: the message
-- alone, no traceback.
local function message_only(message)
  return message
end

-- The last good responses (made at `made`, core.now()) again after a
-- refresh failed with message: /healthz says they are stale, and answers
-- 503 once they are older than max_gap seconds.
local function stale_responses(core, last, made, max_gap, message)
  local responses = {}
  for path, response in pairs(last) do
    responses[path] = response
  end
  local age = core.now() - made
  local note = string.format("stale: the last good report is %s old (from %s); the last refresh failed: %s\n",
    clock.format_duration(math.floor(age)), clock.format_time(made), text.printable(message))
  local healthz_status = age > max_gap and 503 or last["/healthz"].status
  responses["/healthz"] = { status = healthz_status, content_type = PLAIN, body = note .. last["/healthz"].body }
  return responses
end

-- responses, whose report was made at `made` (core.now()), with /healthz
-- turning 503 once that report is older than max_gap seconds even while
-- the next refresh is still running (core.serve switches it then: a
-- refresh that takes minutes must not leave /healthz saying 200).
local function expiring(core, responses, made, max_gap)
  local response = responses["/healthz"]
  if response.status ~= 503 then
    response.stale = {
      after_ms = math.max(0, math.floor((max_gap - (core.now() - made)) * 1000)),
      status = 503,
      body = string.format("stale: no refresh has completed since %s, more than %s ago; one is still running\n",
        clock.format_time(made), clock.format_duration(math.floor(max_gap))) .. response.body,
    }
  end
  return responses
end

-- Runs serve with core and config (options.config), reading the node (or
-- the --replay file again, or the demo) each refresh with cmd.snapshot.
-- Returns the exit status.
function M.run(core, config)
  local interval = config.serve.interval
  local max_gap = 3 * interval
  local path = config.serve.history
  local rules = served_rules.load(core, config.site.rules, config.policy)
  local h, stuck = history.new(), false
  if path then
    local fresh_because
    h, fresh_because, stuck = history.open(core, path)
    if fresh_because then
      warn(fresh_because)
    end
  end
  local last_node = config.node
  local watch_sources = source_watch()
  local kept = {} -- what the sources keep from refresh to refresh (the kernel log's position)

  local function save()
    if path then
      local why
      why, stuck = history.save_over(core, path, h, stuck)
      if why then
        warn("history: " .. why)
      end
    end
  end

  local debugging = core.getenv("GPULEDGER_DEBUG")
  local last_good, last_good_made

  local function refresh()
    local ok, responses = xpcall(function()
      local now = core.now()
      local snap, why = cmd.snapshot(core, config, kept)
      watch_sources(snap, not snap and why or nil)
      if not snap then
        snap = snapshot.new(last_node, clock.format_time(now), {})
        snap.errors = { why }
      elseif config.input.demo or config.input.replay then
        snap.at = clock.format_time(now) -- a replayed node is served as if read now
      end
      local report = judge.judge(core, snap, rules.sources, config.policy,
        { record = h, max_gap = max_gap, observe = true }, rules.refused())
      last_node = report.ledger.node
      save()
      local page = { interval = interval, version = core.version, grafana_url = config.serve.grafana_url,
        nomad_ui_url = config.serve.nomad_ui_url }
      local timing = { at = now, seconds = core.now() - now }
      return assert(isolated.render(core, config.site.scripts, function()
        return M.responses(core, report, h, page, timing)
      end))
    end, debugging and debug.traceback or message_only)
    if not ok then
      local message = type(responses) == "string" and responses or "(error object is not a string)"
      if last_good then
        warn("refresh: " .. message)
        local stale = stale_responses(core, last_good, last_good_made, max_gap, message:match("^[^\n]*"))
        return expiring(core, stale, last_good_made, max_gap)
      end
      return server.failed_responses(core, "refresh", message, { "/", "/metrics", "/ledger", "/findings" })
    end
    last_good, last_good_made = responses, core.now()
    return expiring(core, responses, last_good_made, max_gap)
  end

  return server.serve(core, config.serve, interval, { "serving", "refresh" },
    { refresh = refresh, reload = rules.reload, stopped = save })
end

return M
