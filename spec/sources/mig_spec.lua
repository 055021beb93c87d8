-- Reading the driver's MIG answers: -L and -q of a real H100 in MIG mode
-- (testdata/nvidia/h100-mig-590.48.01), and a layout with a compute-instance
-- split and a GPU outside MIG beside it (testdata/nvidia/mig-ci-split).
local H = require "helper"
local mig = require "gpuledger.sources.mig"

local CAPTURE = "nvidia/h100-mig-590.48.01/"
local SPLIT = "nvidia/mig-ci-split/"
local H100 = "GPU-00000000-0000-0000-0000-000000000000"

describe("gpuledger.sources.mig", function()
  it("reads the slices of the capture's -L", function()
    local gpus = assert(mig.parse_list(H.testdata(CAPTURE .. "list.txt")))
    assert.are.equal(1, #gpus)
    assert.are.equal(0, gpus[1].index)
    assert.are.equal(H100, gpus[1].uuid)
    assert.are.same({
      { index = 0, profile = "3g.40gb", uuid = "MIG-00000000-0000-0000-0000-000000000000" },
      { index = 1, profile = "2g.20gb", uuid = "MIG-00000001-0000-0000-0000-000000000001" },
      { index = 2, profile = "1g.10gb", uuid = "MIG-00000002-0000-0000-0000-000000000002" },
      { index = 3, profile = "1g.10gb", uuid = "MIG-00000003-0000-0000-0000-000000000003" },
    }, gpus[1].devices)
  end)

  it("reads the instance ids and memory of each slice, and each process's instance ids, from the capture's -q", function()
    local gpus = assert(mig.parse_query(H.testdata(CAPTURE .. "query.txt")))
    assert.are.equal(1, #gpus)
    assert.are.equal("00000000:00:09.0", gpus[1].busId)
    assert.are.equal(H100, gpus[1].uuid)
    assert.are.same({ index = 0, gpuInstanceId = 2, computeInstanceId = 0, memoryUsedMiB = 11091, memoryTotalMiB = 40448 },
      gpus[1].devices[1])
    assert.are.same({ index = 3, gpuInstanceId = 10, computeInstanceId = 0, memoryUsedMiB = 9, memoryTotalMiB = 9984 },
      gpus[1].devices[4])
    assert.are.same({
      { pid = 21180, gpuInstanceId = 2, computeInstanceId = 0 },
      { pid = 21181, gpuInstanceId = 2, computeInstanceId = 0 },
      { pid = 21198, gpuInstanceId = 2, computeInstanceId = 0 },
    }, gpus[1].processes)
  end)

  it("reads 'Processes : None' of the idle capture as no process", function()
    local gpus = assert(mig.parse_query(H.testdata(CAPTURE .. "idle/query.txt")))
    assert.are.same({}, gpus[1].processes)
    assert.are.equal(26, gpus[1].devices[1].memoryUsedMiB)
  end)

  it("places the capture's three processes on the 3g.40gb slice", function()
    local list = mig.parse_list(H.testdata(CAPTURE .. "list.txt"))
    local query = mig.parse_query(H.testdata(CAPTURE .. "query.txt"))
    local record = mig.join(list, query, { H100 })[1]
    assert.are.equal(4, #record.devices)
    for _, pid in ipairs { 21180, 21181, 21198 } do
      assert.are.equal("MIG-00000000-0000-0000-0000-000000000000", mig.slice_of(record, pid).uuid)
    end
    assert.is_nil(mig.slice_of(record, 4242)) -- a pid -q does not list
  end)

  it("joins on both instance ids where one GPU instance holds two compute instances", function()
    local list = assert(mig.parse_list(H.testdata(SPLIT .. "list.txt")))
    local query = assert(mig.parse_query(H.testdata(SPLIT .. "query.txt")))
    local records = mig.join(list, query, { "GPU-5a1ce000-0000-4000-8000-000000000000" })
    assert.are.equal(1, #records)
    local record = records[1]
    assert.are.same({ 1, 1, 2 }, { record.devices[1].gpuInstanceId, record.devices[2].gpuInstanceId, record.devices[3].gpuInstanceId })
    assert.are.same({ 0, 1, 0 }, { record.devices[1].computeInstanceId, record.devices[2].computeInstanceId, record.devices[3].computeInstanceId })
    assert.are.equal("MIG-5a1ce001-0000-4000-8000-000000000000", mig.slice_of(record, 31001).uuid)
    assert.are.equal("MIG-5a1ce002-0000-4000-8000-000000000000", mig.slice_of(record, 31002).uuid)
    -- the process of the GPU outside MIG has no instance ids
    local other = query[2]
    assert.are.same({ { pid = 31003 } }, other.processes)
  end)

  it("takes the instance ids from an old driver's MIG-GPU-<parent>/<gi>/<ci> UUID when -q has none", function()
    local list = assert(mig.parse_list(
      "GPU 0: A100-SXM4-40GB (UUID: GPU-aaaa)\n  MIG 1g.5gb Device 0: (UUID: MIG-GPU-aaaa/7/0)\n"))
    local record = mig.join(list, {}, { "GPU-aaaa" })[1]
    assert.are.same({ 7, 0 }, { record.devices[1].gpuInstanceId, record.devices[1].computeInstanceId })
  end)

  it("says why -L or -q text cannot be read", function()
    assert.are.same({ nil, "no GPU listed" }, { mig.parse_list("No devices were found\n") })
    assert.are.same({ nil, "no GPU section" }, { mig.parse_query("garbage\n") })
    local _, why = mig.parse_list("  MIG 1g.5gb Device 0: (UUID: MIG-x)\n")
    assert.matches("a MIG device before any GPU", why)
  end)

  it("reads which GPUs are in MIG mode from a --query-gpu answer", function()
    local answer = { fields = { "index", "uuid", "mig.mode.current" },
      rows = { { "0", "GPU-a", "Enabled" }, { "1", "GPU-b", "Disabled" }, { "2", "GPU-c", "[N/A]" } } }
    assert.are.same({ "GPU-a" }, mig.enabled(answer))
    assert.is_nil(mig.enabled({ fields = { "uuid" }, rows = {} }))
  end)

  it("names a slice by its UUID, the old drivers' form or <gpu>:<device>", function()
    local slice = { uuid = "MIG-1111", index = 1, gpuInstanceId = 3, computeInstanceId = 0 }
    local parent = { uuid = "GPU-aaaa", index = 0 }
    assert.is_true(mig.names({ "MIG-1111" }, slice, parent))
    assert.is_true(mig.names({ "MIG-GPU-aaaa/3/0" }, slice, parent))
    assert.is_true(mig.names({ "0:1" }, slice, parent))
    assert.is_false(mig.names({ "GPU-aaaa", "MIG-2222", "all" }, slice, parent))
  end)
end)
