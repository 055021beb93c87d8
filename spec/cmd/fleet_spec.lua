-- fleet serve's responses of one poll, from the fleet's report (judge.fleet).
local H = require "helper"
local fleet = require "gpuledger.fleet"
local fleet_cmd = require "gpuledger.cmd.fleet"
local html = require "gpuledger.render.html"
local json = require "gpuledger.json"
local metrics = require "gpuledger.render.metrics"
local ruleset = require "gpuledger.ruleset"

-- The fleet's report of H.fleet_rows(), gpuz unreachable, judged by the
-- rule set of sources (default: the embedded rules) keeping what keep says
-- (default: what fleet serve keeps); with unreachable_only, every node
-- unreachable.
local function report_of(unreachable_only, sources, keep, extra_errors)
  local summary, ledgers = H.fleet_input(unreachable_only)
  return H.judge_fleet(sources or ruleset.read(H.core, ""), summary, ledgers, extra_errors,
    keep or fleet_cmd.keep_for_serving)
end

describe("gpuledger.cmd.fleet responses", function()
  it("has every path with its status and content type, /fleet the judge's findings and worst", function()
    local report = report_of()
    local r = fleet_cmd.responses(H.core, H.AT, report, { interval = 30 })
    local got = {}
    for path, response in pairs(r) do
      got[path] = response.status .. " " .. response.content_type
      assert.equal("string", type(response.body))
    end
    assert.same({
      ["/"] = "200 text/html; charset=utf-8",
      ["/style.css"] = "200 text/css; charset=utf-8",
      ["/metrics"] = "200 text/plain; version=0.0.4; charset=utf-8",
      ["/fleet"] = "200 application/json",
      ["/healthz"] = "200 text/plain; charset=utf-8",
    }, got)
    local doc = json.decode(r["/fleet"].body)
    assert.equal(report.worst, doc.worst)
    assert.equal(#report_of(false, nil, "findings").findings, #doc.findings)
    assert.equal("ok\n", r["/healthz"].body)
  end)

  it("answers 503 on /healthz, each node's error on its line, when no node was read", function()
    local r = fleet_cmd.responses(H.core, H.AT, report_of(true), { interval = 30 })
    assert.equal(503, r["/healthz"].status)
    assert.equal("gpuz: Connection refused\n", r["/healthz"].body)
  end)

  it("writes from each node's text the page, /fleet and /metrics the findings' tables give", function()
    local site = H.site_rules { ["every_node.lua"] = [[
return { code = "every-node", level = "WARN", evaluate = function(ledger, policy, emit)
  emit { message = ledger.node .. " <has> \"GPUs\"", gpu = ledger.entries[1] }
  emit { message = "twice on " .. ledger.node, gpu = ledger.entries[2] }
end, evaluate_fleet = function(fleet, policy, emit)
  emit { message = "the fleet" }
end }
]] }
    local shown = html.GROUP_FINDINGS_SHOWN
    finally(function() html.GROUP_FINDINGS_SHOWN = shown end)
    for _, sources in ipairs { ruleset.read(H.core, ""), site.sources } do
      for _, bound in ipairs { shown, 1 } do -- every finding listed; one a group, the rest counted
        html.GROUP_FINDINGS_SHOWN = bound
        local tables = report_of(false, sources, "findings", { "a refused reload" })
        local groups = fleet.group_findings(tables.findings)
        local page = { interval = 30 }
        local expected = {
          ["/"] = html.fleet(tables.summary, groups, tables.worst,
            { counts = tables.counts, at = H.AT, interval = 30, version = H.core.version }),
          ["/fleet"] = json.encode({ at = H.AT, findings = tables.findings, schema = 1,
            summary = fleet.view(tables.summary), worst = tables.worst }, nil, { busId = true }) .. "\n",
          ["/metrics"] = metrics.fleet(tables.summary, groups, tables.codes),
        }
        local r = fleet_cmd.responses(H.core, H.AT, report_of(false, sources, nil, { "a refused reload" }), page)
        for path, body in pairs(expected) do
          assert.equal(body, r[path].body, path)
        end
        local listed, cut = 0, 0
        for _, group in ipairs(groups) do
          listed = listed + math.min(group.count, bound)
          cut = cut + (group.count > bound and 1 or 0)
        end
        local _, rows = r["/"].body:gsub('<tr class="finding ', "")
        local _, more = r["/"].body:gsub('<tr class="more">', "")
        assert.same({ listed, cut }, { rows, more })
        if sources == site.sources and bound == 1 then
          assert.is_true(cut > 0, "a group of many findings is cut")
        end
      end
    end
  end)
end)
