-- nvidia-smi's queries, run through a fake core: what is asked, how, and
-- what reaches the snapshot (docs/sources.md#nvidia-smi).
local H = require "helper"
local collect = require "gpuledger.collect.nvidia"
local json = require "gpuledger.json"
local nvidia = require "gpuledger.sources.nvidia"

-- The key of the query argv asks (main, tlimit, clocks_event_reasons,
-- clocks_throttle_reasons, apps), for H.fake_nvidia_core.
local function query_key(argv)
  local query = argv[2]
  if query:find("compute-apps", 1, true) then
    return "apps"
  elseif query:find("tlimit", 1, true) then
    return "tlimit"
  elseif query:find("clocks_event_reasons", 1, true) then
    return "clocks_event_reasons"
  elseif query:find("clocks_throttle_reasons", 1, true) then
    return "clocks_throttle_reasons"
  end
  return "main"
end

-- A fake core answering each query from answers (H.fake_nvidia_core).
local function fake_core(answers)
  return H.fake_nvidia_core(query_key, answers)
end

local MAIN = "0, GPU-aaaa1111-0000-4000-8000-000000000000, NVIDIA L4, 00000000:01:00.0, 2048, 23034, 41, 12, 61, 38.42, 3, 59.9\n"
  .. "1, GPU-bbbb2222-0000-4000-8000-000000000000, Tesla T4, 00000000:02:00.0, 0, 15360, 0, 0, 31, 9.87, 0, 0\n"
local APPS = "GPU-aaaa1111-0000-4000-8000-000000000000, 4242, 2048, /usr/bin/HandBrakeCLI -i secret.mkv\n"
  .. "GPU-aaaa1111-0000-4000-8000-000000000000, 5151, 1024, ffmpeg -i /data/clients/acme/match.mp4\n"
  .. "GPU-bbbb2222-0000-4000-8000-000000000000, 6060, 48, /usr/local/bin/python3\n"

-- What the node asks of nvidia-smi, the health query aside: the main query
-- and the process list, then the thermal queries, by one deadline of
-- collect.TIMEOUT_MS from now (as collect/node.lua gives them).
local function nvidia_answers(core, binary)
  local deadline_ms = core.monotonic_ms() + collect.TIMEOUT_MS
  local source = collect.collect(core, binary, deadline_ms)
  collect.collect_thermal(core, source, deadline_ms)
  return source
end

describe("gpuledger.collect.nvidia (with a fake core)", function()
  it("runs main, compute-apps (who holds the GPUs before any optional query), tlimit and clocks_event_reasons, in that order", function()
    local fake = fake_core {
      main = MAIN, tlimit = "0, 4\n1, [N/A]\n",
      clocks_event_reasons = "0, Not Active, Active\n1, Not Active, Not Active\n", apps = APPS,
    }
    local collected = nvidia_answers(fake, "/opt/nvidia-smi")
    assert.same({ "main", "apps", "tlimit", "clocks_event_reasons" }, fake.calls)
    assert.is_true(collected.ok)
    local gpus, processes, errors = nvidia.read(collected)
    assert.same({}, errors)
    assert.equal(2, #gpus)
    assert.equal(4, gpus[1].thermalMarginC)
    assert.is_true(gpus[1].thermalSlowdown)
    assert.same({ "HandBrakeCLI", "ffmpeg", "python3" }, { processes[1].process, processes[2].process, processes[3].process })
  end)

  it("asks each query with the binary, no shell, CSV without header or units, one 10 s deadline for all", function()
    local fake = fake_core { main = "" }
    nvidia_answers(fake, "/opt/nvidia-smi")
    assert.equal("/opt/nvidia-smi", fake.last_argv[1])
    assert.equal("--format=csv,noheader,nounits", fake.last_argv[3])
    assert.equal(5000 + 10000, fake.last_opts.deadline_ms)
    assert.is_nil(fake.last_opts.timeout_ms)
  end)

  it("takes a bare name found nowhere in PATH for a node without a driver: no GPU, no error", function()
    local fake = fake_core { main = { nil, "not found" } }
    local absent = nvidia_answers(fake, "nvidia-smi")
    assert.is_true(absent.ok)
    assert.is_false(absent.installed)
    assert.is_nil(absent.error)
    assert.same({}, absent.query_gpu.rows)
    assert.same({}, absent.compute_apps.rows)
    assert.same({ "main" }, fake.calls)
  end)

  it("says where it looked when a named binary is not found", function()
    local _, in_path = collect.query(fake_core { main = { nil, "not found" } }, "nvidia-smi", "query-gpu", "--query-gpu", { "index" }, 0)
    assert.equal("nvidia-smi query-gpu: nvidia-smi: not found in PATH (--nvidia-smi names the binary)", in_path)
    local by_path = nvidia_answers(fake_core { main = { nil, "not found" } }, "/opt/bin/nvidia-smi")
    assert.equal("nvidia-smi query-gpu: /opt/bin/nvidia-smi: not found", by_path.error)
  end)

  it("asks the main query for the 12 fields in their order", function()
    local fake = fake_core {}
    local argv
    fake.spawn = function(a) argv = a return nil, "no" end
    nvidia_answers(fake, "nvidia-smi")
    assert.equal("--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,"
      .. "utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps", argv[2])
  end)

  it("falls back to clocks_throttle_reasons when clocks_event_reasons gives nothing usable", function()
    local fake = fake_core { main = MAIN, clocks_throttle_reasons = "0, Active, Not Active\n1, Not Active, Not Active\n", apps = "" }
    local collected = nvidia_answers(fake, "/opt/smi-legacy")
    assert.same({ "main", "apps", "tlimit", "clocks_event_reasons", "clocks_throttle_reasons" }, fake.calls)
    local gpus, _, errors = nvidia.read(collected)
    assert.same({}, errors)
    assert.is_true(gpus[1].thermalSlowdown)
    assert.is_nil(gpus[1].thermalMarginC)
  end)

  it("falls back too when clocks_event_reasons has the wrong shape", function()
    local fake = fake_core { main = MAIN, clocks_event_reasons = "0, Active\n", clocks_throttle_reasons = "", apps = "" }
    nvidia_answers(fake, "/opt/smi-short")
    assert.same({ "main", "apps", "tlimit", "clocks_event_reasons", "clocks_throttle_reasons" }, fake.calls)
  end)

  it("asks a binary's slowdown flags by the name that answered last, both again once it stops", function()
    local legacy = "0, Active, Not Active\n1, Not Active, Not Active\n"
    local fake = fake_core { main = MAIN, clocks_throttle_reasons = legacy, apps = "" }
    nvidia_answers(fake, "/opt/smi-remembers")
    fake.calls = {}
    nvidia_answers(fake, "/opt/smi-remembers")
    assert.same({ "main", "apps", "tlimit", "clocks_throttle_reasons" }, fake.calls)
    -- a new driver: the legacy name is gone, the current one answers
    local new_driver = fake_core { main = MAIN, clocks_event_reasons = legacy, apps = "" }
    local collected = nvidia_answers(new_driver, "/opt/smi-remembers")
    assert.same({ "main", "apps", "tlimit", "clocks_throttle_reasons", "clocks_event_reasons" }, new_driver.calls)
    assert.is_true(nvidia.read(collected)[1].thermalSlowdown)
    new_driver.calls = {}
    nvidia_answers(new_driver, "/opt/smi-remembers")
    assert.same({ "main", "apps", "tlimit", "clocks_event_reasons" }, new_driver.calls)
  end)

  it("ignores failed optional queries", function()
    local fake = fake_core { main = MAIN, tlimit = { "Field not supported\n", "", 2 }, apps = APPS }
    local collected = nvidia_answers(fake, "nvidia-smi")
    local gpus, processes, errors = nvidia.read(collected)
    assert.same({}, errors)
    assert.equal(2, #gpus)
    assert.equal(3, #processes)
    assert.is_nil(gpus[1].thermalMarginC)
    assert.is_nil(gpus[1].thermalSlowdown)
  end)

  it("a main failure stops everything: one query, an error naming query-gpu", function()
    local fake = fake_core { main = { nil, "posix_spawn: No such file or directory" } }
    local collected = nvidia_answers(fake, "nvidia-smi")
    assert.same({ "main" }, fake.calls)
    assert.is_false(collected.ok)
    local gpus, _, errors = nvidia.read(collected)
    assert.same({}, gpus)
    assert.matches("^nvidia%-smi query%-gpu: ", errors[1])
    assert.matches("No such file", errors[1])
  end)

  it("a main query that exits non-zero is an error with its first line", function()
    local fake = fake_core { main = { "NVIDIA-SMI has failed because it couldn't communicate with the driver\nmore\n", "", 9 } }
    local collected = nvidia_answers(fake, "nvidia-smi")
    assert.is_false(collected.ok)
    assert.matches("^nvidia%-smi query%-gpu: ", collected.error)
    assert.matches("exit status 9", collected.error)
    assert.matches("couldn't communicate", collected.error)
    assert.is_nil(collected.error:find("more", 1, true))
  end)

  it("a short row stops after the main query and reads as an error with no GPUs", function()
    local fake = fake_core { main = "0, GPU-a, L4\n", apps = APPS }
    local collected = nvidia_answers(fake, "nvidia-smi")
    assert.same({ "main" }, fake.calls)
    local gpus, _, errors = nvidia.read(collected)
    assert.same({}, gpus)
    assert.matches("expected 12 fields, got 3", errors[1])
  end)

  it("a compute-apps failure keeps the GPUs", function()
    local fake = fake_core { main = MAIN, apps = { nil, "timed out after 10000 ms" } }
    local gpus, processes, errors = nvidia.read(nvidia_answers(fake, "nvidia-smi"))
    assert.equal(2, #gpus)
    assert.same({}, processes)
    assert.equal(1, #errors)
    assert.matches("^nvidia%-smi query%-compute%-apps: ", errors[1])
  end)

  it("empty compute-apps is zero processes", function()
    local fake = fake_core { main = MAIN, apps = "" }
    local _, processes, errors = nvidia.read(nvidia_answers(fake, "nvidia-smi"))
    assert.same({}, processes)
    assert.same({}, errors)
  end)

  it("process arguments never reach the snapshot", function()
    local fake = fake_core { main = MAIN, apps = APPS }
    local encoded = json.encode(nvidia_answers(fake, "nvidia-smi"))
    assert.is_nil(encoded:find("secret.mkv", 1, true))
    assert.is_nil(encoded:find("acme", 1, true))
    assert.is_nil(encoded:find("/usr/bin", 1, true))
    assert.truthy(encoded:find('"HandBrakeCLI"', 1, true))
  end)

  it("a CSV syntax error of the main query is an error", function()
    local fake = fake_core { main = '0, "GPU-a\n' }
    local collected = nvidia_answers(fake, "nvidia-smi")
    assert.is_false(collected.ok)
    assert.matches("query%-gpu csv", collected.error)
  end)
end)
