-- The fleet's arithmetic (docs/contract.md#fleet): ledgers of every
-- shape made readable, per-node rows, jobs, totals, the order of nodes and
-- findings. (The fleet's renderers are specified with the others, in
-- spec/render/.)
local H = require "helper"
local fleet = require "gpuledger.fleet"
local json = require "gpuledger.json"
local fleet_cmd = require "gpuledger.cmd.fleet"
local judge = require "gpuledger.judge"
local render_json = require "gpuledger.render.json"
local ruleset = require "gpuledger.ruleset"
local snapshot = require "gpuledger.snapshot"
local node_ledger = require "gpuledger.sources.node_ledger"
local table_render = require "gpuledger.render.table"
local text_mod = require "gpuledger.text"

local SOURCE = "http://10.0.0.4:9877/ledger"
local AT = "2026-12-01T10:00:00Z" -- when a made-up ledger was read

local function fixture(name)
  local file = assert(io.open(os.getenv("GPULEDGER_SOURCE_DIR") .. "/testdata/fleet/" .. name))
  local text = file:read("a")
  file:close()
  return text
end

describe("fleet", function()
  it("counts each node's GPUs per state, memory, and the totals with the unreachable", function()
    local summary = fleet.summarise((H.fleet_rows()))
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
    local summary = fleet.summarise((H.fleet_rows()))
    assert.same({
      { namespace = "default", job = "restreamer", reserved = 1, held = 1 },
      { namespace = "video", job = "worker", reserved = 1, held = 0 },
    }, summary.jobs)
  end)

  it("calls a GPU with a reserved tenant and a host tenant unaccounted", function()
    local ledger = H.wire_ledger(H.ledger { H.gpu { index = 0, reservations = { H.reservation() },
      tenants = { H.nomad_tenant(), H.host_tenant() } } })
    local row = fleet.node_row({ node = "x", url = "http://x:1" }, ledger)
    assert.same({ 1, 0 }, { row.unaccounted, row.held })
    assert.same({ reserved = 1, held = 1, namespace = "video", job = "worker" }, row.jobs["video/worker"])
  end)

  it("counts a GPU in MIG mode once as a GPU, by the state of its slices, and its slices per state beside it", function()
    local trainer = H.nomad_tenant { jobName = "train", taskName = "trainer" }
    local ledger = H.wire_ledger(H.ledger { H.gpu { index = 0, state = "held", migDevices = {
      { uuid = "MIG-a", index = 0, profile = "3g.40gb", memoryUsedMiB = 1024, memoryTotalMiB = 40448, state = "held",
        reservations = json.array { H.reservation() }, tenants = json.array { trainer } },
      { uuid = "MIG-b", index = 1, profile = "2g.20gb", memoryUsedMiB = 0, memoryTotalMiB = 20096, state = "reserved-idle",
        reservations = json.array { H.reservation { allocId = "other", jobId = "infer" } }, tenants = json.array() },
      { uuid = "MIG-c", index = 2, profile = "1g.10gb", memoryUsedMiB = 0, memoryTotalMiB = 9984, state = "free",
        reservations = json.array(), tenants = json.array() },
    } }, H.gpu { index = 1 } })
    local row = fleet.node_row({ node = "x", url = "http://x:1" }, ledger)
    assert.same({ 2, 1, 0, 1 }, { row.gpus, row.held, row.reservedIdle, row.free })
    assert.same({ 3, 1, 1, 0, 1 }, { row.migSlices, row.migHeld, row.migReservedIdle, row.migUnaccounted or 0, row.migFree })
    local view = fleet.view(fleet.summarise { row })
    assert.same({ 3, 1, 1, 0, 1 }, { view.total.migSlices, view.total.migHeld, view.total.migReservedIdle,
      view.total.migUnaccounted, view.total.migFree })
    -- the jobs of the slices' reservations: worker holds its slice, infer does not
    assert.same({ reserved = 1, held = 1, namespace = "video", job = "worker" }, row.jobs["video/worker"])
    assert.same({ reserved = 1, held = 0, namespace = "video", job = "infer" }, row.jobs["video/infer"])
  end)

  it("reads an older release's ledger (null arrays, its own states) like ours", function()
    local ledger = assert(fleet.readable(assert(json.decode(fixture("go-ledger.json"))), SOURCE))
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
    local ledger = assert(fleet.readable(assert(json.decode(fixture("schema0-ledger.json"))), SOURCE))
    assert.equal(0, ledger.schema)
    assert.is_false(ledger.nomadRead)
    assert.equal("unaccounted", ledger.entries[1].state)
    local row = fleet.node_row({ node = "old", url = "http://old:1" }, ledger)
    assert.same({ "gpu-old", 0, 1 }, { row.node, row.schema, row.unaccounted })
    assert.same({ "BAD unmanaged-tenant gpu0 GPU-00000000" }, H.summary((H.run_rules(ledger))))
    local text = table_render.fleet_ls(fleet.summarise { row })
    assert.truthy(text:find("gpu-old (schema 0)", 1, true))
  end)

  it("shapes a ledger for the summary alone to the same row, a JSON null as an absent field", function()
    local text = fixture("go-ledger.json")
    local shaped = assert(fleet.shape(assert(json.decode(text)), SOURCE))
    local readable = assert(fleet.readable(assert(json.decode(text)), SOURCE))
    local target = { node = "t", url = "http://t:1" }
    assert.same(fleet.node_row(target, readable), fleet.node_row(target, shaped))
    local odd = [[{"schema":1,"node":"odd","at":"2026-12-01T10:00:00Z","entries":[{"index":null,"memoryUsedMiB":null,
      "reservations":[{"jobId":null,"namespace":null,"allocId":"a"}],
      "tenants":[{"kind":"nomad","allocId":"a","reserved":null,"pids":null,"container":null}]}],
      "nomadRead":null,"errors":["x"]}]]
    local ledger = assert(fleet.readable(assert(json.decode(odd)), SOURCE))
    assert.same({ "unaccounted", 0, 0, "x" }, { ledger.entries[1].state, ledger.entries[1].index,
      ledger.entries[1].memoryUsedMiB, ledger.errors[1] })
    assert.same(ledger, assert(fleet.readable(assert(json.decode_raw(odd)), SOURCE))) -- lua-cjson's nulls as they come
    assert.same(readable, assert(fleet.readable(assert(json.decode_raw(text)), SOURCE)))
    assert.is_nil(ledger.entries[1].tenants[1].container)
    local row = fleet.node_row({ node = "odd", url = "http://odd:1" }, assert(fleet.shape(assert(json.decode(odd)), SOURCE)))
    assert.same({ "odd", 1, 1 }, { row.node, row.gpus, row.unaccounted })
    assert.same({ namespace = "default", job = "", reserved = 1, held = 0 }, row.jobs["default/"])
    assert.same({}, H.with_code((H.run_rules(ledger)), "rule-error")) -- the rules read it without raising
  end)

  it("keeps a node's lost GPU unmeasured: no memory, temperature, power or encoder count made up", function()
    local text = [[{"schema":1,"node":"gpu-a","at":"2026-12-01T10:00:00Z","nomadRead":true,"entries":[{"index":-1,"uuid":"GPU-dead","model":"",
      "busId":"00000000:AF:00.0","missing":true,"state":"free","reservations":[],"tenants":[]}]}]]
    local ledger = assert(fleet.readable(assert(json.decode(text)), SOURCE))
    local lost = ledger.entries[1]
    assert.same({ -1, "GPU-dead", true }, { lost.index, lost.uuid, lost.missing })
    for _, field in ipairs { "memoryUsedMiB", "memoryTotalMiB", "temperatureC", "powerW", "encoderSessions", "encoderAverageFps" } do
      assert.is_nil(lost[field], field)
    end
    local found = H.run_rules(ledger)
    assert.same({}, H.with_code(found, "rule-error"))
    assert.equal(1, #H.with_code(found, "gpu-lost"))
  end)

  -- Why the go fixture with the field at path (in its second GPU, parts
  -- joined by dots) written as the JSON text value is refused, by both
  -- readers alike.
  local function refused(path, value)
    local decoded = assert(json.decode(fixture("go-ledger.json")))
    local at = decoded.entries[2]
    for part in path:gmatch("([^.]+)%.") do
      at = at[tonumber(part) or part]
    end
    local key = path:match("([^.]+)$")
    at[tonumber(key) or key] = "PLACEHOLDER"
    local text = json.encode(decoded):gsub('"PLACEHOLDER"', value)
    local none, why = fleet.shape(assert(json.decode(text)), SOURCE)
    assert.is_nil(none)
    local none_readable, why_readable = fleet.readable(assert(json.decode(text)), SOURCE)
    assert.is_nil(none_readable)
    assert.equal(why, why_readable)
    assert.same({ nil, why }, { fleet.readable(assert(json.decode_raw(text)), SOURCE) })
    return why
  end

  it("names a number that is none where a whole number belongs, and a value of the wrong type", function()
    local whole = "want a whole number from 0 to 9007199254740992"
    for _, case in ipairs {
      { "memoryTotalMiB", "23034.5", "memoryTotalMiB is 23034.5, " .. whole },
      { "memoryTotalMiB", "1e20", "memoryTotalMiB is 1e+20, " .. whole },
      { "powerW", "1e308", "powerW is 1e+308, want a number from 0 to 9007199254740992" },
      { "index", '"zero"', "index is a string, want a whole number from -9007199254740992 to 9007199254740992" },
      { "tenants.1.pids.1", "-4", "tenants[1].pids[1] is -4, " .. whole },
      { "tenants.1.reserved", '"yes"', "tenants[1].reserved is a string, want a boolean" },
      { "tenants.1.unplaced", '"yes"', "tenants[1].unplaced is a string, want a boolean" },
      { "reservations.1.deviceIds", '"GPU-x"', "reservations[1].deviceIds is a string, want a list" },
      { "health", "5", "health is a number, want an object" },
      { "migDevices", "5", "migDevices is a number, want a list" },
      { "migDevices", '[{"uuid": "MIG-1", "tenants": "x"}]', "migDevices[1].tenants is a string, want a list" },
      { "nomadSlicesUnknown", "5", "nomadSlicesUnknown is a number, want a list" },
    } do
      local path, value, why = table.unpack(case)
      assert.equal(SOURCE .. ": unexpected answer: ledger.entries[2]." .. why, refused(path, value), path .. " = " .. value)
    end
  end)

  it("refuses a ledger past the limits of what one node may hold, naming the list", function()
    local limits = node_ledger.LIMITS
    local entries = {}
    for i = 1, limits.gpus + 1 do
      entries[i] = { index = i - 1 }
    end
    local _, why = fleet.shape({ schema = 1, node = "gpu-x", at = AT, entries = entries }, SOURCE)
    assert.equal(string.format("%s: unexpected answer: ledger.entries has %d items, want at most %d", SOURCE,
      limits.gpus + 1, limits.gpus), why)
    entries[#entries] = nil
    assert.truthy(fleet.shape({ schema = 1, node = "gpu-x", at = AT, entries = entries }, SOURCE))
    local tenants = {}
    for i = 1, limits.tenants + 1 do
      tenants[i] = { kind = "docker", pids = { i } }
    end
    _, why = fleet.readable({ schema = 1, node = "gpu-x", at = AT, entries = { { index = 0, tenants = tenants } } }, SOURCE)
    assert.equal(string.format("%s: unexpected answer: ledger.entries[1].tenants has %d items, want at most %d", SOURCE,
      limits.tenants + 1, limits.tenants), why)
  end)

  it("cuts another node's names like this node's own, and its errors like its own", function()
    local long = ("x"):rep(5 * 1024 * 1024)
    local ledger = assert(fleet.readable({
      schema = 1, node = "gpu-" .. long, at = AT, errors = { ("e"):rep(4096) },
      entries = { { index = 0, model = long, tenants = { { kind = "docker", container = long, processes = { long } } },
        reservations = { { jobId = long, namespace = long } } } },
    }, SOURCE))
    local cut = text_mod.NAME_MAX + #text_mod.CUT_MARK
    assert.same({ cut, cut, cut, cut, cut, text_mod.ERROR_MAX + #text_mod.CUT_MARK }, {
      #ledger.node, #ledger.entries[1].model, #ledger.entries[1].tenants[1].container,
      #ledger.entries[1].tenants[1].processes[1], #ledger.entries[1].reservations[1].jobId, #ledger.errors[1],
    })
    assert.equal(text_mod.CUT_MARK, ledger.node:sub(-#text_mod.CUT_MARK))
  end)

  it("keeps a process or device named by digits a name, and a JSON whole number an integer", function()
    local ledger = assert(fleet.readable(json.decode([[{"schema": 1, "node": "gpu-1", "at": "2026-12-01T10:00:00Z", "entries": [{"index": 0.0,
      "tenants": [{"kind": "docker", "pids": [4242.0], "processes": ["8", "1e3", "python"], "usedMemoryMiB": 512.0}],
      "reservations": [{"allocId": "a", "deviceIds": ["0", "GPU-1"]}]}]}]]), SOURCE))
    local entry = ledger.entries[1]
    assert.same({ "8", "1e3", "python" }, entry.tenants[1].processes)
    assert.same({ "0", "GPU-1" }, entry.reservations[1].deviceIds)
    assert.equal("integer", math.type(entry.tenants[1].pids[1]))
    assert.equal("integer", math.type(entry.tenants[1].usedMemoryMiB))
    assert.equal("integer", math.type(entry.index))
  end)

  it("makes a MIG slice's reservations readable as a GPU's", function()
    local ledger = assert(fleet.readable({ schema = 1, node = "gpu-x", at = AT, entries = { { index = 0, migDevices = {
      { uuid = "MIG-1", reservations = { { allocId = "a", jobId = "train" } } } } } } }, SOURCE))
    local reservation = ledger.entries[1].migDevices[1].reservations[1]
    assert.same({ {}, "", "reserved-idle" }, { reservation.deviceIds, reservation.namespace, ledger.entries[1].state })
    assert.is_nil(ledger.entries[1].utilizationPct) -- unknown, not 0 %
  end)

  it("names a JSON null among a ledger's GPUs, tenants or reservations", function()
    local none, why = fleet.shape(assert(json.decode('{"schema":1,"node":"gpu-x","at":"2026-12-01T10:00:00Z","entries":[null,{"index":0}]}')), SOURCE)
    assert.is_nil(none)
    assert.equal(SOURCE .. ": unexpected answer: ledger.entries[1] is null, want an object", why)
  end)

  it("takes every ledger this version writes, every source and health field of the demo node's", function()
    local demo = assert(json.decode(render_json.ledger(judge.ledger_of(snapshot.demo(H.core)))))
    assert.truthy(demo.entries[1].health and demo.entries[1].xids and demo.entries[1].nomadDevice)
    assert.truthy(fleet.readable(demo, SOURCE))
  end)

  it("reads a node's answer, or says why not", function()
    local url = "http://10.0.0.4:9877"
    local ledger = assert(fleet.answer_ledger(url, { status = 200, body = fixture("go-ledger.json") }))
    assert.equal("gpu-go", ledger.node)
    assert.same({ nil, "http://10.0.0.4:9877/ledger: Couldn't connect to server: Connection refused" },
      { fleet.answer_ledger(url, { error = "Couldn't connect to server: Connection refused" }) })
    assert.same({ nil, "http://10.0.0.4:9877/ledger: HTTP 302" }, { fleet.answer_ledger(url, { status = 302, body = "" }) })
    local _, html = fleet.answer_ledger(url, { status = 200, body = "<!DOCTYPE html>", content_type = "text/html" })
    assert.truthy(html:find("^http://10.0.0.4:9877/ledger: the answer %(text/html%) is not JSON: "))
    local _, list = fleet.answer_ledger(url, { status = 200, body = "[1,2]" })
    assert.equal("http://10.0.0.4:9877/ledger: the answer is not a gpuledger ledger (want a JSON object)", list)
    local _, empty = fleet.answer_ledger(url, { status = 200, body = " []" })
    assert.equal("http://10.0.0.4:9877/ledger: the answer is not a gpuledger ledger (want a JSON object)", empty)
    local _, null = fleet.answer_ledger(url, { status = 200, body = "null", content_type = "application/json" })
    assert.equal("http://10.0.0.4:9877/ledger: the answer (application/json) is not JSON: null where a value was expected", null)
  end)

  it("refuses what is not a ledger", function()
    assert.is_nil(fleet.readable({ 1, 2 }, SOURCE))
    assert.is_nil(fleet.readable("ledger", SOURCE))
    local none, why = fleet.readable({ node = "gpu-x", at = AT, entries = "many" }, SOURCE)
    assert.is_nil(none)
    assert.truthy(why:find("entries", 1, true))
  end)

  it("refuses an object that names no node or no time of reading: another service's JSON, not a node of no GPU", function()
    local none, why = fleet.readable({}, SOURCE) -- both missing: either is named first
    assert.is_nil(none)
    assert.truthy(why == SOURCE .. ": unexpected answer: ledger.node is missing, want a string"
      or why == SOURCE .. ": unexpected answer: ledger.at is missing, want a string", why)
    assert.same({ nil, SOURCE .. ": unexpected answer: ledger.node is missing, want a string" },
      { fleet.shape({ status = "ok", at = AT }, SOURCE) })
    assert.same({ nil, SOURCE .. ": unexpected answer: ledger.at is missing, want a string" },
      { fleet.shape({ node = "gpu-x", entries = {} }, SOURCE) })
    local demo = assert(json.decode(render_json.ledger(judge.ledger_of(snapshot.demo(H.core)))))
    demo.node, demo.entries = nil, nil
    assert.same({ nil, SOURCE .. ": unexpected answer: ledger.node is missing, want a string" },
      { fleet.readable(demo, SOURCE) })
    local no_gpu = assert(fleet.shape(assert(json.decode('{"node":"gpu-go","at":"' .. AT .. '","entries":null}')), SOURCE))
    assert.same({ "gpu-go", {} }, { no_gpu.node, no_gpu.entries }) -- an older release's node of no GPU
  end)

  it("sorts the nodes worst first, then by name, an unreachable node as ERROR; the total keeps the fleet's", function()
    local summary = H.fleet_judged()
    local verdicts = {}
    for i, row in ipairs(summary.nodes) do
      verdicts[i] = string.format("%s %s %d %d", row.node, row.worst, row.badFindings, row.errorFindings)
    end
    assert.same({ "gpuz ERROR 0 1", "gpue BAD 1 0", "gpud WARN 0 0" }, verdicts)
    assert.same({ "ERROR", 1, 1 }, { summary.total.worst, summary.total.badFindings, summary.total.errorFindings })
    local rows = { { node = "b", worst = "OK" }, { node = "a", worst = "OK" }, { node = "c", worst = "BAD" },
      { node = "d", worst = "ERROR" }, { node = "a", worst = "WARN" }, { node = "e", worst = "BAD" } }
    local order = {}
    for i, row in ipairs(fleet.sort_worst_first(rows)) do
      order[i] = row.node .. " " .. row.worst
    end
    assert.same({ "d ERROR", "c BAD", "e BAD", "a WARN", "a OK", "b OK" }, order)
  end)

  it("puts every node's findings worst first, an unreachable node as an ERROR", function()
    local _, found = H.fleet_judged()
    local lines = {}
    for i, f in ipairs(found) do
      lines[i] = string.format("%s %s %s", f.level, f.code, f.node)
    end
    assert.same({
      "ERROR source-unavailable gpuz", "BAD unmanaged-tenant gpue", "WARN reserved-idle gpud",
      "OK idle gpue", "OK held gpud",
    }, lines)
    assert.equal("gpuledger at http://10.0.0.9:9877 could not be read: Connection refused", found[1].message)
    local urls = {}
    for i, f in ipairs(found) do
      urls[i] = f.url
    end
    assert.same({ "http://10.0.0.9:9877", "http://10.0.0.5:9877", "http://10.0.0.4:9877", "http://10.0.0.5:9877",
      "http://10.0.0.4:9877" }, urls, "each finding has the address its node was read at")
    local consul_down = fleet.unreachable_row({ node = "consul", url = "http://127.0.0.1:8500", discovery = true },
      "consul http://127.0.0.1:8500: GET /v1/health/service/gpuledger?passing=true: Connection refused")
    assert.equal("the fleet's nodes could not be listed: consul http://127.0.0.1:8500: "
      .. "GET /v1/health/service/gpuledger?passing=true: Connection refused", fleet.unreachable_finding(consul_down).message)
    assert.is_nil(fleet.findings_of(consul_down, {})[1].url, "a failed discovery is no node's address")
  end)

  it("tells apart nodes at two addresses that report one name: rows, findings, places and a WARN", function()
    local _, wire = H.fleet_rows()
    local function rows()
      return {
        fleet.node_row({ node = "10.0.0.4", url = "http://10.0.0.4:9877" }, wire.gpud),
        fleet.node_row({ node = "10.0.0.6", url = "http://10.0.0.6:9877" }, wire.gpud),
        fleet.node_row({ node = "10.0.0.5", url = "http://10.0.0.5:9877" }, wire.gpue),
      }
    end
    local function judged(keep)
      local summary = fleet.summarise(rows())
      local ledgers = {}
      for _, row in ipairs(summary.nodes) do
        ledgers[row] = judge.ledger_of(wire[row.reported or row.node])
      end
      return summary, H.judge_fleet(ruleset.read(H.core, ""), summary, ledgers, nil, keep)
    end
    local summary, report = judged()
    local names = {}
    for i, row in ipairs(summary.nodes) do
      names[i] = row.node
    end
    table.sort(names)
    assert.same({ "gpud (http://10.0.0.4:9877)", "gpud (http://10.0.0.6:9877)", "gpue" }, names)
    assert.equal(6, summary.total.gpus)
    local shared, held = {}, {}
    for _, f in ipairs(report.findings) do
      if f.code == "node-name-shared" then
        shared[#shared + 1] = f
      elseif f.code == "held" then
        held[#held + 1] = f.node .. " " .. f.url
      end
    end
    assert.same({ { level = "WARN", code = "node-name-shared", node = "fleet",
      message = '2 nodes report the name "gpud" (http://10.0.0.4:9877, http://10.0.0.6:9877): '
        .. 'each is listed as "gpud (<address>)"; give each node its own name' } }, shared)
    assert.same({ "gpud (http://10.0.0.4:9877) http://10.0.0.4:9877", "gpud (http://10.0.0.6:9877) http://10.0.0.6:9877" },
      held)
    -- fleet check --json writes each node's findings as it is read, by the
    -- name it reports: its url tells the two apart.
    local checked = json.decode(render_json.fleet_check(AT, select(2, judged(fleet_cmd.keep_text))))
    local checked_held = {}
    for _, f in ipairs(checked.findings) do
      if f.code == "held" then
        checked_held[#checked_held + 1] = f.node .. " " .. f.url
      end
    end
    table.sort(checked_held)
    assert.same({ "gpud http://10.0.0.4:9877", "gpud http://10.0.0.6:9877" }, checked_held)
    local held_group
    for _, group in ipairs(fleet.group_findings(report.findings)) do
      held_group = group.code == "held" and group or held_group
    end
    assert.same({ 2, 2 }, { #held_group.nodes, held_group.gpus })
    local served, kept = judged(fleet_cmd.keep_for_serving)
    local groups = fleet.group_kept(served, kept.kept, kept.fleet_kept, 100)
    for _, group in ipairs(groups) do
      held_group = group.code == "held" and group or held_group
    end
    assert.same({ "gpud (http://10.0.0.4:9877)", "gpud (http://10.0.0.6:9877)" }, held_group.nodes)
    assert.equal(2, held_group.gpus)
    local where = {}
    for i, f in ipairs(held_group.findings) do
      where[i] = f.node
    end
    table.sort(where)
    assert.same({ "gpud (http://10.0.0.4:9877)", "gpud (http://10.0.0.6:9877)" }, where)
  end)

  it("groups the findings by level and code, worst first: how many, on how many GPUs of which nodes", function()
    local found = {
      { level = "WARN", code = "hot", node = "b", index = 0, uuid = "GPU-1", gpu = "gpu0 GPU-1" },
      { level = "BAD", code = "xid-fatal", node = "b", index = 1, uuid = "GPU-2", gpu = "gpu1 GPU-2" },
      { level = "BAD", code = "xid-fatal", node = "a", index = 0, uuid = "GPU-1", gpu = "gpu0 GPU-1" },
      { level = "BAD", code = "xid-fatal", node = "a", index = 0, uuid = "GPU-1", gpu = "gpu0 GPU-1" },
      { level = "BAD", code = "unmanaged-tenant", node = "c", index = 3, uuid = "GPU-3", gpu = "gpu3 GPU-3" },
      { level = "ERROR", code = "source-unavailable", node = "z" },
      { level = "ERROR", code = "source-unavailable", node = "y" },
      { level = "WARN", code = "hot", node = "a", index = 0, uuid = "GPU-1", gpu = "gpu0 GPU-1" },
    }
    local lines = {}
    for i, group in ipairs(fleet.group_findings(found)) do
      lines[i] = string.format("%s %s %d %d %s", group.level, group.code, group.count, group.gpus,
        table.concat(group.nodes, ","))
    end
    assert.same({ "ERROR source-unavailable 2 0 y,z", "BAD xid-fatal 3 2 a,b", "BAD unmanaged-tenant 1 1 c",
      "WARN hot 2 2 a,b" }, lines)
    local groups = fleet.group_findings(found)
    assert.equal(found[3], groups[2].findings[2], "each group keeps its findings in their order")
    assert.same({}, fleet.group_findings {})
  end)
end)
