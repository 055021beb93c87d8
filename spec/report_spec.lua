local report = require "gpuledger.report"

local function job(namespace, name, use, seconds)
  return { metric = { namespace = namespace, nomad_job = name, use = use }, value = seconds }
end

local function node(name, state, seconds)
  return { metric = { node = name, state = state }, value = seconds }
end

local ANSWERS = {
  jobs = {
    job("video", "restreamer", "held", 36000), job("video", "restreamer", "idle", 0),
    job("video", "worker", "held", 7200), job("video", "worker", "idle", 28800),
  },
  nodes = { node("gpue", "free", 15300), node("gpud", "held", 43200), node("gpud", "reserved-idle", 28800) },
}

describe("gpuledger.report", function()
  local built = report.build(ANSWERS, "7d", "2026-11-29T08:00:00Z")

  it("jobs: hours of GPU-seconds, reserved = held + idle, the idle share; most idle first", function()
    assert.same({
      { namespace = "video", job = "worker", reservedHours = 10, heldHours = 2, idleHours = 8, idleShare = 0.8 },
      { namespace = "video", job = "restreamer", reservedHours = 10, heldHours = 10, idleHours = 0, idleShare = 0 },
    }, built.jobs)
  end)

  it("equal idle hours: by namespace/job", function()
    local r = report.build({ jobs = { job("b", "x", "idle", 3600), job("a", "y", "idle", 3600) }, nodes = {} }, "1d", "")
    assert.equal("a", r.jobs[1].namespace)
    assert.equal("b", r.jobs[2].namespace)
  end)

  it("a job that reserved nothing has an idle share of 0, not NaN", function()
    local r = report.build({ jobs = { job("a", "y", "held", 0) }, nodes = {} }, "1d", "")
    assert.equal(0, r.jobs[1].idleShare)
  end)

  it("nodes: sorted, every state present", function()
    assert.same({ "gpud", "gpue" }, { built.nodes[1].node, built.nodes[2].node })
    assert.same({ held = 12, ["reserved-idle"] = 8, unaccounted = 0, free = 0 }, built.nodes[1].hours)
    assert.equal(4.25, built.nodes[2].hours.free)
  end)

  it("text: the header with totals, the job table, the node table (%.1f, %.0f%%)", function()
    local text = report.text(built)
    assert.truthy(text:find("gpuledger report · the last 7d · 2 job(s), 20.0 GPU-hours reserved, 8.0 idle (40%)\n", 1, true))
    assert.truthy(text:find("│ video/worker     │ 10.0           │ 2.0        │ 8.0        │ 80%  │", 1, true))
    assert.truthy(text:find("GPU-hours per node and state", 1, true))
    assert.truthy(text:find("│ gpue │ 0.0  │ 0.0           │ 0.0         │ 4.2  │", 1, true))
    assert.truthy(text:find("worker", 1, true) < text:find("restreamer", 1, true))
  end)

  it("text of an empty report: one line saying why", function()
    local text = report.text(report.build({ jobs = {}, nodes = {} }, "1h", ""))
    assert.equal(1, select(2, text:gsub("\n", "")))
    assert.truthy(text:find("no gpuledger counters in Prometheus over the last 1h", 1, true))
    assert.truthy(text:find("increase() needs two scrapes", 1, true))
  end)

  it("json: the report document, [] when empty", function()
    local decoded = require("cjson").decode(report.json(built))
    assert.equal(1, decoded.schema)
    assert.equal("7d", decoded.since)
    assert.equal("worker", decoded.jobs[1].job)
    assert.equal(8, decoded.nodes[1].hours["reserved-idle"])
    local empty = report.json(report.build({ jobs = {}, nodes = {} }, "1h", "t"))
    assert.truthy(empty:find('"jobs":[]', 1, true))
    assert.truthy(empty:find('"nodes":[]', 1, true))
  end)
end)
