-- The node's context (sources/node_context.lua): the driver's and CUDA's
-- versions from nvidia-smi --version (the driver's also from the health
-- query) and Nomad's node from GET /v1/node/:id.
local H = require "helper"
local context = require "gpuledger.sources.node_context"
local ledger_mod = require "gpuledger.ledger"

-- nvidia-smi --version as the 590 driver prints it (testdata/nvidia/h100-80gb-hbm3-590.48.01/version.txt).
local VERSION = "NVIDIA-SMI version  : 590.48.01\nNVML version        : 590.48\nDRIVER version      : 590.48.01\n"
  .. "CUDA Version        : 13.1\n"

local function health(version, driver)
  return { ok = true, binary = "nvidia-smi", version = version,
    health = { fields = { "index", "driver_version" }, rows = { { "0", driver or "590.48.01" } } } }
end

describe("sources.node_context", function()
  it("reads the driver's and CUDA's versions from nvidia-smi --version", function()
    local found, errors = context.read { health = health { text = VERSION } }
    assert.same({ driverVersion = "590.48.01", cudaVersion = "13.1" }, found)
    assert.same({}, errors)
  end)

  it("takes the driver's version from the health query where nvidia-smi has no --version, and no CUDA's", function()
    local old = { error = "nvidia-smi version: nvidia-smi: exit status 2: ERROR: Option --version is not recognized." }
    local found, errors = context.read { health = health(old, "470.256.02") }
    assert.same({ driverVersion = "470.256.02" }, found)
    assert.same({}, errors, "an older driver's answer is no error")
  end)

  it("names a --version that did not answer in time", function()
    local late = { error = "nvidia-smi version: nvidia-smi: timed out after 10000 ms" }
    local _, errors = context.read { health = health(late) }
    assert.same({ late.error }, errors)
  end)

  it("reads Nomad's node, and nothing of one that failed or was not asked", function()
    local node = { ID = "f7476465-4d6e-c0de-26d0-e383c49be941", Name = "gpu-node-07", NodeClass = "", NodePool = "default",
      Datacenter = "dc1" }
    assert.same({ nomadNode = { id = node.ID, name = "gpu-node-07", class = "", pool = "default", datacenter = "dc1" } },
      (context.read { nomad_devices = { ok = true, node = node } }))
    assert.same({}, (context.read { nomad_devices = { ok = false, error = "nomad: HTTP 403", node = node } }))
    assert.same({}, (context.read {}))
  end)

  it("puts them at the top of the ledger, cut as any name from a source is", function()
    local snapshot = H.snapshot { gpus = { H.smi_row { index = 0 } } }
    snapshot.sources.health = health { text = VERSION:gsub("13%.1", string.rep("9", 300)) }
    snapshot.sources.nomad_devices = { ok = true, node_id = "n", devices = {}, node = { ID = "n", Name = "gpud", NodePool = "gpu-pool" } }
    local ledger = ledger_mod.build(snapshot)
    assert.equal("590.48.01", ledger.driverVersion)
    assert.truthy(ledger.cudaVersion:find("…[cut]", 1, true))
    assert.same({ id = "n", name = "gpud", pool = "gpu-pool" }, ledger.nomadNode)
  end)
end)
