local H = require "helper"
local clock = require "gpuledger.clock"
local kernel_log = require "gpuledger.sources.kernel_log"

local function fixture(name)
  return H.testdata("kernel-log/" .. name)
end

local function texts(records)
  local list = {}
  for i, record in ipairs(records) do
    list[i] = record.text
  end
  return list
end

describe("kernel_log: the journal reader", function()
  it("keeps the NVRM messages with their time, a message of bytes included", function()
    local records = assert(kernel_log.read_all("journal", fixture("journal.json")))
    assert.same({
      { text = "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", at = "2026-11-29T07:45:00.563405Z" },
      { text = "NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.", at = "2026-11-29T07:45:00.56342Z" },
      { text = "NVRM: Xid (PCI:0000:3b:00): 48, pid=99, name=caf\xe9, DBE (0x1)", at = "2026-11-29T07:46:40Z" },
    }, records)
  end)

  it("calls a journal with no kernel message of this boot unreadable", function()
    for _, output in ipairs { "", "-- No entries --\n" } do
      local records, why = kernel_log.read_all("journal", output)
      assert.is_nil(records)
      assert.equal("no kernel messages of this boot (the journal is not readable by this user)", why)
    end
  end)

  it("names bytes that are no JSON records as such, not as a journal it may not read", function()
    local noise = string.rep("\x8f\x01garbage \xff", 400)
    local records, why = kernel_log.read_all("journal", noise)
    assert.is_nil(records)
    assert.equal(string.format("answered %d bytes that are not JSON records", #noise), why)
  end)

  it("reads no line over MAX_LINE, counts it, and reads the records around it", function()
    local xid = '{"MESSAGE":"NVRM: Xid (PCI:0000:3b:00): 48, pid=99, name=python3, DBE (0x1)","__REALTIME_TIMESTAMP":"1764402400000000"}\n'
    local huge = '{"MESSAGE":"NVRM: ' .. string.rep("x", kernel_log.MAX_LINE) .. '"}\n'
    local records, dropped, oversized = kernel_log.read_all("journal", xid .. huge .. xid)
    assert.equal(2, #records)
    assert.equal(0, dropped)
    assert.equal(1, oversized)
    local _, why = kernel_log.read_all("journal", huge)
    assert.equal(string.format("answered %d bytes that are not JSON records (1 lines over 64 KiB)", #huge), why)
    records, _, oversized = kernel_log.read_all("text", "[1.0] " .. string.rep("y", kernel_log.MAX_LINE + 1) .. "\n[2.0] NVRM: x\n")
    assert.equal(1, #records)
    assert.equal(1, oversized)
  end)

  it("keeps no line but NVRM ones", function()
    local records = kernel_log.read_all("journal", '{"MESSAGE":"Linux version 6.1.0","__REALTIME_TIMESTAMP":"1"}\n')
    assert.same({}, records)
  end)
end)

describe("kernel_log: the kmsg reader", function()
  it("keeps the kernel's own NVRM records, dated from boot, unescaped; never a line user space wrote", function()
    local boot = clock.parse_time("2026-11-29T07:00:00Z")
    local records = kernel_log.read_all("kmsg", fixture("kmsg.txt"), boot)
    assert.same({
      { text = "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", at = "2026-11-29T09:11:08.570912Z" },
      { text = "NVRM: GPU 0000:05:00.0: GPU has fallen off the bus.", at = "2026-11-29T09:11:08.571001Z" },
      { text = "NVRM: Xid (PCI:0000:3b:00): 31, pid=48213, name=python worker, Ch 0000000a, MMU Fault", at = "2026-11-29T09:11:40Z" },
    }, records)
  end)

  it("leaves records undated when the boot time is not known", function()
    local records = kernel_log.read_all("kmsg", fixture("kmsg.txt"))
    assert.is_nil(records[1].at)
    assert.equal(3, #records)
  end)
end)

describe("kernel_log: the text reader", function()
  it("reads only this boot of a kern.log that spans a reboot", function()
    local records = kernel_log.read_all("text", fixture("kern.log"))
    assert.same({
      "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:16:20 UTC 2024",
      "NVRM: Xid (PCI:0000:5e:00): 63, pid=4242, name=python3, Row remapper: New row marked for remapping, reset gpu to activate.",
      "NVRM: Xid (PCI:0000:5e:00): 94, pid=4242, name=python3, Contained: SM (0x1). RST: No, D-RST: No",
    }, texts(records))
    assert.equal("2026-11-29T07:40:00.25Z", records[2].at)
  end)

  it("drops lines dated before the boot even without a boot line", function()
    local rotated = fixture("kern.log"):gsub("[^\n]*Linux version[^\n]*\n", "")
    local records = kernel_log.read_all("text", rotated, clock.parse_time("2026-11-29T07:02:11Z"))
    assert.equal(3, #records)
    assert.matches("^NVRM: loading", records[1].text)
  end)

  it("reads syslog's undated stamps by the boot line alone", function()
    assert.same({ "NVRM: Xid (PCI:0000:5e:00): 63, pid=4242, name=python3, Row remapper: New row marked for remapping, reset gpu to activate." },
      texts(kernel_log.read_all("text", fixture("kern-syslog.log"))))
  end)

  it("dates dmesg's seconds since boot when the boot is known", function()
    local records = kernel_log.read_all("text", "[ 1843.200000] NVRM: Xid (PCI:0000:3b:00): 119, x\n", clock.parse_time("2026-11-29T07:00:00Z"))
    assert.same({ { text = "NVRM: Xid (PCI:0000:3b:00): 119, x", at = "2026-11-29T07:30:43.2Z" } }, records)
  end)

  it("starts again at journalctl's boot separator", function()
    local records = kernel_log.read_all("text", "NVRM: Xid (PCI:0000:3b:00): 79, old\n-- Boot 6c7c6013a26343b29e964691ff25d04c --\nNVRM: Xid (PCI:0000:3b:00): 31, new\n")
    assert.same({ "NVRM: Xid (PCI:0000:3b:00): 31, new" }, texts(records))
  end)
end)

describe("a garbled time in the kernel log", function()
  local XID = "NVRM: Xid (PCI:0000:3b:00): 119, x"

  it("leaves the record undated, never raising, whichever reader met it", function()
    local boot = clock.parse_time("2026-11-29T07:00:00Z")
    for _, records in ipairs {
      kernel_log.read_all("journal", '{"MESSAGE":"' .. XID .. '","__REALTIME_TIMESTAMP":"99999999999999999999999"}\n'),
      kernel_log.read_all("journal", '{"MESSAGE":"' .. XID .. '","__REALTIME_TIMESTAMP":"1e999"}\n'),
      kernel_log.read_all("journal", '{"MESSAGE":"' .. XID .. '","__REALTIME_TIMESTAMP":-1}\n'),
      kernel_log.read_all("kmsg", "4,1,99999999999999999999999,-;" .. XID .. "\n", boot),
      (kernel_log.read_all("text", "[99999999999999999999999.5] " .. XID .. "\n", boot)),
    } do
      assert.same({ { text = XID } }, records)
    end
  end)
end)

describe("kernel_log: the file reader", function()
  it("reads journal JSON lines as the journal, anything else as log lines", function()
    assert.equal(3, #kernel_log.read_all("file", fixture("journal.json")))
    assert.equal(3, #kernel_log.read_all("file", fixture("kern.log")))
  end)
end)

describe("what the readers keep of a log that holds many lines", function()
  local xid = require "gpuledger.sources.xid"

  -- n dmesg lines of Xid code on bus, the i-th at second 100 + i, naming
  -- the process name_of(i).
  local function xid_lines(n, bus, code, name_of)
    local lines = {}
    for i = 1, n do
      lines[i] = string.format("[%d.000000] NVRM: Xid (PCI:%s): %d, pid=%d, name=%s, Ch 00000008", 100 + i, bus, code,
        1000 + i, name_of(i))
    end
    return table.concat(lines, "\n") .. "\n"
  end

  it("keeps of one GPU's Xid lines of one code the first, each process's first and the last, counting them all", function()
    local boot = clock.parse_time("2026-11-29T07:00:00Z")
    local output = xid_lines(30000, "0000:3b:00", 13, function(i) return "job" .. i % 3 end)
      .. xid_lines(10, "0000:5e:00", 48, function() return "train" end)
    local records, dropped = kernel_log.read_all("text", output, boot)
    assert.equal(0, dropped)
    assert.is_true(#records <= 8, #records .. " records")
    local groups = xid.summary((xid.parse(records)))
    assert.same({ "0000:3b:00", 13, 30000, { "job1", "job2", "job0" }, clock.format_time(boot + 101),
      clock.format_time(boot + 30100) },
      { groups[1].bus, groups[1].xid, groups[1].count, groups[1].processes, groups[1].first, groups[1].last })
    assert.same({ "0000:5e:00", 48, 10, { "train" } }, { groups[2].bus, groups[2].xid, groups[2].count, groups[2].processes })
  end)

  it("names the first MAX_PROCESSES processes of one GPU and code and the last line's, and counts every line", function()
    local records = kernel_log.read_all("text", xid_lines(1000, "0000:3b:00", 31, function(i) return "p" .. i end))
    local groups = xid.summary((xid.parse(records)))
    assert.equal(1000, groups[1].count)
    assert.equal(kernel_log.MAX_PROCESSES + 1, #groups[1].processes)
    assert.equal("p1000", groups[1].processes[#groups[1].processes])
  end)

  it("keeps a Fatal NVLink5 line among Nonfatal ones", function()
    local line = "NVRM: Xid (PCI:0008:01:00): 145, RLW_COL0 %s Link 03 (0x00000001 0x00000000)"
    local lines = {}
    for i = 1, 50 do
      lines[i] = string.format(line, i == 25 and "Fatal" or "Nonfatal")
    end
    local groups = xid.summary((xid.parse((kernel_log.read_all("text", table.concat(lines, "\n"))))))
    assert.same({ 50, true }, { groups[1].count, groups[1].fatal })
  end)

  it("keeps at most MAX_RECORDS records and counts the lines past them, in every reader", function()
    local lines, journal, kmsg = {}, {}, {}
    for i = 1, kernel_log.MAX_RECORDS + 10 do
      lines[i] = string.format("NVRM: Xid (PCI:%04x:3b:00): 13, pid=1, name=a, x", i)
      journal[i] = '{"MESSAGE":"' .. lines[i] .. '"}'
      kmsg[i] = "4," .. i .. ",1000,-;" .. lines[i]
    end
    for _, read in ipairs {
      { kernel_log.read_all("text", table.concat(lines, "\n")) },
      { kernel_log.read_all("journal", table.concat(journal, "\n")) },
      { kernel_log.read_all("kmsg", table.concat(kmsg, "\n")) },
    } do
      assert.same({ kernel_log.MAX_RECORDS, 10 }, { #read[1], read[2] })
    end
  end)
end)
