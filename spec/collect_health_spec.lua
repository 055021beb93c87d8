-- The health collectors with a fake core: the nvidia-smi health query
-- (planned from --help-query-gpu, once per driver version) and the kernel
-- log (journal, then /dev/kmsg, then kern.log, or one of them).
local H = require "helper"
local collect_health = require "gpuledger.collect.health"
local collect_kernel_log = require "gpuledger.collect.kernel_log"

local SOURCE = os.getenv("GPULEDGER_SOURCE_DIR")

local function read(path)
  return assert(H.core.read_file(SOURCE .. "/" .. path, 4 << 20))
end

-- A fake nvidia-smi: its help lists `help`'s fields; the health query
-- answers one row with each asked field's name as its value (driver_version
-- reads `driver`), or fails as the real one when a field is unknown.
local function smi_core(state)
  local fake = { calls = {} }
  function fake.monotonic_ms() return 0 end
  function fake.spawn(argv)
    local flag = argv[2]
    fake.calls[#fake.calls + 1] = flag:match("^[^=]+")
    if flag == "--help-query-gpu" then
      return state.help, "", 0
    end
    local fields = flag:match("=(.*)$")
    local cells = {}
    for name in fields:gmatch("[^,]+") do
      if not state.help:find('"' .. name .. '"', 1, true) and flag:find("^%-%-query%-gpu") then
        return 'Field "' .. name .. '" is not a valid field to query.\n\n', "", 2
      end
      cells[#cells + 1] = name == "driver_version" and state.driver or (name == "pci.bus_id" and "00000000:3B:00.0" or "0")
    end
    if flag:find("^%-%-query%-remapped%-rows") then
      return state.remapped or "ERROR: Option --query-remapped-rows is not recognized.\n", "", state.remapped and 0 or 2
    end
    return table.concat(cells, ", ") .. "\n", "", 0
  end
  fake.parse_csv = H.core.parse_csv
  return fake
end

local NEW_HELP = '"index"\n"uuid"\n"pci.bus_id"\n"driver_version"\n"remapped_rows.pending"\n"gpu_recovery_action"\n'
local OLD_HELP = '"index"\n"uuid"\n"pci.bus_id"\n"driver_version"\n"retired_pages.pending"\n'

describe("collect.health", function()
  it("asks the help once, then only the health query while the driver stays the same", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    local source = collect_health.collect(fake, "smi-a", {})
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "remapped_rows.pending", "gpu_recovery_action" }, source.health.fields)
    source = collect_health.collect(fake, "smi-a", {})
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu" }, fake.calls)
    assert.is_nil(source.remapped_rows)
  end)

  it("asks the help again when the driver changed under it", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    collect_health.collect(fake, "smi-b", {})
    state.driver = "595.71.05"
    local source = collect_health.collect(fake, "smi-b", {})
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu", "--help-query-gpu", "--query-gpu" }, fake.calls)
    assert.equal("595.71.05", source.health.rows[1][4])
  end)

  it("asks the help again when an older driver refuses a field, then leaves it out", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    collect_health.collect(fake, "smi-c", {})
    state.help, state.driver = OLD_HELP, "470.256.02"
    state.remapped = "00000000:3B:00.0, GPU-a, [N/A], [N/A], [N/A], [N/A]\n"
    local source = collect_health.collect(fake, "smi-c", {})
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "retired_pages.pending" }, source.health.fields)
    assert.same({ { "00000000:3B:00.0", "GPU-a", "[N/A]", "[N/A]", "[N/A]", "[N/A]" } }, source.remapped_rows.rows)
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu", "--help-query-gpu", "--query-gpu", "--query-remapped-rows" }, fake.calls)
  end)

  it("reads nothing of the remapped rows from a driver without that query either", function()
    local source = collect_health.collect(smi_core { help = OLD_HELP, driver = "418.0" }, "smi-d", {})
    assert.is_nil(source.remapped_rows)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "retired_pages.pending" }, source.health.fields)
  end)

  it("a help that fails is the health part's error, naming the binary", function()
    local fake = { spawn = function() return nil, "not found" end, parse_csv = H.core.parse_csv, monotonic_ms = function() return 0 end }
    local source = collect_health.collect(fake, "/opt/smi-e", {})
    assert.same({ error = "nvidia-smi help-query-gpu: /opt/smi-e: not found" }, source.health)
  end)
end)

-- A fake core for the kernel log: `journal` is journalctl's stdout (or
-- {nil, why} / {out, err, status}), `kmsg` and `files` what reading gives.
local function log_core(parts)
  local fake = { spawned = {} }
  function fake.spawn(argv, opts)
    fake.spawned[#fake.spawned + 1] = table.concat(argv, " ")
    fake.spawn_opts = opts
    local answer = parts.journal
    if type(answer) == "table" then
      return table.unpack(answer, 1, 3)
    end
    return answer, "", 0
  end
  function fake.read_kmsg(path)
    if parts.kmsg then
      return parts.kmsg
    end
    return nil, path .. ": Operation not permitted"
  end
  function fake.read_file(path)
    local text = (parts.files or {})[path]
    if text then
      return text
    end
    return nil, path .. ": No such file or directory"
  end
  return fake
end

local NOW = 1795939200 -- 2026-11-29T08:00:00Z
local UPTIME = "3469.00 6000.00\n" -- booted at 07:02:11

describe("collect.kernel_log", function()
  it("off reads nothing", function()
    assert.is_nil(collect_kernel_log.collect(log_core {}, "off", "/proc", NOW))
  end)

  it("auto takes the journal first, spawned without a shell, bounded", function()
    local fake = log_core { journal = read("testdata/kernel-log/journal.json") }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.same({ "journalctl -k -b -o json --no-pager" }, fake.spawned)
    assert.same({ timeout_ms = 10000, max_bytes = 64 * 1024 * 1024 }, fake.spawn_opts)
    assert.same({ true, "journal", 3 }, { source.ok, source.via, #source.records })
  end)

  it("auto falls back to /dev/kmsg when the journal shows no kernel message, dating records from the boot", function()
    local fake = log_core { journal = "", kmsg = read("testdata/kernel-log/kmsg.txt"), files = { ["/proc/uptime"] = UPTIME } }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.same({ true, "kmsg", 3 }, { source.ok, source.via, #source.records })
    assert.equal("2026-11-29T09:13:19.570912Z", source.records[1].at)
  end)

  it("auto falls back to kern.log, this boot only", function()
    local fake = log_core { journal = { nil, "not found" },
      files = { ["/var/log/kern.log"] = read("testdata/kernel-log/kern.log"), ["/proc/uptime"] = UPTIME } }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.same({ true, "kern.log", 3 }, { source.ok, source.via, #source.records })
  end)

  it("none readable is an error naming each reader's cause and what to grant", function()
    local fake = log_core { journal = { "", "No journal files were opened due to insufficient permissions.\n", 1 },
      files = { ["/proc/sys/kernel/dmesg_restrict"] = "1\n" } }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.is_false(source.ok)
    assert.equal("kernel log: journalctl -k: exit status 1: No journal files were opened due to insufficient permissions.; "
      .. "/dev/kmsg: Operation not permitted; /var/log/kern.log: No such file or directory — "
      .. "add gpuledger's user to the systemd-journal group, or grant it CAP_SYSLOG (kernel.dmesg_restrict is 1)", source.error)
  end)

  it("journal alone does not fall back", function()
    local fake = log_core { journal = "", kmsg = "4,1,1,-;NVRM: Xid (PCI:0000:3b:00): 79, x\n" }
    local source = collect_kernel_log.collect(fake, "journal", "/proc", NOW)
    assert.is_false(source.ok)
    assert.matches("^kernel log: journalctl %-k: no kernel messages of this boot", source.error)
  end)

  it("a FILE is read as log lines, or as journal JSON; unreadable, it names the file", function()
    local path = SOURCE .. "/testdata/kernel-log/dmesg.txt"
    local source = collect_kernel_log.collect(H.core, path, "/nonexistent", NOW)
    assert.same({ true, "file", path }, { source.ok, source.via, source.path })
    assert.equal(22, #source.records)
    source = collect_kernel_log.collect(H.core, "/nonexistent/kern.log", "/nonexistent", NOW)
    assert.same({ ok = false, via = "file", path = "/nonexistent/kern.log",
      error = "kernel log: /nonexistent/kern.log: No such file or directory" }, source)
  end)
end)
