local json = require "gpuledger.json"
local H = require "helper"
local report = require "gpuledger.report"

local function job(namespace, name, use, seconds)
  return { metric = { namespace = namespace, nomad_job = name, use = use }, value = seconds }
end

local function node(name, state, seconds)
  return { metric = { node = name, state = state }, value = seconds }
end

local function tenant(node_name, kind, use, name, seconds, fields)
  local metric = { node = node_name, kind = kind, use = use, tenant = name, namespace = "", nomad_job = "", task = "", container = "" }
  for k, v in pairs(fields or {}) do
    metric[k] = v
  end
  return { metric = metric, value = seconds }
end

local ANSWERS = {
  jobs = {
    job("video", "restreamer", "held", 36000), job("video", "restreamer", "idle", 0),
    job("video", "worker", "held", 7200), job("video", "worker", "idle", 28800),
  },
  nodes = { node("gpue", "free", 15300), node("gpud", "held", 43200), node("gpud", "reserved-idle", 28800) },
  unreserved = {
    tenant("gpud", "host", "unmanaged", "process python3 of root (uid 0)", 1800),
    tenant("gpue", "nomad", "unreserved", "encode/enc", 5400, { namespace = "video", nomad_job = "encode", task = "enc" }),
    tenant("gpud", "docker", "unmanaged", "ffmpeg-manual", 5400, { container = "ffmpeg-manual" }),
    tenant("gpud", "docker", "unmanaged", "gone", 0, { container = "gone" }),
  },
}

describe("gpuledger.report", function()
  local built = H.report_of(ANSWERS, "7d", "2026-11-29T08:00:00Z")

  it("jobs: hours of GPU-seconds, reserved = held + idle, the idle share; most idle first", function()
    assert.same({
      { namespace = "video", job = "worker", reservedHours = 10, heldHours = 2, idleHours = 8, idleShare = 0.8 },
      { namespace = "video", job = "restreamer", reservedHours = 10, heldHours = 10, idleHours = 0, idleShare = 0 },
    }, built.jobs)
  end)

  it("equal idle hours: by namespace/job", function()
    local r = H.report_of({ jobs = { job("b", "x", "idle", 3600), job("a", "y", "idle", 3600) }, nodes = {} }, "1d", "")
    assert.equal("a", r.jobs[1].namespace)
    assert.equal("b", r.jobs[2].namespace)
  end)

  it("a job that reserved nothing has an idle share of 0, not NaN", function()
    local r = H.report_of({ jobs = { job("a", "y", "held", 0) }, nodes = {} }, "1d", "")
    assert.equal(0, r.jobs[1].idleShare)
  end)

  it("nodes: sorted, every state present", function()
    assert.same({ "gpud", "gpue" }, { built.nodes[1].node, built.nodes[2].node })
    assert.same({ held = 12, ["reserved-idle"] = 8, unaccounted = 0, free = 0 }, built.nodes[1].hours)
    assert.equal(4.25, built.nodes[2].hours.free)
  end)

  it("unreserved: the tenants that used GPUs without a reservation, most hours first, then by node; none of 0", function()
    assert.same({
      { node = "gpud", kind = "docker", use = "unmanaged", namespace = "", job = "", task = "", container = "ffmpeg-manual",
        tenant = "ffmpeg-manual", hours = 1.5 },
      { node = "gpue", kind = "nomad", use = "unreserved", namespace = "video", job = "encode", task = "enc", container = "",
        tenant = "encode/enc", hours = 1.5 },
      { node = "gpud", kind = "host", use = "unmanaged", namespace = "", job = "", task = "", container = "",
        tenant = "process python3 of root (uid 0)", hours = 0.5 },
    }, built.unreserved)
    assert.equal(3.5, report.totals(built).unreservedHours)
  end)

  it("slices: each job's hours per MIG slice (in GPU-hours, as counted), by node, GPU, slice and job", function()
    local function slice(mig, job_name, use, seconds)
      return { metric = { node = "gpuh", gpu = "0", uuid = "GPU-h", mig_uuid = mig, mig_profile = "3g.40gb",
        namespace = "train", nomad_job = job_name, use = use }, value = seconds }
    end
    local r = H.report_of({ jobs = {}, nodes = {}, slices = {
      slice("MIG-b", "infer", "idle", 3600), slice("MIG-a", "trainer", "held", 9000), slice("MIG-a", "trainer", "idle", 1800),
    } }, "1d", "")
    assert.same({
      { node = "gpuh", gpu = "0", uuid = "GPU-h", migUuid = "MIG-a", profile = "3g.40gb", namespace = "train", job = "trainer",
        reservedHours = 3, heldHours = 2.5, idleHours = 0.5, idleShare = 0.5 / 3 },
      { node = "gpuh", gpu = "0", uuid = "GPU-h", migUuid = "MIG-b", profile = "3g.40gb", namespace = "train", job = "infer",
        reservedHours = 1, heldHours = 0, idleHours = 1, idleShare = 1 },
    }, r.slices)
  end)

  it("no samples: jobs, nodes, unreserved and slices are JSON arrays, written []", function()
    local empty = H.report_of({ jobs = {}, nodes = {}, unreserved = {}, slices = {} }, "1h", "t")
    assert.is_true(json.is_array(empty.jobs))
    assert.is_true(json.is_array(empty.nodes))
    assert.is_true(json.is_array(empty.unreserved))
    assert.is_true(json.is_array(empty.slices))
  end)
end)
