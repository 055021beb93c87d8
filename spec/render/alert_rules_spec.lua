-- `gpuledger rules --prometheus`: the Prometheus rule group of the
-- effective rule set's rows (cmd/rules.lua's rows).
local H = require "helper"
local alert_rules = require "gpuledger.render.alert_rules"
local rules_cmd = require "gpuledger.cmd.rules"

-- The rows of a set under flags (as on the command line).
local function rows_of(set, flags)
  return rules_cmd.rows(set, H.policy(flags, set))
end

describe("gpuledger.render.alert_rules", function()
  it("names alerts in CamelCase after the code", function()
    assert.equal("GPULedgerReservedIdle", alert_rules.alert_name("reserved-idle"))
    assert.equal("GPULedgerHot", alert_rules.alert_name("hot"))
    assert.equal("GPULedgerSourceUnavailable", alert_rules.alert_name("source-unavailable"))
    assert.equal("GPULedger2faMissing", alert_rules.alert_name("2fa-missing"))
    assert.equal("GPULedgerAB", alert_rules.alert_name("a--b"))
  end)

  it("quotes YAML and makes template braces literal", function()
    assert.equal('"a \\"b\\" \\\\ c"', alert_rules.yaml_string('a "b" \\ c'))
    assert.equal('"tab\\x09nl\\x0a"', alert_rules.yaml_string("tab\tnl\n"))
    assert.equal('"x {{ \\"{{\\" }} y }}"', alert_rules.yaml_string("x {{ y }}", true))
  end)

  local function alert(yaml, name)
    return yaml:match("(      %- alert: " .. name .. "\n.-)\n\n") or yaml:match("(      %- alert: " .. name .. "\n.*)$")
  end

  it("has one alert per code that is not OK, in listing order, plus rule-error", function()
    local rows = rows_of(H.rule_set())
    local yaml = alert_rules.render(rows, { version = "dev", rules = "/etc/gpuledger/rules.d" })
    local names, want = {}, {}
    for name in yaml:gmatch("%- alert: (%S+)") do
      names[#names + 1] = name
    end
    for _, r in ipairs(rows) do
      if r.level ~= "OK" then
        want[#want + 1] = alert_rules.alert_name(r.code)
      end
    end
    want[#want + 1] = "GPULedgerRuleError"
    assert.same(want, names)
    assert.same({ "GPULedgerSourceUnavailable", "GPULedgerUnreservedTenant" }, { names[1], names[2] })
    assert.is_true(H.in_order({ "GPULedgerHot", "GPULedgerXidFatal", "GPULedgerXidMemory" }, names))
    assert.is_nil(yaml:find("GPULedgerIdle", 1, true))
    assert.matches("OK codes have no alert, they say all is well: idle, held.", yaml, 1, true)
    assert.matches("^# Alerts on gpuledger's findings", yaml)
    assert.matches("\ngroups:\n  %- name: gpuledger%-findings\n    rules:\n", yaml)
  end)

  it("sets expr, for and severity from the code and the level", function()
    local yaml = alert_rules.render(rows_of(H.rule_set()), { version = "dev", rules = "/r" })
    local idle = alert(yaml, "GPULedgerReservedIdle")
    assert.matches('expr: gpuledger_gpu_finding{code="reserved-idle"} > 0 or on(node) gpuledger_findings{code="reserved-idle"} > 0',
      idle, 1, true)
    assert.matches("for: 15m", idle, 1, true)
    assert.matches("severity: warning", idle, 1, true)
    local unreserved = alert(yaml, "GPULedgerUnreservedTenant")
    assert.matches("for: 5m", unreserved, 1, true)
    assert.matches("severity: critical", unreserved, 1, true)
    assert.matches("for: 15m", alert(yaml, "GPULedgerUnmanagedTenant"), 1, true)
    assert.matches("for: 10m", alert(yaml, "GPULedgerHot"), 1, true)
    local source = alert(yaml, "GPULedgerSourceUnavailable")
    assert.matches("for: 5m", source, 1, true)
    assert.matches("severity: critical", source, 1, true)
    local card = "{{ $labels.node }}{{ with $labels.gpu }} GPU {{ . }}{{ end }}{{ with $labels.uuid }} ({{ . }}){{ end }}"
      .. "{{ with $labels.mig_profile }} MIG {{ . }}{{ end }}{{ with $labels.mig_uuid }} {{ . }}{{ end }}"
    assert.matches('summary: "gpuledger reserved-idle on ' .. card .. ': ', idle, 1, true)
    assert.matches('description: "{{ $value }} reserved-idle finding(s), level WARN, on ' .. card .. ' for 15m', idle, 1, true)
    local rule_error = alert(yaml, "GPULedgerRuleError")
    assert.matches('gpuledger_findings{code="rule-error"} > 0 or gpuledger_rule_errors > 0', rule_error, 1, true)
  end)

  it("takes for from the rule, the level under the flags, and site codes", function()
    local set = H.site_rules { ["busy.lua"] = 'return { code = "gpu-busy", level = "BAD", ["for"] = "2h", doc = "x", evaluate = function() end }' }
    local yaml = alert_rules.render(rows_of(set, { allow_unmanaged = true }), { version = "dev", rules = "/r" })
    local busy = alert(yaml, "GPULedgerGpuBusy")
    assert.matches("for: 2h", busy, 1, true)
    assert.matches("severity: critical", busy, 1, true)
    assert.matches("severity: warning", alert(yaml, "GPULedgerUnmanagedTenant"), 1, true)
  end)

  it("alerts on fleet serve's gpuledger_fleet_findings for a rule that sees the fleet", function()
    local set = H.site_rules {
      ["share.lua"] = 'return { code = "fleet-share", level = "WARN", doc = "x", evaluate_fleet = function() end }',
      ["both.lua"] = 'return { code = "both", level = "BAD", evaluate = function() end, evaluate_fleet = function() end }',
    }
    local yaml = alert_rules.render(rows_of(set), { version = "dev", rules = "/r" })
    local share = alert(yaml, "GPULedgerFleetShare")
    assert.matches('expr: gpuledger_fleet_findings{code="fleet-share"} > 0', share, 1, true)
    assert.matches('summary: "gpuledger fleet-share on the fleet: x"', share, 1, true)
    assert.matches("`gpuledger fleet check` lists them.", share, 1, true)
    assert.is_nil(yaml:find('gpuledger_findings{code="fleet-share"}', 1, true))
    assert.matches('expr: gpuledger_gpu_finding{code="both"} > 0 or on(node) gpuledger_findings{code="both"} > 0',
      alert(yaml, "GPULedgerBoth"), 1, true)
    assert.matches('expr: gpuledger_fleet_findings{code="both"} > 0', alert(yaml, "GPULedgerBothFleet"), 1, true)
  end)
end)
