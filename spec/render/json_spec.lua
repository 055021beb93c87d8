-- The fleet's JSON documents (docs/json.md): fleet ls --json, fleet check
-- --json and /fleet, with the contract's fields only.
local H = require "helper"
local fleet = require "gpuledger.fleet"
local fleet_cmd = require "gpuledger.cmd.fleet"
local json = require "gpuledger.json"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"

describe("render.json: the fleet's documents", function()
  it("writes the fleet's JSON documents with only the contract's fields", function()
    local summary, ledgers = H.fleet_input()
    local report = H.judge_fleet(ruleset.read(H.core, ""), summary, ledgers, nil, fleet_cmd.keep_for_serving)
    local doc = json.decode(render_json.fleet(H.AT, report))
    assert.same({ "at", "findings", "schema", "summary", "worst" }, (function()
      local keys = {}
      for k in pairs(doc) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      return keys
    end)())
    assert.same({ node = "gpuz", schema = 0, gpus = 0, held = 0, reservedIdle = 0, unaccounted = 0, free = 0,
      memoryUsedMiB = 0, memoryTotalMiB = 0, unreachable = 1, error = "Connection refused",
      worst = "ERROR", badFindings = 0, errorFindings = 1 }, doc.summary.nodes[1])
    assert.same({ "BAD", 1, 0 }, { doc.summary.nodes[2].worst, doc.summary.nodes[2].badFindings,
      doc.summary.nodes[2].errorFindings })
    assert.is_nil(doc.summary.nodes[2].unreachable)
    assert.is_nil(doc.summary.nodes[2].url)
    assert.equal(1, doc.summary.total.unreachable)
    assert.equal("ERROR", doc.summary.total.worst)
    local nobody = H.judge_fleet(ruleset.read(H.core, ""), fleet.summarise {}, {}, nil, fleet_cmd.keep_for_serving)
    assert.truthy(render_json.fleet(H.AT, nobody):find('"findings":[],', 1, true))
    assert.truthy(render_json.fleet_check(H.AT, nobody):find('"findings":[],', 1, true))
    local ls = render_json.fleet_ls(H.AT, summary)
    assert.truthy(ls:find('"jobs":[{', 1, true))
    local empty = render_json.fleet_ls(H.AT, fleet.summarise {})
    assert.truthy(empty:find('"jobs":[]', 1, true))
    assert.truthy(empty:find('"nodes":[]', 1, true))
  end)
end)

describe("render.json: fleet check --summary --json", function()
  it("writes {at, groups, schema, worst}, each group with its findings as the findings document has them", function()
    local _, found = H.fleet_judged()
    local doc = json.decode(render_json.fleet_summary(H.AT, fleet.group_findings(found), "ERROR"))
    assert.same({ 1, "ERROR", H.AT }, { doc.schema, doc.worst, doc.at })
    assert.equal(#found, #doc.groups)
    assert.same({ level = "ERROR", code = "source-unavailable", count = 1, gpus = 0, nodes = { "gpuz" } },
      { level = doc.groups[1].level, code = doc.groups[1].code, count = doc.groups[1].count, gpus = doc.groups[1].gpus,
        nodes = doc.groups[1].nodes })
    assert.equal("gpuledger at http://10.0.0.9:9877 could not be read: Connection refused", doc.groups[1].findings[1].message)
    assert.same({ "gpue" }, doc.groups[2].nodes)
    assert.equal(1, doc.groups[2].gpus)
    assert.truthy(render_json.fleet_summary(H.AT, {}, "OK"):find('"groups":[]', 1, true))
  end)
end)

-- A report as report.builder gives it: two jobs, most idle first, two nodes.
local REPORT = {
  schema = 1, since = "7d", at = "2026-11-29T08:00:00Z",
  jobs = {
    { namespace = "video", job = "worker", reservedHours = 10, heldHours = 2, idleHours = 8, idleShare = 0.8 },
    { namespace = "video", job = "restreamer", reservedHours = 10, heldHours = 10, idleHours = 0, idleShare = 0 },
  },
  nodes = {
    { node = "gpud", hours = { held = 12, ["reserved-idle"] = 8, unaccounted = 0, free = 0 } },
    { node = "gpue", hours = { held = 0, ["reserved-idle"] = 0, unaccounted = 0, free = 4.25 } },
  },
  unreserved = json.array {
    { node = "gpud", kind = "docker", use = "unmanaged", namespace = "", job = "", task = "", container = "ffmpeg-manual",
      tenant = "ffmpeg-manual", hours = 6 },
  },
  slices = json.array {
    { node = "gpuh", gpu = "0", uuid = "GPU-h", migUuid = "MIG-a", profile = "3g.40gb", namespace = "train", job = "trainer",
      reservedHours = 3, heldHours = 2.5, idleHours = 0.5, idleShare = 1 / 6 },
  },
}

describe("render.json: report", function()
  it("writes the report as it is, [] when empty", function()
    local decoded = json.decode((H.written(render_json.write_report, REPORT)))
    assert.equal(1, decoded.schema)
    assert.equal("7d", decoded.since)
    assert.equal("worker", decoded.jobs[1].job)
    assert.equal(8, decoded.nodes[1].hours["reserved-idle"])
    assert.same(REPORT.unreserved[1], decoded.unreserved[1])
    assert.same(REPORT.slices[1], decoded.slices[1])
    local empty = H.written(render_json.write_report, {
      schema = 1, since = "1h", at = "t", jobs = json.array(), nodes = json.array(), unreserved = json.array(),
      slices = json.array(),
    })
    assert.truthy(empty:find('"jobs":[]', 1, true))
    assert.truthy(empty:find('"nodes":[]', 1, true))
    assert.truthy(empty:find('"unreserved":[]', 1, true))
    assert.truthy(empty:find('"slices":[]', 1, true))
  end)

  it("write_report: json.encode's text in parts, a long list a batch at a time", function()
    local function written(r)
      return H.written(render_json.write_report, r)
    end
    local samples = {}
    for i = 1, 2500 do
      samples[i] = { metric = { namespace = "ns", nomad_job = string.format("j%04d", i), use = "idle" }, value = i }
    end
    for _, jobs in ipairs { 0, 1, 1000, 1001, 2500 } do
      local r = H.report_of({ jobs = { table.unpack(samples, 1, jobs) }, nodes = {} }, "7d", "2026-11-29T08:00:00Z")
      local text, parts = written(r)
      assert.equal(json.encode(r) .. "\n", text)
      assert.equal(jobs > 1000 and 15 + math.ceil(jobs / 1000) or 15, parts)
    end
    assert.equal(json.encode(REPORT) .. "\n", (written(REPORT)))
  end)
end)
