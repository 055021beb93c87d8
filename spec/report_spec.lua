local json = require "gpuledger.json"
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

  it("no samples: jobs and nodes are JSON arrays, written []", function()
    local empty = report.build({ jobs = {}, nodes = {} }, "1h", "t")
    assert.is_true(json.is_array(empty.jobs))
    assert.is_true(json.is_array(empty.nodes))
  end)
end)
