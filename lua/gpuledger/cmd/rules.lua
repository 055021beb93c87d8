-- The `rules` command (docs/rules.md): the effective rule set as a table or
-- JSON; `rules --check [DIR]`, which runs a site rules directory on the demo
-- node and on each --replay snapshot and fails on any rule-error (what a
-- site runs in CI before deploying); and `rules --prometheus`, a Prometheus
-- rule group with one alert per finding code.
local alert_rules = require "gpuledger.render.alert_rules"
local cmd = require "gpuledger.cmd"
local findings = require "gpuledger.findings"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local table_render = require "gpuledger.render.table"
local text = require "gpuledger.text"

local M = {}

-- The renderers of the rule set by format (config.format, or "prometheus" with
-- --prometheus), each of the listing {rules = M.rows, off = M.off_rows,
-- errors} and about {version, rules (the directory)}.
M.RENDER = {
  text = table_render.rules,
  json = render_json.rules,
  prometheus = function(listing, about)
    return alert_rules.render(listing.rules, about)
  end,
}

-- The renderers of `rules --check` by format (config.format), each of the
-- check {dir, rules, off, inputs, errors, ok}.
M.RENDER_CHECK = { text = table_render.rules_check, json = render_json.rules_check }

-- The rules of set as rows {code, level, doc, origin, file, for?, rank?} under
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
      file = rule.file, ["for"] = rule["for"], rank = rule.rank,
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

-- `gpuledger rules [--json | --prometheus]`: the effective set, the rule
-- errors on stderr but in JSON. Exit 1 when a rule failed.
function M.list(core, config)
  local rules_dir = config.site.rules
  local set = judged_set(core, rules_dir, config.policy)
  local rows, level_errors = M.rows(set)
  local errors = append(json.array(), set.errors, level_errors)
  local format = config.rules.prometheus and "prometheus" or config.format
  local about = { version = core.version or "dev", rules = rules_dir ~= "" and rules_dir or "(none)" }
  cmd.say(io.stdout, M.RENDER[format]({ rules = rows, off = M.off_rows(set), errors = errors }, about))
  if format ~= "json" then
    for _, err in ipairs(errors) do
      cmd.say(io.stderr, "gpuledger: rule-error: " .. text.printable(err) .. "\n")
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

-- `gpuledger rules --check [DIR]`: exit 0 when every rule of DIR (default
-- --rules) loads and runs on every input, 1 when one fails or an input
-- cannot be read, 2 when DIR is not a directory.
function M.check(core, config)
  local dir = config.rules.check_dir or config.site.rules
  if config.rules.check_dir and core.stat(dir) ~= "dir" then
    cmd.say(io.stderr, string.format("gpuledger: rules --check %s: no such directory\n", dir))
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
  local check = { dir = dir, rules = rows, off = M.off_rows(set), inputs = results, errors = errors, ok = not failed }
  cmd.say(io.stdout, M.RENDER_CHECK[config.format](check))
  return failed and 1 or 0
end

-- The rules command with core and config (options.config); returns the exit status.
function M.run(core, config)
  if config.rules.check then
    return M.check(core, config)
  end
  return M.list(core, config)
end

return M
