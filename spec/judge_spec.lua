-- The one judge: a snapshot, or a ledger already built (as fleet reads
-- them), becomes the report every renderer takes.
local H = require "helper"
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
end)
