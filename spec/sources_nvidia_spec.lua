local H = require "helper"
local nvidia = require "gpuledger.sources.nvidia"
local json = require "gpuledger.json"

-- A source as nvidia.collect leaves it, from literal rows.
local function source(parts)
  return {
    ok = true,
    query_gpu = { fields = nvidia.GPU_FIELDS, rows = parts.gpus or { H.smi_row() } },
    tlimit = parts.tlimit,
    slowdown = parts.slowdown,
    compute_apps = parts.apps or { fields = nvidia.APP_FIELDS, rows = {} },
  }
end

local function tlimit(rows)
  return { fields = nvidia.TLIMIT_FIELDS, rows = rows }
end

local function slowdown(rows, group)
  group = group or "clocks_event_reasons"
  return { fields = { "index", group .. ".hw_thermal_slowdown", group .. ".sw_thermal_slowdown" }, rows = rows }
end

local TWO_GPUS = { H.smi_row { index = 0 }, H.smi_row { index = 1 } }

-- A fake core whose spawn answers by the query asked: answers maps a key
-- (main, tlimit, clocks_event_reasons, clocks_throttle_reasons, apps) to
-- stdout text, or to {nil, "error"} / {out, err, status}. Records calls.
local function fake_core(answers)
  local fake = { calls = {} }
  function fake.monotonic_ms()
    return 5000
  end
  function fake.spawn(argv, opts)
    local query = argv[2]
    local key
    if query:find("compute-apps", 1, true) then
      key = "apps"
    elseif query:find("tlimit", 1, true) then
      key = "tlimit"
    elseif query:find("clocks_event_reasons", 1, true) then
      key = "clocks_event_reasons"
    elseif query:find("clocks_throttle_reasons", 1, true) then
      key = "clocks_throttle_reasons"
    else
      key = "main"
    end
    fake.calls[#fake.calls + 1] = key
    fake.last_argv, fake.last_opts = argv, opts
    local answer = answers[key]
    if answer == nil then
      return nil, "exec: not supported by this fake"
    elseif type(answer) == "table" then
      return table.unpack(answer, 1, 3)
    end
    return answer, "", 0
  end
  fake.parse_csv = H.core.parse_csv
  return fake
end

local MAIN = "0, GPU-aaaa1111-0000-4000-8000-000000000000, NVIDIA L4, 00000000:01:00.0, 2048, 23034, 41, 12, 61, 38.42, 3, 59.9\n"
  .. "1, GPU-bbbb2222-0000-4000-8000-000000000000, Tesla T4, 00000000:02:00.0, 0, 15360, 0, 0, 31, 9.87, 0, 0\n"
local APPS = "GPU-aaaa1111-0000-4000-8000-000000000000, 4242, 2048, /usr/bin/HandBrakeCLI -i secret.mkv\n"
  .. "GPU-aaaa1111-0000-4000-8000-000000000000, 5151, 1024, ffmpeg -i /data/clients/acme/match.mp4\n"
  .. "GPU-bbbb2222-0000-4000-8000-000000000000, 6060, 48, /usr/local/bin/python3\n"

describe("gpuledger.sources.nvidia", function()
  describe("value rules", function()
    it("integers: [N/A], [Not Supported], N/A and empty are 0", function()
      for _, raw in ipairs { "[N/A]", "[Not Supported]", "N/A", "", "  " } do
        assert.equal(0, nvidia.int_value(raw), raw)
      end
    end)

    it("integers: trimmed, floats truncated, garbage 0", function()
      assert.equal(61, nvidia.int_value(" 61 "))
      assert.equal(3, nvidia.int_value("3.9"))
      assert.equal(-3, nvidia.int_value("-3.9"))
      assert.equal(0, nvidia.int_value("hot"))
      assert.equal(0, nvidia.int_value(nil))
      assert.is_true(math.type(nvidia.int_value("41.0")) == "integer")
    end)

    it("floats: parsed, [N/A] and garbage 0", function()
      assert.equal(38.42, nvidia.float_value(" 38.42"))
      assert.equal(0, nvidia.float_value("[N/A]"))
      assert.equal(0, nvidia.float_value("[Not Supported]"))
      assert.equal(0, nvidia.float_value("x"))
      assert.is_true(math.type(nvidia.float_value("12")) == "float")
    end)
  end)

  describe("process_binary", function()
    local cases = {
      { "/usr/bin/HandBrakeCLI -i secret.mkv", "HandBrakeCLI" },
      { "ffmpeg -i /data/x.mp4", "ffmpeg" },
      { "ffmpeg -i /data/clients/acme/match.mp4", "ffmpeg" },
      { "/usr/local/bin/python3", "python3" },
      { "./gpu_burn", "gpu_burn" },
      { "  python3\t-m train  ", "python3" },
      { "[Insufficient Permissions]", "[Insufficient Permissions]" },
      { "", "" },
    }
    for _, case in ipairs(cases) do
      it(string.format("%q is %q", case[1], case[2]), function()
        assert.equal(case[2], nvidia.process_binary(case[1]))
      end)
    end
  end)

  describe("read", function()
    it("turns rows into GPU records named as in the ledger", function()
      local gpus, processes, errors = nvidia.read(source {
        gpus = { { "0", " GPU-x", " NVIDIA L4", "00000000:01:00.0", "2048", "23034", "41", "12", "61", "38.42", "3", "59.9" } },
      })
      assert.same({}, errors)
      assert.same({}, processes)
      assert.same({
        index = 0, uuid = "GPU-x", model = "NVIDIA L4", busId = "00000000:01:00.0",
        memoryUsedMiB = 2048, memoryTotalMiB = 23034, utilizationPct = 41, memoryUtilizationPct = 12,
        temperatureC = 61, powerW = 38.42, encoderSessions = 3, encoderAverageFps = 59.9,
      }, gpus[1])
    end)

    it("reads [N/A] fields as 0", function()
      local gpus = nvidia.read(source {
        gpus = { { "0", "GPU-x", "NVIDIA L4", "b", "[N/A]", "[Not Supported]", "N/A", "", "[N/A]", "[N/A]", "[N/A]", "[N/A]" } },
      })
      local g = gpus[1]
      assert.same({ 0, 0, 0, 0, 0, 0, 0, 0 }, { g.memoryUsedMiB, g.memoryTotalMiB, g.utilizationPct,
        g.memoryUtilizationPct, g.temperatureC, g.powerW, g.encoderSessions, g.encoderAverageFps })
    end)

    it("an empty answer is zero GPUs and no error", function()
      local gpus, processes, errors = nvidia.read(source { gpus = {} })
      assert.same({}, gpus)
      assert.same({}, processes)
      assert.same({}, errors)
    end)

    it("a short row is an error and NO GPUs at all", function()
      local gpus, _, errors = nvidia.read(source { gpus = { H.smi_row { index = 0 }, { "0", "GPU-a", "L4" } } })
      assert.same({}, gpus)
      assert.equal(1, #errors)
      assert.matches("query%-gpu: expected 12 fields, got 3", errors[1])
    end)

    it("a failed main query is its error and nothing else", function()
      local gpus, processes, errors = nvidia.read({ ok = false, error = "nvidia-smi query-gpu: nvidia-smi: No such file" })
      assert.same({}, gpus)
      assert.same({}, processes)
      assert.same({ "nvidia-smi query-gpu: nvidia-smi: No such file" }, errors)
    end)

    it("no source (not asked) is nothing", function()
      local gpus, processes, errors = nvidia.read(nil)
      assert.same({}, gpus)
      assert.same({}, processes)
      assert.same({}, errors)
    end)

    describe("optional answers", function()
      it("tlimit 0, 4 / 1, [N/A]: gpu0 margin 4, gpu1 unknown", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS, tlimit = tlimit { { "0", " 4" }, { "1", "[N/A]" } } })
        assert.equal(4, gpus[1].thermalMarginC)
        assert.is_nil(gpus[2].thermalMarginC)
      end)

      it("a margin that is not a plain integer is unknown", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS, tlimit = tlimit { { "0", "4.5" }, { "1", "" } } })
        assert.is_nil(gpus[1].thermalMarginC)
        assert.is_nil(gpus[2].thermalMarginC)
      end)

      it("a negative margin is read", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS, tlimit = tlimit { { "0", "-2" }, { "1", "10" } } })
        assert.equal(-2, gpus[1].thermalMarginC)
      end)

      it("an answer of the wrong shape (3 fields for a 2-field query) is ignored whole", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS, tlimit = tlimit { { "0", "4" }, { "1", "5", "6" } } })
        assert.is_nil(gpus[1].thermalMarginC)
        assert.is_nil(gpus[2].thermalMarginC)
      end)

      it("a row of an unknown index (7) is ignored", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS, tlimit = tlimit { { "7", "4" }, { "1", "9" } } })
        assert.is_nil(gpus[1].thermalMarginC)
        assert.equal(9, gpus[2].thermalMarginC)
      end)

      it("slowdown: Not Active, Active is true; both Not Active is false", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS,
          slowdown = slowdown { { "0", "Not Active", "Active" }, { "1", "Not Active", " Not Active" } } })
        assert.is_true(gpus[1].thermalSlowdown)
        assert.is_false(gpus[2].thermalSlowdown)
      end)

      it("slowdown flags must be exactly Active or Not Active, else the row is skipped", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS,
          slowdown = slowdown { { "0", "active", "Not Active" }, { "1", "[N/A]", "Active" } } })
        assert.is_nil(gpus[1].thermalSlowdown)
        assert.is_nil(gpus[2].thermalSlowdown)
      end)

      it("the legacy clocks_throttle_reasons answer is read the same way; the margin stays unknown", function()
        local gpus = nvidia.read(source { gpus = TWO_GPUS,
          slowdown = slowdown({ { "0", "Active", "Not Active" }, { "1", "Not Active", "Not Active" } }, "clocks_throttle_reasons") })
        assert.is_true(gpus[1].thermalSlowdown)
        assert.is_false(gpus[2].thermalSlowdown)
        assert.is_nil(gpus[1].thermalMarginC)
      end)

      it("unsupported optional queries are no error and leave both unknown", function()
        local gpus, _, errors = nvidia.read(source { gpus = TWO_GPUS,
          tlimit = { error = "nvidia-smi tlimit: exit status 2" }, slowdown = { error = "nope" } })
        assert.same({}, errors)
        assert.is_nil(gpus[1].thermalMarginC)
        assert.is_nil(gpus[1].thermalSlowdown)
      end)
    end)

    describe("processes", function()
      it("are cut to the binary, rows under 4 fields skipped", function()
        local _, processes = nvidia.read(source { apps = { fields = nvidia.APP_FIELDS, rows = {
          { "GPU-x", "4242", "2048", "/usr/bin/HandBrakeCLI -i secret.mkv" },
          { "GPU-x", "5151", "12" },
          { "GPU-y", " 6060", " 48", "python3" },
        } } })
        assert.same({
          { gpu_uuid = "GPU-x", pid = 4242, used_memory_mib = 2048, process = "HandBrakeCLI" },
          { gpu_uuid = "GPU-y", pid = 6060, used_memory_mib = 48, process = "python3" },
        }, processes)
      end)

      it("a failed compute-apps query is an error but the GPUs are kept", function()
        local gpus, processes, errors = nvidia.read(source { gpus = TWO_GPUS,
          apps = { error = "nvidia-smi query-compute-apps: nvidia-smi: exit status 9" } })
        assert.equal(2, #gpus)
        assert.same({}, processes)
        assert.same({ "nvidia-smi query-compute-apps: nvidia-smi: exit status 9" }, errors)
      end)
    end)
  end)

  describe("usable_optional", function()
    it("wants rows, each with as many fields as asked", function()
      assert.is_false(nvidia.usable_optional(nil))
      assert.is_false(nvidia.usable_optional({ error = "x" }))
      assert.is_false(nvidia.usable_optional(tlimit {}))
      assert.is_false(nvidia.usable_optional(tlimit { { "0" } }))
      assert.is_true(nvidia.usable_optional(tlimit { { "0", "4" } }))
    end)
  end)

  describe("collect (with a fake core)", function()
    it("runs main, tlimit, clocks_event_reasons and compute-apps, in that order", function()
      local fake = fake_core {
        main = MAIN, tlimit = "0, 4\n1, [N/A]\n",
        clocks_event_reasons = "0, Not Active, Active\n1, Not Active, Not Active\n", apps = APPS,
      }
      local collected = nvidia.collect(fake, "/opt/nvidia-smi")
      assert.same({ "main", "tlimit", "clocks_event_reasons", "apps" }, fake.calls)
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
      nvidia.collect(fake, "/opt/nvidia-smi")
      assert.equal("/opt/nvidia-smi", fake.last_argv[1])
      assert.equal("--format=csv,noheader,nounits", fake.last_argv[3])
      assert.equal(5000 + 10000, fake.last_opts.deadline_ms)
      assert.is_nil(fake.last_opts.timeout_ms)
    end)

    it("says where it looked when the binary is not found", function()
      local in_path = nvidia.collect(fake_core { main = { nil, "not found" } }, "nvidia-smi")
      assert.equal("nvidia-smi query-gpu: nvidia-smi: not found in PATH (--nvidia-smi names the binary)", in_path.error)
      local by_path = nvidia.collect(fake_core { main = { nil, "not found" } }, "/opt/bin/nvidia-smi")
      assert.equal("nvidia-smi query-gpu: /opt/bin/nvidia-smi: not found", by_path.error)
    end)

    it("asks the main query for the 12 fields in SPEC order", function()
      local fake = fake_core {}
      local argv
      fake.spawn = function(a) argv = a return nil, "no" end
      nvidia.collect(fake, "nvidia-smi")
      assert.equal("--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,"
        .. "utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps", argv[2])
    end)

    it("falls back to clocks_throttle_reasons when clocks_event_reasons gives nothing usable", function()
      local fake = fake_core { main = MAIN, clocks_throttle_reasons = "0, Active, Not Active\n1, Not Active, Not Active\n", apps = "" }
      local collected = nvidia.collect(fake, "nvidia-smi")
      assert.same({ "main", "tlimit", "clocks_event_reasons", "clocks_throttle_reasons", "apps" }, fake.calls)
      local gpus, _, errors = nvidia.read(collected)
      assert.same({}, errors)
      assert.is_true(gpus[1].thermalSlowdown)
      assert.is_nil(gpus[1].thermalMarginC)
    end)

    it("falls back too when clocks_event_reasons has the wrong shape", function()
      local fake = fake_core { main = MAIN, clocks_event_reasons = "0, Active\n", clocks_throttle_reasons = "", apps = "" }
      nvidia.collect(fake, "nvidia-smi")
      assert.same({ "main", "tlimit", "clocks_event_reasons", "clocks_throttle_reasons", "apps" }, fake.calls)
    end)

    it("ignores failed optional queries", function()
      local fake = fake_core { main = MAIN, tlimit = { "Field not supported\n", "", 2 }, apps = APPS }
      local collected = nvidia.collect(fake, "nvidia-smi")
      local gpus, processes, errors = nvidia.read(collected)
      assert.same({}, errors)
      assert.equal(2, #gpus)
      assert.equal(3, #processes)
      assert.is_nil(gpus[1].thermalMarginC)
      assert.is_nil(gpus[1].thermalSlowdown)
    end)

    it("a main failure stops everything: one query, an error naming query-gpu", function()
      local fake = fake_core { main = { nil, "posix_spawn: No such file or directory" } }
      local collected = nvidia.collect(fake, "nvidia-smi")
      assert.same({ "main" }, fake.calls)
      assert.is_false(collected.ok)
      local gpus, _, errors = nvidia.read(collected)
      assert.same({}, gpus)
      assert.matches("^nvidia%-smi query%-gpu: ", errors[1])
      assert.matches("No such file", errors[1])
    end)

    it("a main query that exits non-zero is an error with its first line", function()
      local fake = fake_core { main = { "NVIDIA-SMI has failed because it couldn't communicate with the driver\nmore\n", "", 9 } }
      local collected = nvidia.collect(fake, "nvidia-smi")
      assert.is_false(collected.ok)
      assert.matches("^nvidia%-smi query%-gpu: ", collected.error)
      assert.matches("exit status 9", collected.error)
      assert.matches("couldn't communicate", collected.error)
      assert.is_nil(collected.error:find("more", 1, true))
    end)

    it("a short row stops after the main query and reads as an error with no GPUs", function()
      local fake = fake_core { main = "0, GPU-a, L4\n", apps = APPS }
      local collected = nvidia.collect(fake, "nvidia-smi")
      assert.same({ "main" }, fake.calls)
      local gpus, _, errors = nvidia.read(collected)
      assert.same({}, gpus)
      assert.matches("expected 12 fields, got 3", errors[1])
    end)

    it("a compute-apps failure keeps the GPUs", function()
      local fake = fake_core { main = MAIN, apps = { nil, "timed out after 10000 ms" } }
      local gpus, processes, errors = nvidia.read(nvidia.collect(fake, "nvidia-smi"))
      assert.equal(2, #gpus)
      assert.same({}, processes)
      assert.equal(1, #errors)
      assert.matches("^nvidia%-smi query%-compute%-apps: ", errors[1])
    end)

    it("empty compute-apps is zero processes", function()
      local fake = fake_core { main = MAIN, apps = "" }
      local _, processes, errors = nvidia.read(nvidia.collect(fake, "nvidia-smi"))
      assert.same({}, processes)
      assert.same({}, errors)
    end)

    it("process arguments never reach the snapshot", function()
      local fake = fake_core { main = MAIN, apps = APPS }
      local encoded = json.encode(nvidia.collect(fake, "nvidia-smi"))
      assert.is_nil(encoded:find("secret.mkv", 1, true))
      assert.is_nil(encoded:find("acme", 1, true))
      assert.is_nil(encoded:find("/usr/bin", 1, true))
      assert.truthy(encoded:find('"HandBrakeCLI"', 1, true))
    end)

    it("a CSV syntax error of the main query is an error", function()
      local fake = fake_core { main = '0, "GPU-a\n' }
      local collected = nvidia.collect(fake, "nvidia-smi")
      assert.is_false(collected.ok)
      assert.matches("query%-gpu csv", collected.error)
    end)
  end)
end)
