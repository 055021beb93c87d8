-- The join on a GPU in MIG mode: each slice a unit of tenancy. The driver's
-- answers are the real H100's in MIG mode (testdata/nvidia/h100-mig-590.48.01:
-- three processes on GPU instance 2, compute instance 0, the 3g.40gb slice)
-- and a layout with a compute-instance split beside a GPU outside MIG
-- (testdata/nvidia/mig-ci-split).
local H = require "helper"
local fleet = require "gpuledger.fleet"
local json = require "gpuledger.json"
local ledger = require "gpuledger.ledger"
local mig = require "gpuledger.sources.mig"
local render_json = require "gpuledger.render.json"

local H100 = "GPU-00000000-0000-0000-0000-000000000000"
local SLICE0 = "MIG-00000000-0000-0000-0000-000000000000" -- 3g.40gb, GI 2 CI 0
local SLICE1 = "MIG-00000001-0000-0000-0000-000000000001" -- 2g.20gb
local TRAIN = "aaaaaaaa-1111-4000-8000-000000000001"
local INFER = "bbbbbbbb-2222-4000-8000-000000000002"

-- The rows of a fixture's CSV answer.
local function rows(path)
  return assert(H.core.parse_csv(H.testdata(path)))
end

-- The mig source collect/mig.lua keeps for a fixture directory.
local function mig_source(dir, enabled)
  local list = assert(mig.parse_list(H.testdata(dir .. "list.txt")))
  local query = assert(mig.parse_query(H.testdata(dir .. "query.txt")))
  return { ok = true, binary = "nvidia-smi", enabled = enabled, gpus = mig.join(list, query, enabled) }
end

-- The Nomad task train/trainer's container, holding the given pids.
local function trainer(visible)
  return H.container { id = H.cid("a"), name = "trainer-" .. TRAIN, labels = H.nomad_labels(TRAIN, "train", "trainer", "ml"),
    env = { "NVIDIA_VISIBLE_DEVICES=" .. visible } }
end

-- The capture's snapshot: its processes in train/trainer's container, the
-- allocations given (default: train/trainer on SLICE0, infer/server on SLICE1).
local function capture_snapshot(parts)
  parts = parts or {}
  local snapshot = H.snapshot {
    gpus = rows("nvidia/h100-mig-590.48.01/query-gpu.csv"),
    apps = rows("nvidia/h100-mig-590.48.01/compute-apps.csv"),
    pids = parts.pids or { [21180] = H.cid("a"), [21181] = H.cid("a"), [21198] = H.cid("a") },
    containers = { trainer(parts.visible or SLICE0) },
    allocations = parts.allocations or {
      H.alloc { id = TRAIN, job = "train", group = "trainer", namespace = "ml", tasks = { trainer = { SLICE0 } } },
      H.alloc { id = INFER, job = "infer", group = "server", namespace = "ml", tasks = { server = { SLICE1 } } },
    },
  }
  snapshot.sources.mig = parts.mig or mig_source("nvidia/h100-mig-590.48.01/", { H100 })
  return snapshot
end

-- "LEVEL code where" of the findings that are not idle.
local function judged(snapshot)
  local found = H.run_rules(snapshot)
  local out = {}
  for _, line in ipairs(H.summary(found)) do
    if not line:find(" idle ", 1, true) then
      out[#out + 1] = line
    end
  end
  return out, found
end

describe("the ledger of a GPU in MIG mode", function()
  it("gives each slice its ids, memory, reservations, tenants and state", function()
    local l = ledger.build(capture_snapshot())
    local gpu = l.entries[1]
    assert.are.equal(4, #gpu.migDevices)
    local s0, s1 = gpu.migDevices[1], gpu.migDevices[2]
    assert.are.same({ SLICE0, 0, "3g.40gb", 2, 0, 11091, 40448, "held" },
      { s0.uuid, s0.index, s0.profile, s0.gpuInstanceId, s0.computeInstanceId, s0.memoryUsedMiB, s0.memoryTotalMiB, s0.state })
    assert.are.equal(1, #s0.tenants)
    assert.are.same({ 21180, 21181, 21198 }, s0.tenants[1].pids)
    assert.are.equal("train", s0.tenants[1].jobName)
    assert.is_true(s0.tenants[1].reserved)
    assert.are.equal(TRAIN, s0.reservations[1].allocId)
    assert.are.same({ "reserved-idle", 0, INFER }, { s1.state, #s1.tenants, s1.reservations[1].allocId })
    assert.are.same({ "free", "free" }, { gpu.migDevices[3].state, gpu.migDevices[4].state })
    assert.are.same({}, gpu.tenants) -- every process is on a slice
    assert.are.same({}, gpu.reservations)
    assert.are.equal("held", gpu.state) -- the GPU's state from its slices: held before reserved-idle
    assert.is_nil(gpu.utilizationPct) -- [N/A] under MIG: unknown, not 0 %
  end)

  it("says held for train/trainer on its slice, reserved-idle for the second reserved slice, and nothing BAD", function()
    local lines, found = judged(capture_snapshot())
    assert.are.same({
      "WARN reserved-idle gpu0/mig1 MIG-00000001 2g.20gb",
      "OK held gpu0/mig0 MIG-00000000 3g.40gb",
    }, lines)
    local held = H.with_code(found, "held")[1]
    assert.are.equal(SLICE0, held.migUuid)
    assert.are.equal("1 tenant(s), all reserved by Nomad, util n/a under MIG", held.message)
    assert.are.equal("reserved by infer/server (alloc bbbbbbbb) but no process or container holds it",
      H.with_code(found, "reserved-idle")[1].message)
  end)

  it("calls a Nomad task on a slice it was not given unreserved-tenant, naming the slice", function()
    local lines, found = judged(capture_snapshot { allocations = {
      H.alloc { id = TRAIN, job = "train", group = "trainer", namespace = "ml", tasks = { trainer = { SLICE1 } } },
    } })
    assert.are.same({
      "BAD unreserved-tenant gpu0/mig0 MIG-00000000 3g.40gb",
      "WARN reserved-idle gpu0/mig1 MIG-00000001 2g.20gb",
    }, lines)
    local finding = H.with_code(found, "unreserved-tenant")[1]
    assert.are.equal(SLICE0, finding.migUuid)
    H.contains("uses this MIG slice but was not allocated it", finding.message)
  end)

  it("calls a container or host process on a slice unmanaged-tenant, naming the slice", function()
    local snapshot = capture_snapshot { pids = { [21180] = { owner = "process", uid = 0, user = "root" },
      [21181] = { owner = "process", uid = 0, user = "root" }, [21198] = { owner = "process", uid = 0, user = "root" } } }
    local lines, found = judged(snapshot)
    assert.are.same("BAD unmanaged-tenant gpu0/mig0 MIG-00000000 3g.40gb", lines[1])
    assert.are.equal(SLICE0, H.with_code(found, "unmanaged-tenant")[1].migUuid)
  end)

  it("places a container without processes by the slice its NVIDIA_VISIBLE_DEVICES names, in the old drivers' form too", function()
    local l = ledger.build(capture_snapshot { pids = {}, visible = "MIG-" .. H100 .. "/3/0" })
    assert.are.equal(1, #l.entries[1].migDevices[2].tenants)
    assert.are.equal("trainer-" .. TRAIN, l.entries[1].migDevices[2].tenants[1].container)
  end)

  it("gives no verdict on processes the driver places on no slice: source-unavailable says what is missing", function()
    local source = mig_source("nvidia/h100-mig-590.48.01/", { H100 })
    source.gpus[1].processes = {} -- -q lists none of them (they started after it answered)
    local lines, found = judged(capture_snapshot { mig = source })
    -- (train/trainer's container names its slice, so holds it still)
    assert.are.same({ "ERROR source-unavailable gpu0 GPU-00000000", "WARN reserved-idle gpu0/mig1 MIG-00000001 2g.20gb",
      "OK held gpu0/mig0 MIG-00000000 3g.40gb" }, lines)
    H.contains("the driver places them on no MIG slice (nvidia-smi -q places them on no GPU and compute instance it lists)",
      H.with_code(found, "source-unavailable")[1].message)
  end)

  it("gives no verdict when -q could not be read: source-unavailable names the query and its cause", function()
    local failed = { ok = false, binary = "nvidia-smi", enabled = { H100 },
      error = "nvidia-smi -q: nvidia-smi: timed out after 10000 ms" }
    local lines, found = judged(capture_snapshot { mig = failed })
    assert.are.same({ "ERROR source-unavailable node", "ERROR source-unavailable gpu0 GPU-00000000" }, lines)
    for _, finding in ipairs(found) do
      assert.is_not_equal("BAD", finding.level)
    end
    H.contains("(nvidia-smi -q: nvidia-smi: timed out after 10000 ms)", H.with_code(found, "source-unavailable")[2].message)
  end)

  it("names the slice, and its tenant, of an Xid line whose GPU and compute instance ids place it there", function()
    local snapshot = capture_snapshot()
    snapshot.sources.kernel_log = { ok = true, via = "file", path = "/var/log/kern.log", records = {
      { text = "NVRM: Xid (PCI:0000:00:09 GPU-I:02 GPU-CI:00): 31, pid=21180, name=memhog, Ch 00000008, intr 10000000. MMU Fault" },
    } }
    local _, found = judged(snapshot)
    local xid = H.with_code(found, "xid-app")[1]
    H.contains("on gpu0/mig0 MIG-00000000 3g.40gb (train/trainer)", xid.message)
    H.contains("— mig0 3g.40gb reserved by train/trainer", xid.message) -- the health finding names every slice's tenancy
  end)

  it("joins on both instance ids where a GPU instance holds two compute instances, beside a GPU outside MIG", function()
    local dir = "nvidia/mig-ci-split/"
    local snapshot = H.snapshot {
      gpus = rows(dir .. "query-gpu.csv"),
      apps = rows(dir .. "compute-apps.csv"),
      pids = { [31001] = { owner = "process", uid = 0 }, [31002] = { owner = "process", uid = 1000 },
        [31003] = { owner = "process", uid = 0 } },
    }
    snapshot.sources.mig = mig_source(dir, { "GPU-5a1ce000-0000-4000-8000-000000000000" })
    local l = ledger.build(snapshot)
    local split, plain = l.entries[1], l.entries[2]
    assert.are.same({ 31001 }, split.migDevices[1].tenants[1].pids)
    assert.are.same({ 31002 }, split.migDevices[2].tenants[1].pids)
    assert.are.same({}, split.migDevices[3].tenants)
    assert.is_nil(plain.migDevices)
    assert.are.same({ 31003 }, plain.tenants[1].pids)
    assert.are.equal(97, plain.utilizationPct)
  end)

  it("is read by the fleet as the node judges it: each slice's state and tenants, the same findings", function()
    local own = ledger.build(capture_snapshot())
    local read = assert(fleet.readable(assert(json.decode(render_json.ledger(own))), "http://gpu-mig:9877/ledger"))
    local gpu, slices = read.entries[1], read.entries[1].migDevices
    assert.are.same({ own.entries[1].state, "held", "reserved-idle" }, { gpu.state, slices[1].state, slices[2].state })
    assert.are.same({ 21180, 21181, 21198 }, slices[1].tenants[1].pids)
    assert.are.same(judged(capture_snapshot()), (judged(read)))
    local row = fleet.node_row({ node = "gpu-mig", url = "http://gpu-mig:9877" }, read)
    assert.are.same({ 1, 1 }, { row.gpus, row.held })
  end)
end)
