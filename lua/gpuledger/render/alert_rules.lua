-- The Prometheus rule group of `gpuledger rules --prometheus` (YAML, for
-- promtool and a Prometheus rule file): one alert per finding code of the
-- effective rule set that is not OK, from cmd/rules.lua's rows.
local text = require "gpuledger.text"

local M = {}

-- How long a finding must last before its alert fires, when the rule has no
-- ["for"] of its own. OK findings say all is well: no alert.
M.DEFAULT_FOR = { ERROR = "5m", BAD = "5m", WARN = "15m" }
M.SEVERITY = { ERROR = "critical", BAD = "critical", WARN = "warning" }

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
-- serve's findings) or the fleet's (fleet serve's gpuledger_fleet_findings,
-- for the rules that see the fleet). A node's alert names the card: its
-- expr reads gpuledger_gpu_finding, one series per GPU (and MIG slice) and
-- code, so that each card fires on its own with its node, gpu, uuid and
-- mig_uuid labels; a finding about no GPU (a source down) fires from the
-- node's gpuledger_findings, when the node has no per-card series of that
-- code.
local SCOPES = {
  node = {
    expr = 'gpuledger_gpu_finding{code="%s"} > 0 or on(node) gpuledger_findings{code="%s"} > 0',
    where = "{{ $labels.node }}{{ with $labels.gpu }} GPU {{ . }}{{ end }}{{ with $labels.uuid }} ({{ . }}){{ end }}"
      .. "{{ with $labels.mig_profile }} MIG {{ . }}{{ end }}{{ with $labels.mig_uuid }} {{ . }}{{ end }}",
    lister = "`gpuledger check` on the node",
  },
  fleet = { expr = 'gpuledger_fleet_findings{code="%s"} > 0', where = "the fleet", lister = "`gpuledger fleet check`" },
}

-- The lines of one alert named name for a finding code, in scope
-- (SCOPES.node by default); expr defaults to the scope's for code.
local function alert_lines(name, code, level, doc, duration, scope, expr)
  scope = scope or SCOPES.node
  local d = doc ~= "" and doc or code
  local function literal(s)
    return M.yaml_string(s, true):sub(2, -2)
  end
  return {
    "      - alert: " .. name,
    "        expr: " .. (expr or string.format(scope.expr, code, code)),
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

-- Appends the lines of one alert to lines.
local function add(lines, alert)
  table.move(alert, 1, #alert, #lines + 1, lines)
end

-- The Prometheus rule group (YAML) for rows (cmd/rules.lua's rows): one
-- alert per code whose level is not OK, plus one for rule-error. about:
-- {version, rules}.
function M.render(rows, about)
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
        add(lines, alert_lines(name, row.code, row.level, row.doc, duration))
      end
      if row.fleet then -- a rule that sees the fleet; "…Fleet" when it also judges nodes
        add(lines, alert_lines(row.node and (name .. "Fleet") or name, row.code, row.level, row.doc, duration, SCOPES.fleet))
      end
    end
  end
  lines[#lines + 1] = "      # The engine's own code: a rule failed to load or to run."
  add(lines, alert_lines(M.alert_name("rule-error"), "rule-error", "ERROR", "a finding rule failed; the message names its file and line",
    M.DEFAULT_FOR.ERROR, nil, 'gpuledger_findings{code="rule-error"} > 0 or gpuledger_rule_errors > 0'))
  lines[#lines] = nil
  return table.concat(lines, "\n") .. "\n"
end

return M
