local H = require "helper"
local gpu_health = require "gpuledger.gpu_health"

local CATALOGUE = {
  [79] = { class = "reboot", meaning = "GPU has fallen off the bus", action = "reboot" },
  [94] = { class = "memory", meaning = "contained memory error", action = "restart the app" },
}

local FIELDS = { "index", "uuid", "pci.bus_id", "remapped_rows.pending", "persistence_mode", "ecc.mode.current" }

-- Sources as the collectors leave them: health rows, kernel log lines,
-- Nomad's devices.
local function sources(parts)
  return {
    health = parts.health ~= false and { ok = true, binary = "/usr/bin/nvidia-smi", health = { fields = FIELDS, rows = parts.health or {
      { "0", H.UUID0, "00000000:01:00.0", "Yes", "Enabled", "[N/A]" },
      { "1", H.UUID1, "00000000:02:00.0", "No", "Disabled", "[Unknown Error]" },
    } } } or nil,
    kernel_log = parts.log ~= false and { ok = true, via = "file", path = "/srv/log/kern.log", records = parts.log or {
      { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4242, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:00:00Z" },
      { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4243, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:30:00Z" },
      { text = "NVRM: GPU at PCI:0000:af:00: GPU-dead0000-0000-4000-8000-000000000000" },
      { text = "NVRM: Xid (PCI:0000:af:00): 79, GPU has fallen off the bus." },
    } } or nil,
    nomad_devices = parts.devices ~= false and { ok = true, address = "http://127.0.0.1:4646", node_id = "node-1",
      devices = parts.devices or { {
      Name = "NVIDIA L4",
      Instances = {
        { ID = H.UUID0, Healthy = true, HealthDescription = "", PciBusID = "00000000:01:00.0" },
        { ID = H.UUID3, Healthy = false, HealthDescription = "no longer detected", PciBusID = "00000000:04:00.0" },
      },
    } } } or nil,
  }
end

local function gpus()
  return { H.gpu { index = 0 }, H.gpu { index = 1 } } -- busIds 00000000:01:00.0, 00000000:02:00.0
end

-- gpu_health.read(snap) with the errors' texts, then the errors as read.
local function read_texts(snap)
  local read, errors = gpu_health.read(snap)
  local texts = {}
  for i, err in ipairs(errors) do
    texts[i] = err.message
  end
  return read, texts, errors
end

describe("gpu_health", function()
  it("attaches each GPU's health record by bus id, without identity fields", function()
    local read, errors = read_texts(sources {})
    assert.same({ "nvidia-smi health: /usr/bin/nvidia-smi: GPU 1 (00000000:02:00.0) could not be read: ecc.mode.current: [Unknown Error]" }, errors)
    local entries = gpus()
    gpu_health.attach(entries, read, CATALOGUE)
    assert.same({ remappedRowsPending = true, persistenceMode = true }, entries[1].health)
    assert.same({ remappedRowsPending = false, persistenceMode = false, unreadable = { "ecc.mode.current: [Unknown Error]" } }, entries[2].health)
  end)

  it("attaches this boot's Xid groups, graded by the catalogue", function()
    local read = gpu_health.read(sources {})
    local entries = gpus()
    gpu_health.attach(entries, read, CATALOGUE)
    assert.same({}, entries[1].xids)
    assert.same({ {
      xid = 94, count = 2, first = "2026-11-29T07:00:00Z", last = "2026-11-29T07:30:00Z",
      message = "Contained: SM (0x1)", processes = { "python3" },
      class = "memory", meaning = "contained memory error", action = "restart the app",
    } }, entries[2].xids)
  end)

  it("attaches how Nomad fingerprinted the device", function()
    local read = gpu_health.read(sources {})
    local entries = gpus()
    gpu_health.attach(entries, read, CATALOGUE)
    assert.same({ healthy = true, healthDescription = "" }, entries[1].nomadDevice)
    assert.is_nil(entries[2].nomadDevice)
  end)

  it("finds the GPUs nvidia-smi no longer lists, from Nomad's devices and from Xid 79", function()
    local read = gpu_health.read(sources {})
    local missing = gpu_health.missing(gpus(), read)
    assert.equal(2, #missing)
    assert.same({ -1, H.UUID3, "NVIDIA L4", "00000000:04:00.0", true }, { missing[1].index, missing[1].uuid, missing[1].model, missing[1].busId, missing[1].missing })
    assert.same({ -1, "GPU-dead0000-0000-4000-8000-000000000000", "", "00000000:AF:00.0" }, { missing[2].index, missing[2].uuid, missing[2].model, missing[2].busId })
    gpu_health.attach(missing, read, CATALOGUE)
    assert.same({ healthy = false, healthDescription = "no longer detected" }, missing[1].nomadDevice)
    assert.equal("reboot", missing[2].xids[1].class)
    assert.is_nil(missing[2].health)
  end)

  it("leaves out what was not read: no health, no xids, no Nomad device", function()
    local read, errors = read_texts(sources { health = false, log = false, devices = false })
    assert.same({}, errors)
    local entries = gpus()
    gpu_health.attach(entries, read, CATALOGUE)
    assert.same({ nil, nil, nil }, { entries[1].health, entries[1].xids, entries[1].nomadDevice })
    assert.same({}, gpu_health.missing(gpus(), read))
  end)

  it("passes on each failed source's error", function()
    local _, errors = read_texts {
      health = { ok = false, error = "nvidia-smi help-query-gpu: nvidia-smi: timed out after 10s" },
      kernel_log = { ok = false, error = "kernel_log journalctl -k: …" },
      nomad_devices = { ok = false, error = "nomad http://127.0.0.1:4646: GET /v1/node/x: 403" },
    }
    assert.same({ "nvidia-smi help-query-gpu: nvidia-smi: timed out after 10s", "kernel_log journalctl -k: …",
      "nomad http://127.0.0.1:4646: GET /v1/node/x: 403" }, errors)
  end)

  it("says which source each error is of, and which GPU an unreadable health cell is of", function()
    local _, _, errors = read_texts {
      health = { ok = false, error = "nvidia-smi help-query-gpu: nvidia-smi: timed out after 10s" },
      kernel_log = { ok = false, error = "kernel_log journalctl -k: …" },
      nomad_devices = { ok = false, error = "nomad http://127.0.0.1:4646: GET /v1/node/x: 403" },
    }
    assert.same({ "health", "kernel_log", "nomad_devices" }, { errors[1].source, errors[2].source, errors[3].source })
    local _, _, unreadable = read_texts(sources {})
    assert.same({ source = "health", gpu = H.UUID1,
      message = "nvidia-smi health: /usr/bin/nvidia-smi: GPU 1 (00000000:02:00.0) could not be read: ecc.mode.current: [Unknown Error]" }, unreadable[1])
  end)

  describe("a wrong-typed row, record or device", function()
    it("is an error naming the kernel log record and field; the other records still count", function()
      local read, errors = read_texts(sources { log = {
        { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4242, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:00:00Z" },
        { at = "2026-11-29T07:10:00Z" },
        { text = 94 },
        { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4243, name=python3, Contained: SM (0x1)", at = 7 },
        { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4244, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:30:00Z" },
      } })
      assert.same({
        "nvidia-smi health: /usr/bin/nvidia-smi: GPU 1 (00000000:02:00.0) could not be read: ecc.mode.current: [Unknown Error]",
        "kernel_log /srv/log/kern.log: unexpected answer: records[2].text is missing, want a string",
        "kernel_log /srv/log/kern.log: unexpected answer: records[3].text is a number, want a string",
        "kernel_log /srv/log/kern.log: unexpected answer: records[4].at is a number, want a string",
      }, errors)
      local entries = gpus()
      gpu_health.attach(entries, read, CATALOGUE)
      assert.same({ 94, 2, "2026-11-29T07:00:00Z", "2026-11-29T07:30:00Z" },
        { entries[2].xids[1].xid, entries[2].xids[1].count, entries[2].xids[1].first, entries[2].xids[1].last })
    end)

    it("is an error naming the health row and cell; the other GPUs' health stays", function()
      local read, errors = read_texts(sources { health = {
        { "0", H.UUID0, "00000000:01:00.0", "Yes", "Enabled", "[N/A]" },
        { "1", H.UUID1, "00000000:02:00.0", "No", 5, "Enabled" },
      } })
      assert.same({ "nvidia-smi health: /usr/bin/nvidia-smi: unexpected answer: health.rows[2][5] is a number, want a string" }, errors)
      local entries = gpus()
      gpu_health.attach(entries, read, CATALOGUE)
      assert.same({ remappedRowsPending = true, persistenceMode = true }, entries[1].health)
      assert.is_nil(entries[2].health)
    end)

    it("is an error for a health answer whose rows come without their fields", function()
      local snap = sources {}
      snap.health.health.fields = nil
      local read, errors = read_texts(snap)
      assert.same({ "nvidia-smi health: /usr/bin/nvidia-smi: unexpected answer: health.fields is missing, want a list" }, errors)
      assert.same({}, read.by_bus)
    end)

    it("is an error naming Nomad's device and field; the other devices stay", function()
      local read, errors = read_texts(sources { devices = {
        { Name = "NVIDIA L4", Instances = {
          { Healthy = true, PciBusID = "00000000:01:00.0" },
          { ID = H.UUID0, Healthy = "true", PciBusID = "00000000:01:00.0" },
          { ID = H.UUID3, Healthy = false, HealthDescription = "no longer detected", PciBusID = "00000000:04:00.0" },
        } },
        { Name = "Tesla T4", Instances = "GPU-x" },
      } })
      assert.same({
        "nomad http://127.0.0.1:4646: unexpected answer: devices[2].Instances is a string, want a list",
        "nomad http://127.0.0.1:4646: unexpected answer: devices[1].Instances[1].ID is missing, want a string",
        "nomad http://127.0.0.1:4646: unexpected answer: devices[1].Instances[2].Healthy is a string, want a boolean",
      }, { errors[2], errors[3], errors[4] })
      local missing = gpu_health.missing(gpus(), read)
      assert.same({ H.UUID3, "GPU-dead0000-0000-4000-8000-000000000000" }, { missing[1].uuid, missing[2].uuid })
    end)

    it("is an error naming a Nomad device that is no object, or null; the other devices and groups stay", function()
      local instances = { 7, { ID = H.UUID1, Healthy = false, HealthDescription = "Xid 79", PciBusID = "00000000:02:00.0" } }
      instances[4] = { ID = H.UUID0, Healthy = true, HealthDescription = "", PciBusID = "00000000:01:00.0" }
      local read, errors = read_texts(sources { devices = { "x", { Name = "NVIDIA L4", Instances = instances } } })
      assert.same({
        "nomad http://127.0.0.1:4646: unexpected answer: devices[1] is a string, want an object",
        "nomad http://127.0.0.1:4646: unexpected answer: devices[2].Instances[1] is a number, want an object",
        "nomad http://127.0.0.1:4646: unexpected answer: devices[2].Instances[3] is null, want an object",
      }, { errors[2], errors[3], errors[4] })
      local entries = gpus()
      gpu_health.attach(entries, read, CATALOGUE)
      assert.same({ healthy = true, healthDescription = "" }, entries[1].nomadDevice)
      assert.same({ healthy = false, healthDescription = "Xid 79" }, entries[2].nomadDevice)
    end)

    it("names the log the kernel log source was read from: the journal command, /dev/kmsg, kern.log or the FILE", function()
      local cases = {
        { { via = "journal" }, "kernel_log journalctl -k" },
        { { via = "kmsg" }, "kernel_log /dev/kmsg" },
        { { via = "kern.log" }, "kernel_log /var/log/kern.log" },
        { { via = "file", path = "/srv/log/kern.log" }, "kernel_log /srv/log/kern.log" },
        { {}, "kernel_log (the snapshot names no log)" }, -- a snapshot written before it kept via
      }
      for _, case in ipairs(cases) do
        local snap = sources { health = false, devices = false, log = { { text = 5 } } }
        snap.kernel_log.via, snap.kernel_log.path = case[1].via, case[1].path
        snap.kernel_log.dropped, snap.kernel_log.oversized = 904, 2
        local _, errors = read_texts(snap)
        assert.same({
          case[2] .. ": unexpected answer: records[1].text is a number, want a string",
          case[2] .. ": 904 NVRM lines of this boot were not read: the log kept more than 4096 records"
            .. " (a GPU's Xid lines of one code count once, with up to 16 processes)",
          case[2] .. ": 2 lines over 64 KiB were not read (no kernel message is that long)",
        }, errors)
      end
    end)

    it("is an error naming a kernel log record that is no object, or null; the records after it still count", function()
      local log = {
        { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4242, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:00:00Z" },
        "NVRM: Xid (PCI:0000:01:00): 94, pid=1, name=x, Contained: SM (0x1)",
      }
      log[4] = { text = "NVRM: Xid (PCI:0000:02:00): 94, pid=4244, name=python3, Contained: SM (0x1)", at = "2026-11-29T07:30:00Z" }
      local read, errors = read_texts(sources { log = log })
      assert.same({
        "kernel_log /srv/log/kern.log: unexpected answer: records[2] is a string, want an object",
        "kernel_log /srv/log/kern.log: unexpected answer: records[3] is null, want an object",
      }, { errors[2], errors[3] })
      local entries = gpus()
      gpu_health.attach(entries, read, CATALOGUE)
      assert.same({}, entries[1].xids)
      assert.same({ 94, 2, "2026-11-29T07:30:00Z" }, { entries[2].xids[1].xid, entries[2].xids[1].count, entries[2].xids[1].last })
    end)
  end)
end)
