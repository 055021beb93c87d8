-- fleet serve's responses of one poll, from the fleet's report (judge.fleet).
local H = require "helper"
local fleet_cmd = require "gpuledger.cmd.fleet"
local json = require "gpuledger.json"
local ruleset = require "gpuledger.ruleset"

-- The fleet's report of H.fleet_rows(), gpuz unreachable; with
-- unreachable_only, every node unreachable.
local function report_of(unreachable_only)
  local summary, ledgers = H.fleet_input(unreachable_only)
  return H.judge_fleet(ruleset.read(H.core, ""), summary, ledgers)
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
    assert.equal(#report.findings, #doc.findings)
    assert.equal("ok\n", r["/healthz"].body)
  end)

  it("answers 503 on /healthz, each node's error on its line, when no node was read", function()
    local r = fleet_cmd.responses(H.core, H.AT, report_of(true), { interval = 30 })
    assert.equal(503, r["/healthz"].status)
    assert.equal("gpuz: Connection refused\n", r["/healthz"].body)
  end)
end)
