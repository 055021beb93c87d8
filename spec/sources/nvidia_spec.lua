local H = require "helper"
local nvidia = require "gpuledger.sources.nvidia"

-- A source as gpuledger.collect.nvidia leaves it, from literal rows.
local function source(parts)
  return {
    ok = true,
    binary = "/usr/bin/nvidia-smi",
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

describe("gpuledger.sources.nvidia", function()
  describe("value rules", function()
    it("integers: [N/A], [Not Supported], N/A and empty are 0", function()
      for _, raw in ipairs { "[N/A]", "[Not Supported]", "N/A", "", "  " } do
        assert.equal(0, nvidia.int_value(raw), raw)
      end
    end)

    it("integers: trimmed, floats truncated, garbage 0", function()
      assert.equal(61, nvidia.int_value(" 61 "))
      assert.equal(61, nvidia.int_value("\t61\r\n"))
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
      { "[Not Found]", "[Not Found]" },
      { "", "" },
      -- bracketed arguments never show
      { "[python3 --token=hunter2]", "python3" },
      { "[/usr/bin/python3\u{A0}--token=hunter2]", "python3" },
      { "[python3]", "python3" },
      { "[Insufficient Permissions --token=hunter2]", "Insufficient" },
      -- any Unicode white space ends the name
      { "python3\u{A0}--token=hunter2", "python3" },
      { "python3\v--token=hunter2", "python3" },
      { "python3\f--token=hunter2", "python3" },
      { "python3\r--token=hunter2", "python3" },
      { "python3\u{85}--token=hunter2", "python3" },
      { "python3\u{2003}--token=hunter2", "python3" },
      { "python3\u{2028}--token=hunter2", "python3" },
      { "python3\u{202F}--token=hunter2", "python3" },
      { "python3\u{3000}--token=hunter2", "python3" },
      { "python3\u{200B}--token=hunter2", "python3" },
      { "\u{A0}\u{2009}/opt/bin/python3\u{A0}-c x", "python3" },
      -- other UTF-8 stays as it is
      { "/opt/ünïcode/trainér --x", "trainér" },
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

    it("reads [N/A] fields as 0, but utilisation the driver does not report (a GPU in MIG mode) as unknown", function()
      local gpus = nvidia.read(source {
        gpus = { { "0", "GPU-x", "NVIDIA L4", "b", "[N/A]", "[Not Supported]", "[N/A]", "[N/A]", "[N/A]", "[N/A]", "[N/A]", "[N/A]" } },
      })
      local g = gpus[1]
      assert.same({ 0, 0, 0, 0, 0, 0 }, { g.memoryUsedMiB, g.memoryTotalMiB, g.temperatureC, g.powerW,
        g.encoderSessions, g.encoderAverageFps })
      assert.is_nil(g.utilizationPct)
      assert.is_nil(g.memoryUtilizationPct)
    end)

    describe("impossible values", function()
      local function row_with(column, value)
        local row = { "0", "GPU-x", "NVIDIA L4", "b", "2048", "23034", "41", "12", "61", "38.42", "3", "59.9" }
        row[column] = value
        return row
      end
      local cases = {
        { 5, "1e23", "memory.used is 1e23, want 0–16777216" },
        { 5, "-5", "memory.used is -5, want 0–16777216" },
        { 6, "9223372036854775808", "memory.total is 9223372036854775808, want 0–16777216" },
        { 9, "-273", "temperature.gpu is -273, want -40–150" },
        { 9, "1e400", "temperature.gpu is 1e400, want -40–150" },
        { 7, "101", "utilization.gpu is 101, want 0–100" },
        { 10, "1e308", "power.draw is 1e308, want 0–10000" },
        { 11, "-1", "encoder.stats.sessionCount is -1, want 0–100000" },
        { 1, "4096", "index is 4096, want 0–1023" },
      }
      for _, case in ipairs(cases) do
        it(string.format("%s in column %d: an error naming the binary, the GPU, the field and the value, and no number",
          case[2], case[1]), function()
          local gpus, _, errors = nvidia.read(source { gpus = { row_with(case[1], case[2]) } })
          assert.same({ "nvidia-smi query-gpu: /usr/bin/nvidia-smi: GPU " .. (case[1] == 1 and case[2] or "0") .. " (GPU-x): "
            .. case[3] }, errors)
          local g = gpus[1]
          for _, value in ipairs { g.index, g.memoryUsedMiB, g.memoryTotalMiB, g.temperatureC, g.powerW, g.encoderSessions } do
            assert.is_true(value >= -40 and value <= 23034, tostring(value))
          end
        end)
      end

      it("the bounds themselves are values", function()
        local _, _, errors = nvidia.read(source { gpus = { row_with(9, "-40"), row_with(7, "100") } })
        assert.same({}, errors)
      end)

      it("a process of an impossible pid is an error and no process; of impossible memory, an error", function()
        local _, processes, errors = nvidia.read(source {
          apps = { fields = nvidia.APP_FIELDS, rows = {
            { "GPU-x", "99999999999", "10", "python3" }, { "GPU-x", "4242", "-3", "ffmpeg" } } },
        })
        assert.same({
          "nvidia-smi compute-apps: /usr/bin/nvidia-smi: a process of GPU-x: pid is 99999999999, want 1–4194304",
          "nvidia-smi compute-apps: /usr/bin/nvidia-smi: a process of GPU-x: used_memory is -3, want 0–16777216",
        }, errors)
        assert.same({ { gpu_uuid = "GPU-x", pid = 4242, used_memory_mib = 0, process = "ffmpeg" } }, processes)
      end)

      it("a process whose pid is no number is an error naming the binary and left out; the other processes stay", function()
        local apps = source {
          apps = { fields = nvidia.APP_FIELDS, rows = {
            { "GPU-x", "4242", "10", "python3" }, { "GPU-x", "4x2", "10", "ffmpeg" }, { "GPU-x", "5151", "20", "HandBrakeCLI" } } },
        }
        apps.binary = "/opt/nvidia-smi"
        local _, processes, errors = nvidia.read(apps)
        assert.same({ "nvidia-smi compute-apps: /opt/nvidia-smi: a process of GPU-x: pid is 4x2, want 1–4194304" }, errors)
        assert.same({ 4242, 5151 }, { processes[1].pid, processes[2].pid })
        assert.equal(2, #processes)
      end)

      it("a process whose pid or memory the driver does not report is kept, read as 0", function()
        local _, processes, errors = nvidia.read(source {
          apps = { fields = nvidia.APP_FIELDS, rows = { { "GPU-x", "[N/A]", " 1e3 ", "python3" }, { "GPU-x", " 42 ", "N/A", "ffmpeg" } } },
        })
        assert.same({}, errors)
        assert.same({
          { gpu_uuid = "GPU-x", pid = 0, used_memory_mib = 1000, process = "python3" },
          { gpu_uuid = "GPU-x", pid = 42, used_memory_mib = 0, process = "ffmpeg" },
        }, processes)
      end)

      it("an impossible thermal margin is an error, the margin unknown", function()
        local gpus, _, errors = nvidia.read(source { gpus = { row_with(1, "0") }, tlimit = tlimit { { "0", "-5000" } } })
        assert.same({ "nvidia-smi tlimit: /usr/bin/nvidia-smi: GPU 0 (GPU-x): temperature.gpu.tlimit is -5000, want -200–200" },
          errors)
        assert.is_nil(gpus[1].thermalMarginC)
      end)
    end)

    it("an empty answer is zero GPUs and no error", function()
      local gpus, processes, errors = nvidia.read(source { gpus = {} })
      assert.same({}, gpus)
      assert.same({}, processes)
      assert.same({}, errors)
    end)

    it("a short row is an error naming the query and the binary, and NO GPUs at all", function()
      local short = source { gpus = { H.smi_row { index = 0 }, { "0", "GPU-a", "L4" } } }
      short.binary = "/usr/bin/nvidia-smi"
      local gpus, _, errors = nvidia.read(short)
      assert.same({}, gpus)
      assert.same({ "nvidia-smi query-gpu: /usr/bin/nvidia-smi: row 2 has 3 fields, want 12" }, errors)
    end)

    it("a row with more fields than asked is an error, never read shifted; NO GPUs at all", function()
      local long = H.smi_row { index = 1 }
      table.insert(long, 4, "extra")
      local gpus, processes, errors = nvidia.read(source { gpus = { H.smi_row { index = 0 }, long } })
      assert.same({}, gpus)
      assert.same({}, processes)
      assert.same({ "nvidia-smi query-gpu: /usr/bin/nvidia-smi: row 2 has 13 fields, want 12" }, errors)
    end)

    it("an error of a replayed snapshot that names no binary says so, rather than guess one", function()
      local unnamed = source { gpus = { H.smi_row { index = 0, used = "1e23" } } }
      unnamed.binary = nil
      local _, _, errors = nvidia.read(unnamed)
      assert.same({ "nvidia-smi query-gpu: (the snapshot names no binary): GPU 0 (" .. H.UUID0 .. "): memory.used is 1e23, want 0–16777216" }, errors)
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
end)
