local H = require "helper"
local pci = require "gpuledger.sources.pci"
local xid = require "gpuledger.sources.xid"
local kernel_log = require "gpuledger.sources.kernel_log"

local function fixture(name)
  return H.testdata("kernel-log/" .. name)
end

local function records(...)
  local list = {}
  for i = 1, select("#", ...) do
    list[i] = { text = select(i, ...) }
  end
  return list
end

describe("pci.bus_key", function()
  it("brings every source's spelling to domain:bus:device", function()
    assert.equal("0000:3b:00", pci.bus_key("00000000:3B:00.0")) -- nvidia-smi
    assert.equal("0000:3b:00", pci.bus_key("PCI:0000:3b:00")) -- Xid line
    assert.equal("0000:3b:00", pci.bus_key("0000:3b:00.0")) -- fallen-off-the-bus line
    assert.equal("0000:3b:00", pci.bus_key("3b:00")) -- no domain
    assert.equal("0000:3b:00", pci.bus_key("00000000:3B:00.0\0\0\0\0\0\0\0\0")) -- Nomad's NUL padding
    assert.equal("0008:01:00", pci.bus_key("PCI:0008:01:00"))
  end)

  it("refuses what is not an address", function()
    for _, bad in ipairs { "", "GPU-0000", "zz:00", "1::2", "1:2:3:4", ":3b:00", false } do
      assert.is_nil(pci.bus_key(bad), tostring(bad))
    end
  end)
end)

describe("xid.parse", function()
  it("reads an Xid line with PCI:, pid and name", function()
    local events = xid.parse(records("NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!"))
    assert.same({ {
      xid = 119, bus = "0000:9b:00", pid = 2024380, process = "nvidia-smi",
      message = "Timeout after 6s of waiting for RPC response from GPU4 GSP!",
    } }, events)
  end)

  it("reads an unknown owner, no owner at all, and the old form without PCI:", function()
    local events = xid.parse(records(
      "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus.",
      "NVRM: Xid (0000:03:00): 14, Channel 00000001"))
    assert.same({ xid = 79, bus = "0000:05:00", message = "GPU has fallen off the bus." }, events[1])
    assert.same({ xid = 79, bus = "0000:05:00", message = "GPU has fallen off the bus." }, events[2])
    assert.same({ xid = 14, bus = "0000:03:00", message = "Channel 00000001" }, events[3])
  end)

  it("reads MIG instance ids", function()
    local events = xid.parse(records(
      "NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:00): 31, pid=48213, name=python, MMU Fault",
      "NVRM: Xid (PCI:0000:3b:00 GPU-I:02): 43, pid=48213, name=python, Ch 00000010"))
    assert.same({ xid = 31, bus = "0000:3b:00", gi = 2, ci = 0, pid = 48213, process = "python", message = "MMU Fault" }, events[1])
    assert.same({ xid = 43, bus = "0000:3b:00", gi = 2, pid = 48213, process = "python", message = "Ch 00000010" }, events[2])
  end)

  it("reads the NVLink5 unit, Fatal or Nonfatal, and the link", function()
    local events = xid.parse(records(
      "NVRM: Xid (PCI:0008:01:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 08 (0x00000004 0x00000001 0x00000000 0x00000000)",
      "NVRM: Xid (PCI:0008:02:00): 149, NETIR_LINK_EVT/NETIR_LINK_DOWN Fatal XC0 i0 Link 03 (0x00000011 0x00000000 0x00000000 0x00000000)"))
    assert.same({ "RLW_REMAP", false, 8 }, { events[1].unit, events[1].fatal, events[1].link })
    assert.same({ "NETIR_LINK_EVT/NETIR_LINK_DOWN", true, 3 }, { events[2].unit, events[2].fatal, events[2].link })
  end)

  it("reads Xid 79 worded without \"Xid\", on one line or across three", function()
    local events = xid.parse(records(
      "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.",
      "NVRM: The NVIDIA GPU 0000:b3:00.0",
      "NVRM: (PCI ID: 10de:26b5) installed in this system has",
      "NVRM: fallen off the bus and is not responding to commands."))
    assert.same({ xid = 79, bus = "0000:18:00", worded = true, message = "GPU has fallen off the bus" }, events[1])
    assert.same({ xid = 79, bus = "0000:b3:00", worded = true, message = "GPU has fallen off the bus" }, events[2])
    assert.equal(2, #events)
  end)

  it("makes no event of a fallen-off-the-bus line whose address is no PCI address", function()
    local events = xid.parse(records(
      "NVRM: GPU 0000:1e999:00.0: GPU has fallen off the bus.",
      "NVRM: The NVIDIA GPU 0000:18:1e999.0",
      "NVRM: (PCI ID: 10de:26b5) installed in this system has",
      "NVRM: fallen off the bus and is not responding to commands.",
      "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus."))
    assert.same({ { xid = 79, bus = "0000:05:00", message = "GPU has fallen off the bus." } }, events)
    assert.equal(1, #xid.summary(events))
  end)

  it("makes no event of an Xid line whose code is too big for an integer", function()
    assert.same({}, (xid.parse(records("NVRM: Xid (PCI:0000:3b:00): 99999999999999999999999, pid=1, name=x, MMU Fault"))))
  end)

  it("reads a journal message that holds several lines", function()
    local events = xid.parse { { text = "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1e07) installed in this\nNVRM: system has fallen off the bus and is not responding to commands.", at = "2026-11-29T07:00:00Z" } }
    assert.same({ { xid = 79, bus = "0000:01:00", worded = true, message = "GPU has fallen off the bus", at = "2026-11-29T07:00:00Z" } }, events)
  end)

  it("learns the UUID the driver names for a bus", function()
    local _, uuids = xid.parse(records("NVRM: GPU at PCI:0000:81:00: GPU-71dcdf29-68ae-87d1-b57b-86d9f8f01ffc"))
    assert.same({ ["0000:81:00"] = "GPU-71dcdf29-68ae-87d1-b57b-86d9f8f01ffc" }, uuids)
  end)

  it("ignores lines that only look alike", function()
    assert.same({}, (xid.parse(records(
      "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05",
      "NVRM: Xid (not-an-address): 79, GPU has fallen off the bus.",
      "usb 1-1: new high-speed USB device number 2 using xhci_hcd"))))
  end)

  it("reads every shape of a dmesg log", function()
    local events = xid.parse(kernel_log.read_all("text", fixture("dmesg.txt")))
    local seen = {}
    for _, event in ipairs(events) do
      seen[#seen + 1] = string.format("%s %d%s%s", event.bus, event.xid, event.worded and " worded" or "",
        event.repeated and " +" .. event.repeated or "")
    end
    assert.same({
      "0000:3b:00 119", "0000:3b:00 119 +1", "0000:cb:00 13", "0000:cb:00 109",
      "0000:5e:00 31", "0000:5e:00 43", "0000:03:00 14", "0000:86:00 94", "0008:01:00 145", "0008:02:00 149",
      "0000:af:00 79", "0000:af:00 79 worded", "0000:18:00 79 worded", "0000:b3:00 79 worded",
      "0000:05:00 79", "0000:cb:00 45",
    }, seen)
  end)
end)

describe("xid.summary", function()
  it("groups per GPU and code with count, times and the processes seen", function()
    local groups = xid.summary {
      { xid = 119, bus = "0000:3b:00", at = "2026-11-29T07:00:00Z", process = "nvidia-smi", message = "a" },
      { xid = 119, bus = "0000:3b:00", at = "2026-11-29T07:00:06Z", process = "nvidia-smi", message = "b" },
      { xid = 13, bus = "0000:cb:00", message = "c" },
      { xid = 119, bus = "0000:3b:00", at = "2026-11-29T07:00:12Z", process = "python", message = "d" },
    }
    assert.same({
      { bus = "0000:3b:00", xid = 119, count = 3, first = "2026-11-29T07:00:00Z", last = "2026-11-29T07:00:12Z",
        message = "d", processes = { "nvidia-smi", "python" }, places = {} },
      { bus = "0000:cb:00", xid = 13, count = 1, message = "c", processes = {}, places = {} },
    }, groups)
  end)

  it("counts the fallen-off-the-bus line once beside its Xid 79 line, alone when there is none", function()
    local groups = xid.summary(xid.parse(records(
      "NVRM: Xid (PCI:0000:af:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      "NVRM: GPU 0000:af:00.0: GPU has fallen off the bus.",
      "NVRM: GPU 0000:18:00.0: GPU has fallen off the bus.")))
    assert.same({ "0000:af:00", 1, "0000:18:00", 1 }, { groups[1].bus, groups[1].count, groups[2].bus, groups[2].count })
  end)

  it("marks an NVLink5 group fatal when any of its lines said Fatal", function()
    local groups = xid.summary {
      { xid = 145, bus = "0008:01:00", fatal = false, message = "" },
      { xid = 145, bus = "0008:01:00", fatal = true, message = "" },
      { xid = 146, bus = "0008:01:00", fatal = false, message = "" },
    }
    assert.same({ true, false }, { groups[1].fatal, groups[2].fatal })
  end)
end)

describe("xid.describe", function()
  local catalogue = {
    [79] = { class = "reboot", meaning = "GPU has fallen off the bus", action = "reboot" },
    [145] = { class = "reset", nonfatal = "app", meaning = "NVLink5 RLW error", action = "nvlink" },
  }

  it("gives the catalogue's class, meaning and action", function()
    assert.same({ class = "reboot", meaning = "GPU has fallen off the bus", action = "reboot" }, xid.describe(catalogue, { xid = 79 }))
  end)

  it("grades an NVLink5 group by its Fatal word", function()
    assert.equal("reset", xid.describe(catalogue, { xid = 145, fatal = true }).class)
    assert.equal("app", xid.describe(catalogue, { xid = 145, fatal = false }).class)
    assert.equal("reset", xid.describe(catalogue, { xid = 145 }).class) -- no word: the catalogue's class
  end)

  it("makes a code the catalogue lacks an app event to look up", function()
    assert.same({ class = "app", meaning = "an Xid this catalogue does not list", action = "look the code up in NVIDIA's Xid catalogue" },
      xid.describe(catalogue, { xid = 999 }))
  end)
end)
