-- The kernel log's collector with a fake core: the journal, then /dev/kmsg,
-- then kern.log (auto), one of them, or a FILE; and a log read again and
-- again as it grows (serve), each read giving what a full read gives.
local H = require "helper"
local json = require "gpuledger.json"
local xid = require "gpuledger.sources.xid"
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
      return parts.kmsg, 1
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
  function fake.read_file_from(path, offset, max_bytes)
    local text, why = fake.read_file(path)
    if not text then
      return nil, why
    end
    return text:sub(offset + 1, offset + max_bytes), "1:1", #text
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
    assert.same({ "journalctl -k -b -o json --no-pager --show-cursor" }, fake.spawned)
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
    assert.equal("kernel_log journalctl -k: exit status 1: No journal files were opened due to insufficient permissions.; "
      .. "/dev/kmsg: Operation not permitted; /var/log/kern.log: No such file or directory — "
      .. "add gpuledger's user to the systemd-journal group, or grant it CAP_SYSLOG (kernel.dmesg_restrict is 1)", source.error)
  end)

  it("journal alone does not fall back", function()
    local fake = log_core { journal = "", kmsg = "4,1,1,-;NVRM: Xid (PCI:0000:3b:00): 79, x\n" }
    local source = collect_kernel_log.collect(fake, "journal", "/proc", NOW)
    assert.is_false(source.ok)
    assert.matches("^kernel_log journalctl %-k: no kernel messages of this boot", source.error)
  end)

  it("a FILE is read as log lines, or as journal JSON; unreadable, it names the file", function()
    local path = SOURCE .. "/testdata/kernel-log/dmesg.txt"
    local source = collect_kernel_log.collect(H.core, path, "/nonexistent", NOW)
    assert.same({ true, "file", path }, { source.ok, source.via, source.path })
    assert.equal(21, #source.records) -- 22 lines, of which the third Xid 119 of one process repeats the second
    source = collect_kernel_log.collect(H.core, "/nonexistent/kern.log", "/nonexistent", NOW)
    assert.same({ ok = false, via = "file", path = "/nonexistent/kern.log",
      error = "kernel_log /nonexistent/kern.log: No such file or directory" }, source)
  end)
end)

describe("collect.kernel_log read again and again (serve)", function()
  -- n journal entries from the i-th on, each with its cursor, as
  -- `journalctl -o json` writes them: Xid lines of two codes about one GPU
  -- from three processes, and one other NVRM line.
  local function journal_entries(from, n)
    local lines = {}
    for i = from, from + n - 1 do
      local message = i % 7 == 0 and "NVRM: GPU at PCI:0000:3b:00: GPU-61d0e8b3-0000-0000-0000-000000000000"
        or string.format("NVRM: Xid (PCI:0000:3b:00): %d, pid=%d, name=job%d, Ch 00000008", i % 2 == 0 and 13 or 31,
          1000 + i, i % 3)
      lines[#lines + 1] = json.encode({ __CURSOR = "s=739a;i=" .. i, __REALTIME_TIMESTAMP = tostring(1795935731000000 + i * 1000),
        _TRANSPORT = "kernel", MESSAGE = message })
    end
    return lines
  end

  -- A core whose journalctl answers the entries of world.journal (a list of
  -- JSON lines) as the real one does: after --after-cursor's entry when
  -- given (exit 1 for a cursor it does not know), the cursor line last;
  -- whose /dev/kmsg holds world.kmsg (records "prio,seq,usec,-;text") and
  -- leaves out those up to after_seq; whose proc holds world.boot_id.
  -- Records what each call asked and how many bytes it answered.
  local function world_core(world)
    local fake = { asked = {}, answered = {} }
    function fake.spawn(argv)
      fake.asked[#fake.asked + 1] = table.concat(argv, " ")
      local after = argv[#argv]:match("^%-%-after%-cursor=(.*)$")
      local from = 1
      if after then
        from = nil
        for i, line in ipairs(world.journal) do
          if json.decode(line).__CURSOR == after then
            from = i + 1
          end
        end
        if not from then
          return "", "Failed to seek to cursor: Invalid argument\n", 1
        end
      end
      local out = {}
      for i = from, #world.journal do
        out[#out + 1] = world.journal[i] .. "\n"
      end
      if #world.journal > 0 then
        out[#out + 1] = "-- cursor: " .. json.decode(world.journal[#world.journal]).__CURSOR .. "\n"
      end
      local text = table.concat(out)
      fake.answered[#fake.answered + 1] = #text
      return text, "", 0
    end
    function fake.read_kmsg(_, _, after_seq)
      fake.asked[#fake.asked + 1] = "kmsg after " .. tostring(after_seq)
      local out, last = {}, nil
      for _, record in ipairs(world.kmsg) do
        local seq = tonumber(record:match("^%d+,(%d+),"))
        last = seq
        if not after_seq or seq > after_seq then
          out[#out + 1] = record .. "\n"
        end
      end
      local text = table.concat(out)
      fake.answered[#fake.answered + 1] = #text
      return text, last
    end
    function fake.read_file(path)
      if path == "/proc/uptime" then
        return UPTIME
      elseif path == "/proc/sys/kernel/random/boot_id" then
        return world.boot_id
      end
      return nil, path .. ": No such file or directory"
    end
    return fake
  end

  -- The source a full read of the log as it is now gives.
  local function full_read(world, mode)
    return collect_kernel_log.collect(world_core(world), mode, "/proc", NOW)
  end

  it("reads the journal after its cursor, giving what a full read gives", function()
    local world = { journal = journal_entries(1, 40), boot_id = "6c7c6013\n" }
    local fake, kept = world_core(world), {}
    local source = collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept)
    assert.same(full_read(world, "journal"), source)
    for _, new in ipairs { 25, 0, 3 } do
      for _, line in ipairs(journal_entries(#world.journal + 1, new)) do
        world.journal[#world.journal + 1] = line
      end
      local full = full_read(world, "journal")
      local before = #fake.answered
      source = collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept)
      assert.same(full, source)
      assert.equal("--after-cursor=s=739a;i=" .. (#world.journal - new), fake.asked[#fake.asked]:match("%S+$"))
      assert.is_true(fake.answered[before + 1] < 200 * (new + 1), "only the new entries were answered")
    end
    local groups = xid.summary((xid.parse(source.records)))
    assert.same({ 31, 29, 13, 30 }, { groups[1].xid, groups[1].count, groups[2].xid, groups[2].count })
  end)

  it("reads the journal whole once more when it no longer knows the cursor", function()
    local world = { journal = journal_entries(1, 10), boot_id = "6c7c6013\n" }
    local fake, kept = world_core(world), {}
    collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept)
    world.journal = journal_entries(100, 5) -- vacuumed: the cursor's entry is gone
    local source = collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept)
    assert.same(full_read(world, "journal"), source)
    assert.same({ "journalctl -k -b -o json --no-pager --show-cursor",
      "journalctl -k -b -o json --no-pager --show-cursor --after-cursor=s=739a;i=10",
      "journalctl -k -b -o json --no-pager --show-cursor" }, fake.asked)
  end)

  it("reads /dev/kmsg after its last sequence number; a buffer that starts again is read whole", function()
    local function records(from, n)
      local list = {}
      for seq = from, from + n - 1 do
        list[#list + 1] = string.format("4,%d,%d,-;NVRM: Xid (PCI:0000:3b:00): %d, pid=%d, name=job%d, x", seq, seq * 1000,
          seq % 2 == 0 and 13 or 48, seq, seq % 4)
      end
      return list
    end
    local world = { kmsg = records(0, 30), boot_id = "6c7c6013\n" }
    local fake, kept = world_core(world), {}
    assert.same(full_read(world, "kmsg"), collect_kernel_log.collect(fake, "kmsg", "/proc", NOW, kept))
    for _, record in ipairs(records(30, 5)) do
      world.kmsg[#world.kmsg + 1] = record
    end
    assert.same(full_read(world, "kmsg"), collect_kernel_log.collect(fake, "kmsg", "/proc", NOW, kept))
    assert.same({ "kmsg after nil", "kmsg after 29" }, fake.asked)
    world.kmsg = records(3, 4) -- numbered below the last one read: another buffer
    assert.same(full_read(world, "kmsg"), collect_kernel_log.collect(fake, "kmsg", "/proc", NOW, kept))
    assert.same({ "kmsg after nil", "kmsg after 29", "kmsg after 34", "kmsg after nil" }, fake.asked)
  end)

  it("starts again at a new boot id", function()
    local world = { journal = journal_entries(1, 10), boot_id = "6c7c6013\n" }
    local fake, kept = world_core(world), {}
    collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept)
    world.boot_id, world.journal = "0b0e2b5a\n", journal_entries(50, 3)
    assert.same(full_read(world, "journal"), collect_kernel_log.collect(fake, "journal", "/proc", NOW, kept))
    assert.equal("journalctl -k -b -o json --no-pager --show-cursor", fake.asked[2])
  end)

  describe("a FILE", function()
    local dir, path, file_core
    before_each(function()
      dir = H.tempdir()
      path = dir .. "/kern.log"
      file_core = setmetatable({ reads = 0 }, { __index = H.core })
      function file_core.read_file_from(...)
        file_core.reads = file_core.reads + 1
        return H.core.read_file_from(...)
      end
    end)
    after_each(function()
      H.remove(dir)
      collect_kernel_log.CHUNK = 4 * 1024 * 1024
    end)

    local function append(text)
      local f = assert(io.open(path, "a"))
      f:write(text)
      f:close()
    end

    -- n dmesg lines from the i-th on: Xid lines of two codes, and a boot
    -- banner at line `boot`.
    local function dmesg_lines(from, n, boot)
      local lines = {}
      for i = from, from + n - 1 do
        lines[#lines + 1] = i == boot and "[    0.000000] Linux version 6.1.0 (debian-kernel@lists.debian.org)\n"
          or string.format("[%d.000000] NVRM: Xid (PCI:0000:3b:00): %d, pid=%d, name=job%d, Ch 00000008\n", i,
            i % 5 == 0 and 48 or 13, i, i % 3)
      end
      return table.concat(lines)
    end

    local function check_against_full(kept)
      local full = collect_kernel_log.collect(H.core, path, "/nonexistent", NOW)
      assert.same(full, collect_kernel_log.collect(file_core, path, "/nonexistent", NOW, kept))
      return full
    end

    it("is read from where the last read stopped, a line split across reads and chunks included", function()
      collect_kernel_log.CHUNK = 7 -- every line comes in pieces
      local kept = {}
      append(dmesg_lines(1, 20))
      check_against_full(kept)
      local log = dmesg_lines(21, 30, 40)
      local cut = #dmesg_lines(21, 5) + 30 -- inside the 26th line
      append(log:sub(1, cut))
      check_against_full(kept) -- the line being written counts as a line, as in a full read
      file_core.reads = 0
      append(log:sub(cut + 1))
      local full = check_against_full(kept)
      assert.is_true(file_core.reads <= math.ceil((#log - cut) / 7) + 1, file_core.reads .. " reads: only what is new")
      local groups = xid.summary((xid.parse(full.records)))
      assert.same({ 13, 8 }, { groups[1].xid, groups[1].count }) -- the lines after the boot at line 40 only
    end)

    it("is read from the start once rotated, truncated, or truncated and written anew", function()
      local kept = {}
      append(dmesg_lines(1, 50))
      check_against_full(kept)
      os.rename(path, path .. ".1")
      append(dmesg_lines(51, 3))
      check_against_full(kept)
      H.write(path, dmesg_lines(60, 1))
      check_against_full(kept)
      H.write(path, dmesg_lines(70, 10)) -- the same file, longer than before, other bytes
      local full = check_against_full(kept)
      assert.equal(10, xid.summary((xid.parse(full.records)))[1].count + xid.summary((xid.parse(full.records)))[2].count)
    end)

    it("over MAX_BYTES is refused as a full read refuses it", function()
      local kept = {}
      append(dmesg_lines(1, 10))
      check_against_full(kept)
      local max = collect_kernel_log.MAX_BYTES
      collect_kernel_log.MAX_BYTES = 600
      append(dmesg_lines(11, 20))
      local source = collect_kernel_log.collect(file_core, path, "/nonexistent", NOW, kept)
      collect_kernel_log.MAX_BYTES = max
      assert.same({ false, "kernel_log " .. path .. ": longer than 600 bytes" }, { source.ok, source.error })
      check_against_full(kept)
    end)
  end)
end)
