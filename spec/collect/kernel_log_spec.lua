-- The kernel log's collector with a fake core: the journal, then /dev/kmsg,
-- then kern.log (auto), one of them, or a FILE.
local H = require "helper"
local collect_kernel_log = require "gpuledger.collect.kernel_log"

local SOURCE = os.getenv("GPULEDGER_SOURCE_DIR")

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
    local fake = log_core { journal = H.testdata("kernel-log/journal.json") }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.same({ "journalctl -k -b -o json --no-pager" }, fake.spawned)
    assert.same({ timeout_ms = 3000, max_bytes = 64 * 1024 * 1024 }, fake.spawn_opts)
    assert.same({ true, "journal", 3 }, { source.ok, source.via, #source.records })
  end)

  it("auto falls back to /dev/kmsg when the journal shows no kernel message, dating records from the boot", function()
    local fake = log_core { journal = "", kmsg = H.testdata("kernel-log/kmsg.txt"), files = { ["/proc/uptime"] = UPTIME } }
    local source = collect_kernel_log.collect(fake, "auto", "/proc", NOW)
    assert.same({ true, "kmsg", 3 }, { source.ok, source.via, #source.records })
    assert.equal("2026-11-29T09:13:19.570912Z", source.records[1].at)
  end)

  it("auto falls back to kern.log, this boot only", function()
    local fake = log_core { journal = { nil, "not found" },
      files = { ["/var/log/kern.log"] = H.testdata("kernel-log/kern.log"), ["/proc/uptime"] = UPTIME } }
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
    assert.equal(21, #source.records) -- 22 lines, of which the third Xid 119 of one process repeats the second
    source = collect_kernel_log.collect(H.core, "/nonexistent/kern.log", "/nonexistent", NOW)
    assert.same({ ok = false, via = "file", path = "/nonexistent/kern.log",
      error = "kernel log: /nonexistent/kern.log: No such file or directory" }, source)
  end)
end)
