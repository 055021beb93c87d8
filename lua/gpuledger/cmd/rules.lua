-- The `rules` command (docs/rules.md): the effective rule set as a table or
-- JSON; `rules --check [DIR]`, which runs a site rules directory on the demo
-- node and on each --replay snapshot and fails on any rule-error (what a
-- site runs in CI before deploying); and `rules --prometheus`, a Prometheus
-- rule group with one alert per finding code.
local findings = require "gpuledger.findings"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"
local text = require "gpuledger.text"

local M = {}

-- How long a finding must last before its alert fires, when the rule has no
-- ["for"] of its own. OK findings say all is well: no alert.
M.DEFAULT_FOR = { ERROR = "5m", BAD = "5m", WARN = "15m" }
M.SEVERITY = { ERROR = "critical", BAD = "critical", WARN = "warning" }

local function say(stream, s)
  stream:write(s)
  stream:flush()
end

-- The rules of set as rows {code, level, doc, origin, file, for?} under
-- policy, in the order of ruleset.codes, and the errors of level functions
-- (a rule of judge.rules has its level and level_error already).
function M.rows(set, policy)
  local by_code = {}
  for _, rule in ipairs(set.rules) do
    by_code[rule.code] = rule
  end
  local rows, errors = json.array(), {}
  for _, entry in ipairs(ruleset.codes(set, policy)) do
    local rule = by_code[entry.code]
    local level, why = ruleset.level_of(rule, policy)
    why = why or rule.level_error
    if why then
      errors[#errors + 1] = string.format("rule %s (%s): %s", rule.code, rule.origin, why)
    end
    rows[#rows + 1] = {
      code = rule.code, level = level, doc = rule.doc or "", origin = rule.origin,
      file = rule.file, ["for"] = rule["for"],
      -- what it judges: a node's ledger, the fleet (judge.rules says so in node and fleet)
      node = rule.node or rule.evaluate ~= nil, fleet = rule.fleet or rule.evaluate_fleet ~= nil,
    }
  end
  return rows, errors
end

-- The defaults a site file of set switched off, as rows {code, doc, origin
-- (the site file), file}.
function M.off_rows(set)
  local rows = json.array()
  for _, off in ipairs(set.off) do
    rows[#rows + 1] = { code = off.code or off.file, doc = off.doc or "", origin = off.origin, file = off.file }
  end
  return rows
end

-- The effective rule set of rules_dir (judge.rules: each site file loaded
-- in a child) under the policy choices given, judging no ledger. Returns
-- the set.
local function judged_set(core, rules_dir, given)
  return judge.rules(core, ruleset.read(core, rules_dir), given, {})
end

-- Appends the items of each list to out; returns out.
local function append(out, ...)
  for i = 1, select("#", ...) do
    for _, item in ipairs(select(i, ...)) do
      out[#out + 1] = item
    end
  end
  return out
end

-- The rules table of `gpuledger rules`: rows (M.rows), then the defaults
-- switched off (M.off_rows).
function M.table(rows, off)
  local cells = {}
  for i, row in ipairs(rows) do
    cells[i] = { row.code, row.level, row.origin, row.doc }
  end
  for _, row in ipairs(off) do
    cells[#cells + 1] = { row.code, "off", "switched off by " .. row.origin, row.doc }
  end
  return require("gpuledger.render.table").draw({ "code", "level", "from", "what it finds" }, cells)
end

-- `gpuledger rules [--json]`: the effective set. Exit 1 when a rule failed.
function M.list(core, config)
  local set = judged_set(core, config.site.rules, config.policy)
  local rows, level_errors = M.rows(set)
  local errors = append(json.array(), set.errors, level_errors)
  if config.json then
    say(io.stdout, json.encode { rules = rows, off = M.off_rows(set), errors = errors } .. "\n")
  else
    say(io.stdout, M.table(rows, M.off_rows(set)))
    for _, err in ipairs(errors) do
      say(io.stderr, "gpuledger: rule-error: " .. text.printable(err) .. "\n")
    end
  end
  return #errors > 0 and 1 or 0
end

-- The inputs of --check: the embedded demo node, then each --replay file.
-- Returns [{name, snapshot?, error?}].
local function check_inputs(core, config)
  local snapshot = require "gpuledger.snapshot"
  local inputs = { { name = "demo", snapshot = snapshot.demo(core) } }
  for _, path in ipairs(config.input.replays or {}) do
    local snap, why = snapshot.load(core, path)
    inputs[#inputs + 1] = { name = path, snapshot = snap, error = why }
  end
  return inputs
end

-- Runs the rules of dir on every input under the policy choices given.
-- Returns the set, the results [{input, node, gpus, findings, worst,
-- counts} or {input, error}] and the rule-error messages, each once, in the
-- order first seen.
function M.run_check(core, dir, given, inputs)
  local sources = ruleset.read(core, dir)
  local data = judge.data(core, sources) -- the site's Xid catalogue grades the ledgers, as in check
  local ledgers, read = {}, {}
  for _, input in ipairs(inputs) do
    if input.snapshot then
      ledgers[#ledgers + 1] = judge.ledger_of(input.snapshot, data[1].xid_catalogue)
      read[#read + 1] = input
    end
  end
  local set, found = judge.rules(core, sources, given, ledgers, { data = data })
  local by_input = {}
  for i, input in ipairs(read) do
    by_input[input] = { ledger = ledgers[i], findings = found[i] }
  end
  local results, errors, seen = json.array(), json.array(), {}
  for _, input in ipairs(inputs) do
    local judged = by_input[input]
    if judged then
      for _, finding in ipairs(judged.findings) do
        if finding.code == "rule-error" and not seen[finding.message] then
          seen[finding.message] = true
          errors[#errors + 1] = finding.message
        end
      end
      results[#results + 1] = {
        input = input.name, node = judged.ledger.node, gpus = #judged.ledger.entries,
        findings = judged.findings, worst = findings.worst(judged.findings), counts = findings.counts(judged.findings),
      }
    else
      results[#results + 1] = { input = input.name, error = input.error }
    end
  end
  return set, results, errors
end

-- The text report of --check: rows and off as M.table takes them.
function M.check_report(dir, rows, results, errors, off)
  local site = 0
  for _, row in ipairs(rows) do
    if row.origin ~= "embedded" then
      site = site + 1
    end
  end
  local out = { text.printable(string.format("gpuledger rules --check %s: %d rules, %d from the site directory", dir, #rows, site)) }
  out[#out + 1] = M.table(rows, off)
  local table_render = require "gpuledger.render.table"
  local failed_inputs = 0
  for _, result in ipairs(results) do
    if result.error then
      failed_inputs = failed_inputs + 1
      out[#out + 1] = text.printable(string.format("== %s: cannot be read: %s", result.input, result.error)) .. "\n"
    else
      local name = result.input == "demo" and "the embedded demo node" or result.input
      out[#out + 1] = text.printable(string.format("== %s (node %s, %d GPU(s))", name, result.node, result.gpus))
      out[#out + 1] = table_render.check(result)
    end
  end
  if #errors > 0 then
    out[#out + 1] = string.format("%d rule error(s):", #errors)
    for _, err in ipairs(errors) do
      out[#out + 1] = "  " .. text.printable(err)
    end
  end
  if #errors > 0 or failed_inputs > 0 then
    out[#out + 1] = string.format("FAIL: %d rule error(s), %d input(s) not read\n", #errors, failed_inputs)
  else
    out[#out + 1] = string.format("ok: no rule errors over %d input(s)\n", #results)
  end
  return table.concat(out, "\n")
end

-- `gpuledger rules --check [DIR]`: exit 0 when every rule of DIR (default
-- --rules) loads and runs on every input, 1 when one fails or an input
-- cannot be read, 2 when DIR is not a directory.
function M.check(core, config)
  local dir = config.rules.check_dir or config.site.rules
  if config.rules.check_dir and core.stat(dir) ~= "dir" then
    say(io.stderr, string.format("gpuledger: rules --check %s: no such directory\n", dir))
    return 2
  end
  local set, results, errors = M.run_check(core, dir, config.policy, check_inputs(core, config))
  local rows, level_errors = M.rows(set)
  local seen = {}
  for _, err in ipairs(errors) do
    seen[err] = true
  end
  for _, err in ipairs(append({}, set.errors, level_errors)) do
    if not seen[err] then
      seen[err] = true
      errors[#errors + 1] = err
    end
  end
  local failed = #errors > 0
  for _, result in ipairs(results) do
    failed = failed or result.error ~= nil
  end
  if config.json then
    local doc = { dir = dir, rules = rows, off = M.off_rows(set), inputs = results, errors = errors, ok = not failed }
    say(io.stdout, json.encode(doc, "  ", { counts = true }) .. "\n") -- counts: the text report's
  else
    say(io.stdout, M.check_report(dir, rows, results, errors, M.off_rows(set)))
  end
  return failed and 1 or 0
end

-- "GPULedgerReservedIdle" for "reserved-idle".
function M.alert_name(code)
  local name = code:gsub("%-+(%w)", function(c) return c:upper() end):gsub("%-", "")
  return "GPULedger" .. name:sub(1, 1):upper() .. name:sub(2)
end

-- s as a YAML double-quoted scalar, with Prometheus template braces in it
-- made literal (a site's doc text must not open a template action).
function M.yaml_string(s, literal_braces)
  s = text.valid_utf8(s)
  if literal_braces then
    s = s:gsub("{{", '{{ "{{" }}')
  end
  s = s:gsub('[%c"\\]', function(c)
    if c == '"' or c == "\\" then
      return "\\" .. c
    end
    return string.format("\\x%02x", c:byte())
  end)
  return '"' .. s .. '"'
end

-- Where an alert's findings are and what lists them: a node's (from its
-- serve's gpuledger_findings) or the fleet's (fleet serve's
-- gpuledger_fleet_findings, for the rules that see the fleet).
local SCOPES = {
  node = { metric = "gpuledger_findings", where = "{{ $labels.node }}", lister = "`gpuledger check` on the node" },
  fleet = { metric = "gpuledger_fleet_findings", where = "the fleet", lister = "`gpuledger fleet check`" },
}

-- The lines of one alert named name for a finding code, in scope
-- (SCOPES.node by default); expr defaults to "<the scope's metric>{code=…} > 0".
local function alert_lines(name, code, level, doc, duration, scope, expr)
  scope = scope or SCOPES.node
  local d = doc ~= "" and doc or code
  local function literal(s)
    return M.yaml_string(s, true):sub(2, -2)
  end
  return {
    "      - alert: " .. name,
    "        expr: " .. (expr or string.format('%s{code="%s"} > 0', scope.metric, code)),
    "        for: " .. duration,
    "        labels:",
    "          severity: " .. M.SEVERITY[level],
    "        annotations:",
    string.format('          summary: "gpuledger %s on %s: %s"', literal(code), scope.where, literal(d)),
    string.format('          description: "{{ $value }} %s finding(s), level %s, on %s for %s: %s. %s lists them."',
      literal(code), level, scope.where, duration, literal(d), scope.lister),
    "",
  }
end

-- The Prometheus rule group (YAML) for rows (M.rows): one alert per code
-- whose level is not OK, plus one for rule-error. about: {version, rules}.
function M.prometheus(rows, about)
  local quiet = {}
  for _, row in ipairs(rows) do
    if row.level == "OK" then
      quiet[#quiet + 1] = row.code
    end
  end
  local lines = {
    "# Alerts on gpuledger's findings: one per finding code of the effective rule",
    "# set, site codes included. Made by `gpuledger rules --prometheus`",
    string.format("# (gpuledger %s, rules directory %s); check it with", about.version, about.rules),
    "# `promtool check rules FILE`. severity: ERROR and BAD critical, WARN",
    "# warning, levels as under the flags it was run with. for: the rule's",
    "# [\"for\"], else ERROR and BAD 5m, WARN 15m.",
    "# OK codes have no alert, they say all is well: " .. (#quiet > 0 and table.concat(quiet, ", ") or "(none)") .. ".",
    "groups:",
    "  - name: gpuledger-findings",
    "    rules:",
  }
  for _, row in ipairs(rows) do
    if row.level ~= "OK" then
      local duration = row["for"] or M.DEFAULT_FOR[row.level]
      local name = M.alert_name(row.code)
      if row.node then
        append(lines, alert_lines(name, row.code, row.level, row.doc, duration))
      end
      if row.fleet then -- a rule that sees the fleet; "…Fleet" when it also judges nodes
        append(lines, alert_lines(row.node and (name .. "Fleet") or name, row.code, row.level, row.doc, duration, SCOPES.fleet))
      end
    end
  end
  append(lines, { "      # The engine's own code: a rule failed to load or to run." })
  append(lines, alert_lines(M.alert_name("rule-error"), "rule-error", "ERROR", "a finding rule failed; the message names its file and line",
    M.DEFAULT_FOR.ERROR, nil, 'gpuledger_findings{code="rule-error"} > 0 or gpuledger_rule_errors > 0'))
  lines[#lines] = nil
  return table.concat(lines, "\n") .. "\n"
end

-- `gpuledger rules --prometheus`: the rule group on stdout; exit 1 (with
-- the errors on stderr) when a rule failed to load.
function M.print_prometheus(core, config)
  local rules_dir = config.site.rules
  local set = judged_set(core, rules_dir, config.policy)
  local rows, level_errors = M.rows(set)
  say(io.stdout, M.prometheus(rows, { version = core.version or "dev", rules = rules_dir ~= "" and rules_dir or "(none)" }))
  local errors = append({}, set.errors, level_errors)
  for _, err in ipairs(errors) do
    say(io.stderr, "gpuledger: rule-error: " .. text.printable(err) .. "\n")
  end
  return #errors > 0 and 1 or 0
end

-- The rules command with core and config (options.config); returns the exit status.
function M.run(core, config)
  if config.rules.check then
    return M.check(core, config)
  elseif config.rules.prometheus then
    return M.print_prometheus(core, config)
  end
  return M.list(core, config)
end

return M
