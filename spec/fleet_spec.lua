-- The fleet's arithmetic (SPEC §8.3–8.4, §11 "fleet"): ledgers of every
-- shape made readable, per-node rows, jobs, totals, the order of nodes and
-- findings, and the fleet's renderers (table, JSON, metrics, page).
local H = require "helper"
local fleet = require "gpuledger.fleet"
local html = require "gpuledger.render.html"
local json = require "gpuledger.json"
local metrics = require "gpuledger.render.metrics"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local table_render = require "gpuledger.render.table"

local function fixture(name)
  local file = assert(io.open(os.getenv("GPULEDGER_SOURCE_DIR") .. "/testdata/fleet/" .. name))
  local text = file:read("a")
  file:close()
  return text
end

-- A ledger as it comes off the wire: encoded, decoded, made readable.
local function wire(ledger)
  return assert(fleet.readable(assert(json.decode(json.encode(ledger)))))
end

-- gpud: one held GPU and one reserved-idle; gpue: an unmanaged tenant and a
-- free GPU; the row of one unreachable node.
local function rows()
  local gpud = wire(H.ledger({
    H.gpu { index = 0, memoryUsedMiB = 1024, reservations = { H.reservation { jobId = "restreamer", namespace = "",
      allocId = "11111111-aaaa", deviceIds = { H.UUID0 } } },
      tenants = { H.nomad_tenant { allocId = "11111111-aaaa", jobName = "restreamer" } } },
    H.gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } } },
  }, { node = "gpud" }))
  local gpue = wire(H.ledger({
    H.gpu { index = 0, memoryUsedMiB = 2048, tenants = { H.docker_tenant() } },
    H.gpu { index = 1 },
  }, { node = "gpue" }))
  return {
    fleet.node_row({ node = "10.0.0.5", url = "http://10.0.0.5:9877" }, gpue),
    fleet.unreachable_row({ node = "gpuz", url = "http://10.0.0.9:9877" }, "Connection refused"),
    fleet.node_row({ node = "10.0.0.4", url = "http://10.0.0.4:9877" }, gpud),
  }, { gpud = gpud, gpue = gpue }
end

-- The summary of rows() and its findings, each node judged by the embedded rules.
local function judged()
  local list, ledgers = rows()
  local summary = fleet.summarise(list)
  local node_findings = {}
  for _, row in ipairs(summary.nodes) do
    if not row.error then
      node_findings[row] = H.run_rules(ledgers[row.node])
    end
  end
  return summary, fleet.merge_findings(summary, node_findings)
end

describe("fleet", function()
  it("counts each node's GPUs per state, memory, and the totals with the unreachable", function()
    local summary = fleet.summarise((rows()))
    local names = {}
    for i, row in ipairs(summary.nodes) do
      names[i] = row.node
    end
    assert.same({ "gpud", "gpue", "gpuz" }, names) -- by the ledger's name, else the target's
    local gpud, gpue, gpuz = summary.nodes[1], summary.nodes[2], summary.nodes[3]
    assert.same({ 2, 1, 1, 0, 0, 1024 }, { gpud.gpus, gpud.held, gpud.reservedIdle, gpud.unaccounted, gpud.free, gpud.memoryUsedMiB })
    assert.same({ 2, 0, 0, 1, 1, 2048 }, { gpue.gpus, gpue.held, gpue.reservedIdle, gpue.unaccounted, gpue.free, gpue.memoryUsedMiB })
    assert.equal("Connection refused", gpuz.error)
    local total = summary.total
    assert.same({ "fleet", 1, 4, 1, 1, 1, 1, 1, 3072, 4 * 23034 },
      { total.node, total.schema, total.gpus, total.held, total.reservedIdle, total.unaccounted, total.free,
        total.unreachable, total.memoryUsedMiB, total.memoryTotalMiB })
  end)

  it("counts each job's reserved and held GPUs, an empty namespace as default, sorted", function()
    local summary = fleet.summarise((rows()))
    assert.same({
      { namespace = "default", job = "restreamer", reserved = 1, held = 1 },
      { namespace = "video", job = "worker", reserved = 1, held = 0 },
    }, summary.jobs)
  end)

  it("calls a GPU with a reserved tenant and a host tenant unaccounted", function()
    local ledger = wire(H.ledger { H.gpu { index = 0, reservations = { H.reservation() },
      tenants = { H.nomad_tenant(), H.host_tenant() } } })
    local row = fleet.node_row({ node = "x", url = "http://x:1" }, ledger)
    assert.same({ 1, 0 }, { row.unaccounted, row.held })
    assert.same({ reserved = 1, held = 1, namespace = "video", job = "worker" }, row.jobs["video/worker"])
  end)

  it("reads the original Go gpuledger's ledger (null arrays, its own states) like ours", function()
    local ledger = assert(fleet.readable(assert(json.decode(fixture("go-ledger.json"), true))))
    assert.same({}, ledger.entries[1].tenants)
    assert.same({}, ledger.entries[3].tenants)
    assert.same({}, ledger.entries[3].reservations[1].deviceIds)
    assert.equal(4242, ledger.entries[2].tenants[1].pids[1])
    assert.equal("held", ledger.entries[2].state) -- the node said unaccounted
    assert.equal("reserved-idle", ledger.entries[3].state) -- the node said free
    local row = fleet.node_row({ node = "127.0.0.1", url = "http://127.0.0.1:1" }, ledger)
    assert.same({ "gpu-go", 1, 3, 1, 1, 0, 1 }, { row.node, row.schema, row.gpus, row.held, row.reservedIdle, row.unaccounted, row.free })
    local found = H.run_rules(ledger)
    assert.same({ "WARN reserved-idle gpu2 GPU-5e5e5e5e", "OK idle gpu0 GPU-0a1b2c3d", "OK held gpu1 GPU-9f8e7d6c" },
      H.summary(found))
  end)

  it("reads a schema-0 ledger and judges it from what it has", function()
    local ledger = assert(fleet.readable(assert(json.decode(fixture("schema0-ledger.json"), true))))
    assert.equal(0, ledger.schema)
    assert.is_false(ledger.nomadRead)
    assert.equal("unaccounted", ledger.entries[1].state)
    local row = fleet.node_row({ node = "old", url = "http://old:1" }, ledger)
    assert.same({ "gpu-old", 0, 1 }, { row.node, row.schema, row.unaccounted })
    assert.same({ "BAD unmanaged-tenant gpu0 GPU-00000000" }, H.summary((H.run_rules(ledger))))
    local text = table_render.fleet_ls(fleet.summarise { row })
    assert.truthy(text:find("gpu-old (schema 0)", 1, true))
  end)

  it("shapes a ledger for the summary alone to the same row, nulls anywhere", function()
    local text = fixture("go-ledger.json")
    local shaped = assert(fleet.shape(assert(json.decode(text, true))))
    local readable = assert(fleet.readable(assert(json.decode(text, true))))
    local target = { node = "t", url = "http://t:1" }
    assert.same(fleet.node_row(target, readable), fleet.node_row(target, shaped))
    local odd = [[{"schema":1,"node":null,"entries":[null,{"index":null,"memoryUsedMiB":null,
      "reservations":[null,{"jobId":null,"namespace":null,"allocId":"a"}],
      "tenants":[null,{"kind":"nomad","allocId":"a","reserved":null,"pids":null,"container":null}]}],
      "nomadRead":null,"errors":[null,"x"]}]]
    local ledger = assert(fleet.readable(assert(json.decode(odd, true))))
    assert.same({ "unaccounted", 0, 0, "x" }, { ledger.entries[1].state, ledger.entries[1].index,
      ledger.entries[1].memoryUsedMiB, ledger.errors[1] })
    assert.is_nil(ledger.entries[1].tenants[1].container)
    local row = fleet.node_row({ node = "odd", url = "http://odd:1" }, assert(fleet.shape(assert(json.decode(odd, true)))))
    assert.same({ "odd", 1, 1 }, { row.node, row.gpus, row.unaccounted })
    assert.same({ namespace = "default", job = "", reserved = 1, held = 0 }, row.jobs["default/"])
    assert.same({}, H.with_code((H.run_rules(ledger)), "rule-error")) -- the rules read it without raising
  end)

  it("refuses what is not a ledger", function()
    assert.is_nil(fleet.readable { 1, 2 })
    assert.is_nil(fleet.readable("ledger"))
    local none, why = fleet.readable { entries = "many" }
    assert.is_nil(none)
    assert.truthy(why:find("entries", 1, true))
  end)

  it("puts every node's findings worst first, an unreachable node as an ERROR", function()
    local _, found = judged()
    local lines = {}
    for i, f in ipairs(found) do
      lines[i] = string.format("%s %s %s", f.level, f.code, f.node)
    end
    assert.same({
      "ERROR source-unavailable gpuz", "BAD unmanaged-tenant gpue", "WARN reserved-idle gpud",
      "OK held gpud", "OK idle gpue",
    }, lines)
    assert.equal("gpuledger at http://10.0.0.9:9877 could not be read: Connection refused", found[1].message)
  end)
end)

describe("fleet renderers", function()
  it("draws fleet ls: header, one row per node, dashes for the unreachable, totals, jobs", function()
    local text = table_render.fleet_ls((judged()))
    assert.truthy(text:find("^gpuledger fleet · 3 node%(s%), 1 unreachable · 4 GPU%(s%)\n"))
    assert.truthy(text:find("│ gpud  │ 2    │ 1    │ 1             │ 0           │ 0    │ 1024/46068 MiB", 1, true))
    assert.truthy(text:find("│ gpuz  │ -    │ -    │ -             │ -           │ -    │ unreachable: Connection refused", 1, true))
    assert.truthy(text:find("│ fleet │ 4    │ 1    │ 1             │ 1           │ 1    │ 3072/92136 MiB", 1, true))
    assert.truthy(text:find("│ default/restreamer │ 1        │ 1    │", 1, true))
    assert.truthy(text:find("│ video/worker       │ 1        │ 0    │", 1, true))
  end)

  it("writes the JSON documents of SPEC §4.3 with only the contract's fields", function()
    local summary, found = judged()
    local doc = json.decode(render_json.fleet(H.AT, summary, found, "ERROR"))
    assert.same({ "at", "findings", "schema", "summary", "worst" }, (function()
      local keys = {}
      for k in pairs(doc) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      return keys
    end)())
    assert.same({ node = "gpuz", schema = 0, gpus = 0, held = 0, reservedIdle = 0, unaccounted = 0, free = 0,
      memoryUsedMiB = 0, memoryTotalMiB = 0, unreachable = 1, error = "Connection refused" }, doc.summary.nodes[3])
    assert.is_nil(doc.summary.nodes[1].unreachable)
    assert.is_nil(doc.summary.nodes[1].url)
    assert.equal(1, doc.summary.total.unreachable)
    local ls = render_json.fleet_ls(H.AT, summary)
    assert.truthy(ls:find('"jobs":[{', 1, true))
    local empty = render_json.fleet_ls(H.AT, fleet.summarise {})
    assert.truthy(empty:find('"jobs":[]', 1, true))
    assert.truthy(empty:find('"nodes":[]', 1, true))
  end)

  it("writes /metrics of SPEC §5.1 with a zero series for every state and code", function()
    local summary, found = judged()
    local set = ruleset.load(H.core, "/nonexistent")
    local text = metrics.fleet(summary, found, ruleset.codes(set, {}))
    assert.truthy(text:find("\ngpuledger_fleet_up 1\n", 1, true))
    assert.truthy(text:find('gpuledger_fleet_nodes{state="read"} 2', 1, true))
    assert.truthy(text:find('gpuledger_fleet_nodes{state="unreachable"} 1', 1, true))
    assert.truthy(text:find('gpuledger_fleet_gpus{state="free"} 1', 1, true))
    assert.truthy(text:find('gpuledger_fleet_job_gpus{namespace="video",nomad_job="worker",use="held"} 0', 1, true))
    assert.truthy(text:find('gpuledger_fleet_findings{code="hot",level="WARN"} 0', 1, true))
    assert.truthy(text:find('gpuledger_fleet_findings{code="source-unavailable",level="ERROR"} 1', 1, true))
    assert.falsy(text:find('node="', 1, true))
    local down = metrics.fleet(fleet.summarise { fleet.unreachable_row({ node = "a", url = "http://a:1" }, "x") }, {}, {})
    assert.truthy(down:find("\ngpuledger_fleet_up 0\n", 1, true))
  end)

  it("draws the fleet page: nodes linked, the unreachable across the columns, jobs, findings, escaped", function()
    local summary, found = judged()
    local hostile = fleet.node_row({ node = 'gpuf"><b>x', url = "http://10.0.0.6:9877" },
      wire(H.ledger({ H.gpu { index = 0 } }, { node = 'gpuf"><b>x', schema = 0 })))
    summary = fleet.summarise { summary.nodes[1], summary.nodes[2], summary.nodes[3], hostile }
    local page = html.fleet(summary, found, "ERROR", { at = H.AT, interval = 30, version = "dev" })
    assert.truthy(page:find('<meta http-equiv="refresh" content="30">', 1, true))
    assert.truthy(page:find("<title>gpuledger · fleet</title>", 1, true))
    assert.truthy(page:find('<a href="http://10.0.0.4:9877/">gpud</a>', 1, true))
    assert.truthy(page:find("4 node(s), 1 unreachable", 1, true))
    assert.truthy(page:find('<td colspan="6"><span class="level ERROR">unreachable</span> Connection refused</td>', 1, true))
    assert.truthy(page:find("gpuf&#34;&gt;&lt;b&gt;x</a> <span class=\"mark\">schema 0</span>", 1, true))
    assert.falsy(page:find('gpuf"><b>', 1, true))
    assert.truthy(page:find("video/worker", 1, true))
    assert.truthy(page:find("gpud gpu1 GPU-ac81e44d", 1, true))
    assert.falsy(page:find("<script", 1, true))
    assert.falsy(page:find("style=", 1, true))
  end)
end)
