-- Asking nvidia-smi for the MIG slices, through a fake core: -L and -q
-- together, only when a GPU is in MIG mode, within nvidia-smi's deadline,
-- a failure named.
local H = require "helper"
local collect = require "gpuledger.collect.mig"

local DIR = "nvidia/h100-mig-590.48.01/"
local H100 = "GPU-00000000-0000-0000-0000-000000000000"

-- A fake core answering "-L" and "-q" from answers (H.fake_nvidia_core).
local function fake_core(answers)
  return H.fake_nvidia_core(function(argv) return argv[2] end, answers)
end

-- The MIG mode's answer saying the H100 is (or is not) in MIG mode.
local function mode(current)
  return { fields = { "uuid", "mig.mode.current" }, rows = { { H100, current } } }
end

local CAPTURE = { ["-L"] = H.testdata(DIR .. "list.txt"), ["-q"] = H.testdata(DIR .. "query.txt") }

describe("gpuledger.collect.mig (with a fake core)", function()
  it("asks -L and -q together by nvidia-smi's deadline when a GPU is in MIG mode", function()
    local core = fake_core(CAPTURE)
    local source = collect.collect(core, "nvidia-smi", mode("Enabled"), 7000)
    assert.are.same({ { "-L", "-q" } }, core.rounds)
    assert.are.same({ 7000, 7000 }, core.deadlines)
    assert.is_true(source.ok)
    assert.are.same({ H100 }, source.enabled)
    assert.are.equal(4, #source.gpus[1].devices)
    assert.are.same({ 21180, 21181, 21198 }, { source.gpus[1].processes[1].pid, source.gpus[1].processes[2].pid,
      source.gpus[1].processes[3].pid })
  end)

  it("asks nothing when no GPU is in MIG mode, or the driver knows no MIG", function()
    local core = fake_core(CAPTURE)
    assert.is_nil(collect.collect(core, "nvidia-smi", mode("Disabled"), 7000))
    assert.is_nil(collect.collect(core, "nvidia-smi", nil, 7000))
    assert.are.same({}, core.calls)
  end)

  it("a mode that could not be read is the source's error", function()
    local core = fake_core(CAPTURE)
    assert.are.same({ ok = false, binary = "nvidia-smi", error = "nvidia-smi mig-mode: nvidia-smi: timed out after 10s" },
      collect.collect(core, "nvidia-smi", { error = "nvidia-smi mig-mode: nvidia-smi: timed out after 10s" }, 7000))
    assert.are.same({}, core.calls)
  end)

  it("names -q's failure, and its hang, as the source's error, keeping which GPUs are in MIG mode", function()
    local failing = fake_core(H.merge(CAPTURE, { ["-q"] = { "Unable to determine the device handle for GPU0000:00:09.0: Unknown Error\n", "", 15 } }))
    local source = collect.collect(failing, "nvidia-smi", mode("Enabled"), 7000)
    assert.is_false(source.ok)
    assert.are.same({ H100 }, source.enabled)
    assert.are.equal("nvidia-smi -q: nvidia-smi: exit status 15: Unable to determine the device handle for GPU0000:00:09.0: Unknown Error",
      source.error)
    local hanging = fake_core(H.merge(CAPTURE, { ["-q"] = { nil, "timed out after 10000 ms" } }))
    assert.are.equal("nvidia-smi -q: nvidia-smi: timed out after 10000 ms",
      collect.collect(hanging, "nvidia-smi", mode("Enabled"), 7000).error)
  end)

  it("names an answer it cannot read, with the query and the binary that gave it", function()
    local list = fake_core(H.merge(CAPTURE, { ["-L"] = "No devices were found\n" }))
    assert.are.equal("nvidia-smi -L: /usr/bin/nvidia-smi: unexpected answer: no GPU listed",
      collect.collect(list, "/usr/bin/nvidia-smi", mode("Enabled"), 7000).error)
    local query = fake_core(H.merge(CAPTURE, { ["-q"] = "No devices were found\n" }))
    assert.are.equal("nvidia-smi -q: /usr/bin/nvidia-smi: unexpected answer: no GPU section",
      collect.collect(query, "/usr/bin/nvidia-smi", mode("Enabled"), 7000).error)
  end)
end)
