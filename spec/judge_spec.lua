-- The one judge: a snapshot, or a ledger already built (as fleet reads
-- them), becomes the report every renderer takes.
local H = require "helper"
local fleet_cmd = require "gpuledger.cmd.fleet"
local json = require "gpuledger.json"
local judge = require "gpuledger.judge"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"

local function snapshot()
  return H.snapshot {
    gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
    apps = { H.app(H.UUID0, 5151, 2048) },
    pids = { [5151] = H.cid("b") },
    containers = { H.container { id = H.cid("b"), name = "ffmpeg-manual" } },
    allocations = {},
  }
end

describe("gpuledger.judge", function()
  it("turns a snapshot into a report: ledger, findings worst first, worst, counts, codes, rules", function()
    local report = judge.judge(H.core, snapshot(), ruleset.read(H.core, ""), {})
    assert.equal(2, #report.ledger.entries)
    assert.equal("unaccounted", report.ledger.entries[1].state)
    assert.equal("BAD", report.worst)
    assert.equal("unmanaged-tenant", report.findings[1].code)
    assert.equal(#report.findings, report.counts.OK + report.counts.WARN + report.counts.BAD + report.counts.ERROR)
    assert.equal("source-unavailable", report.codes[1].code)
    assert.same({ loaded = #H.DEFAULT_CODES, errors = 0 }, report.rules)
  end)

  it("gives each tenant its verdict once, in the ledger, and the ledger's JSON leaves it out", function()
    local report = judge.judge(H.core, snapshot())
    assert.equal("unmanaged", report.ledger.entries[1].tenants[1].verdict)
    assert.is_nil(render_json.ledger(report.ledger):find("verdict", 1, true))
  end)

  it("judges a ledger read back from its JSON the same as the node did (fleet)", function()
    local rules = ruleset.read(H.core, "")
    local here = judge.judge(H.core, snapshot(), rules, {})
    local fetched = assert(json.decode(render_json.ledger(here.ledger)))
    local there = judge.judge(H.core, fetched, rules, {})
    assert.equal("unmanaged", there.ledger.entries[1].tenants[1].verdict)
    assert.same(H.summary(here.findings), H.summary(there.findings))
    assert.equal(here.worst, there.worst)
  end)

  it("without a rule set (ls) judges nothing: no findings, OK", function()
    local report = judge.judge(H.core, snapshot())
    assert.same({}, report.findings)
    assert.equal("OK", report.worst)
    assert.is_nil(report.rules)
  end)

  it("applies the history: observed and annotated (serve), or its error as a source error (ls, check)", function()
    local history = require "gpuledger.history"
    local h = history.new()
    local report = judge.judge(H.core, snapshot(), nil, nil, { record = h, max_gap = 45, observe = true })
    assert.equal(H.AT, report.ledger.entries[1].stateSince)
    assert.is_not_nil(h.gpus[H.UUID0])
    report = judge.judge(H.core, snapshot(), nil, nil, { error = "/h.json: not JSON", max_gap = 45 })
    assert.same({ "history: /h.json: not JSON" }, report.ledger.errors)
  end)

  describe("judge.rules: the set's errors", function()
    local dir
    before_each(function()
      dir = H.tempdir()
      H.write(dir .. "/thresholds.lua", "return 42")
      H.write(dir .. "/my rule.lua", 'return { code = "x", level = "WARN", evaluate = function() end }')
    end)
    after_each(function()
      H.remove(dir)
    end)
    -- the rule-errors of found, each "<node> <message>"
    local function rule_errors(found)
      local out = {}
      for _, finding in ipairs(found) do
        if finding.code == "rule-error" then
          out[#out + 1] = finding.node .. " " .. finding.message
        end
      end
      return out
    end
    -- the two errors as rule_errors gives them, about node
    local function about(node)
      return {
        node .. " " .. dir .. "/thresholds.lua: returned a number, want a table of thresholds",
        node .. " " .. dir .. "/my rule.lua: a rule file is named with letters, digits, _ and - only",
      }
    end

    it("with a fleet view are the fleet's rule-errors, once, even when no node was read", function()
      for _, n in ipairs { 0, 2 } do
        local ledgers = {}
        for i = 1, n do
          ledgers[i] = judge.ledger_of(snapshot())
        end
        local set, found, fleet_found = judge.rules(H.core, ruleset.read(H.core, dir), {}, ledgers,
          { view = { nodes = {}, total = {} } })
        assert.equal(2, #set.errors)
        assert.same(about("fleet"), rule_errors(fleet_found))
        for i = 1, n do
          assert.same({}, rule_errors(found[i]))
        end
      end
    end)

    it("without a fleet view are each ledger's rule-errors (a node's check)", function()
      local report = judge.judge(H.core, snapshot(), ruleset.read(H.core, dir), {})
      assert.same(about(report.ledger.node), rule_errors(report.findings))
    end)
  end)
end)

describe("judge.fleet", function()
  local findings = require "gpuledger.findings"

  it("gives the fleet's report: every node judged, the unreachable one an ERROR, worst and counts of them all", function()
    local summary, ledgers = H.fleet_input()
    local report = H.judge_fleet(ruleset.read(H.core, ""), summary, ledgers)
    local _, expected = H.fleet_judged()
    assert.same(expected, report.findings)
    assert.equal(summary, report.summary)
    assert.equal("ERROR", report.worst)
    assert.same(findings.counts(report.findings), report.counts)
    assert.equal(0, report.rules.errors)
    assert.is_true(report.rules.loaded > 0 and #report.codes == report.rules.loaded)
  end)

  it("keeps no ledger once judged, a site file's kept for it and judged in its child", function()
    local site = H.site_rules { ["every_node.lua"] = [[
return { code = "every-node", level = "WARN", evaluate = function(ledger, policy, emit)
  emit { message = ledger.node .. " has " .. #ledger.entries .. " GPUs" }
end }
]] }
    for _, sources in ipairs { ruleset.read(H.core, ""), site.sources } do
      local summary, ledgers = H.fleet_input()
      local judging = judge.fleet_judging(H.core, sources, {})
      for _, row in ipairs(summary.nodes) do
        if ledgers[row] then
          judging.node(row, ledgers[row])
        end
      end
      assert.equal(sources == site.sources and 2 or 0, #judging.kept.ledgers)
      local report = judge.fleet(judging, summary)
      assert.equal(sources == site.sources and 2 or 0, #H.with_code(report.findings, "every-node"))
    end
    local summary, ledgers = H.fleet_input()
    local messages = {}
    for _, finding in ipairs(H.with_code(H.judge_fleet(site.sources, summary, ledgers).findings, "every-node")) do
      messages[#messages + 1] = finding.message
    end
    table.sort(messages)
    assert.same({ "gpud has 2 GPUs", "gpue has 2 GPUs" }, messages)
  end)

  it("keeping verdicts or the findings' text gives the rows and the total the verdicts it gives with the findings", function()
    local site = H.site_rules { ["every_node.lua"] = [[
return { code = "every-node", level = "BAD", evaluate = function(ledger, policy, emit)
  if ledger.node == "gpue" then emit { message = "one more" } end
end }
]] }
    for _, sources in ipairs { ruleset.read(H.core, ""), site.sources } do
      local function verdicts(keep)
        local summary, ledgers = H.fleet_input()
        summary = H.judge_fleet(sources, summary, ledgers, { "a refused reload" }, keep).summary
        local rows = {}
        for i, row in ipairs(summary.nodes) do
          rows[i] = { row.node, row.worst, row.badFindings, row.errorFindings }
        end
        local total = summary.total
        return { rows = rows, total = { total.worst, total.badFindings, total.errorFindings } }
      end
      local expected = verdicts("findings")
      assert.same(expected, verdicts("verdicts"))
      assert.same(expected, verdicts(fleet_cmd.keep_text))
      local gpue = expected.rows[2]
      assert.same({ "gpue", sources == site.sources and 2 or 1 }, { gpue[1], gpue[3] }) -- its BAD findings
    end
  end)

  it("fleet check --json from each node's text is the same bytes as from the findings merged", function()
    local site = H.site_rules { ["every_node.lua"] = [[
return { code = "every-node", level = "WARN", evaluate = function(ledger, policy, emit)
  emit { message = ledger.node .. " <has> \"GPUs\"", gpu = ledger.entries[1] }
end, evaluate_fleet = function(fleet, policy, emit)
  emit { message = "the fleet" }
end }
]] }
    for _, sources in ipairs { ruleset.read(H.core, ""), site.sources } do
      local summary, ledgers = H.fleet_input()
      local merged = H.judge_fleet(sources, summary, ledgers, { "a refused reload" })
      local expected = json.encode({ at = "2026-12-03T08:00:00Z", findings = merged.findings, schema = 1,
        worst = merged.worst }, nil, { busId = true }) .. "\n"
      summary, ledgers = H.fleet_input()
      local texts = H.judge_fleet(sources, summary, ledgers, { "a refused reload" }, fleet_cmd.keep_text)
      assert.equal(expected, render_json.fleet_check("2026-12-03T08:00:00Z", texts))
      local levels = {}
      for _, finding in ipairs(merged.findings) do
        levels[finding.level] = true
      end
      assert.same({ ERROR = true, BAD = true, WARN = true, OK = true }, levels) -- every level, in order
      assert.equal("ERROR", texts.worst)
    end
    local summary = H.fleet_input(true)
    local texts = H.judge_fleet(ruleset.read(H.core, ""), summary, {}, nil, fleet_cmd.keep_text)
    assert.equal("ERROR", json.decode(render_json.fleet_check("2026-12-03T08:00:00Z", texts)).findings[1].level)
  end)

  it("makes extra errors the fleet's rule-errors, first among the ERRORs", function()
    local summary, ledgers = H.fleet_input()
    local report = H.judge_fleet(ruleset.read(H.core, ""), summary, ledgers, { "a refused reload" })
    assert.same({ level = "ERROR", code = "rule-error", node = "fleet", message = "a refused reload" }, report.findings[1])
    assert.equal(1, report.rules.errors)
    assert.equal(1, #H.with_code(report.findings, "rule-error"))
  end)
end)
