-- Collecting this boot's NVRM lines from the kernel log (docs/health.md#xid-events-the-kernel-log):
-- --kernel-log auto tries the journal (journalctl -k -b, spawned without a
-- shell, bounded), then /dev/kmsg (read without blocking), then
-- /var/log/kern.log; journal, kmsg or a FILE of log lines asks for one.
-- None readable is a failed source that says what to grant.
--
-- A caller that reads the log again and again (serve) keeps a table across
-- its calls: the reader of the log read last (sources/kernel_log.lua, which
-- keeps per GPU and Xid code what a full read would, never every line) and
-- where it stopped: journalctl's cursor, /dev/kmsg's last sequence number,
-- a file's offset and identity. Each call then reads only what is new, and
-- gives what a full read would. Another boot, a rotated or truncated file,
-- or a position the source no longer takes starts the reader again from
-- the start.
local json = require "gpuledger.json"
local kernel_log = require "gpuledger.sources.kernel_log"

local M = {}

M.JOURNALCTL = { "journalctl", "-k", "-b", "-o", "json", "--no-pager", "--show-cursor" }
M.KMSG = kernel_log.ORIGINS.kmsg
M.KERN_LOG = kernel_log.ORIGINS["kern.log"]
M.TIMEOUT_MS = 3000 -- journalctl -k reads an indexed journal; past it, auto reads /dev/kmsg
M.MAX_BYTES = 64 * 1024 * 1024 -- the most one call reads of a log
M.CHUNK = 4 * 1024 * 1024 -- a file is read this much at a time
-- The last bytes read of a file, read again next time: the same bytes
-- there mean the same file, grown (not truncated and written anew).
local CHECK_BYTES = 64

-- The boot time (seconds since the epoch) from <proc_root>/uptime, or nil.
local function boot_time(core, proc_root, now)
  local uptime = core.read_file(proc_root .. "/uptime", 4096)
  local seconds = uptime and tonumber(uptime:match("^(%d+%.?%d*)"))
  return seconds and now - seconds
end

-- The first line of a command's complaint, kept short.
local function first_line(s)
  return (s:match("^%s*([^\n]*)") or ""):sub(1, 200)
end

-- Each reader feeds state.reader what its log holds past state's position
-- and moves the position on. Returns true, or nil, why it could not and
-- whether reading from the start may do (the log did not take the
-- position).

-- The journal after state.cursor (all of this boot without one).
local function read_journal(core, state)
  local argv = { table.unpack(M.JOURNALCTL) }
  if state.reader.cursor then
    argv[#argv + 1] = "--after-cursor=" .. state.reader.cursor
  end
  local out, err, status = core.spawn(argv, { timeout_ms = M.TIMEOUT_MS, max_bytes = M.MAX_BYTES })
  if not out then
    return nil, kernel_log.ORIGINS.journal .. ": " .. err
  elseif status ~= 0 then
    local said = first_line(err) ~= "" and first_line(err) or first_line(out)
    return nil, string.format("%s: exit status %s%s", kernel_log.ORIGINS.journal, tostring(status),
      said ~= "" and (": " .. said) or ""), state.reader.cursor ~= nil
  end
  kernel_log.feed(state.reader, out) -- the cursor line at its end moves the cursor
  return true
end

-- The kernel's buffer after the record numbered state.seq (all without it).
-- A buffer whose last record is numbered below state.seq is another one.
local function read_kmsg(core, state)
  local out, last_seq = core.read_kmsg(M.KMSG, M.MAX_BYTES, state.seq)
  if not out then
    return nil, last_seq
  elseif state.seq and (last_seq or -1) < state.seq then
    return nil, M.KMSG .. ": the buffer starts again", true
  end
  state.seq = last_seq or state.seq
  kernel_log.feed(state.reader, out)
  return true
end

-- A file from state.offset on, a chunk at a time, MAX_BYTES at most. The
-- file must be the one read before: the same identity, at least as long,
-- with the same last bytes.
local function read_file(core, state, path)
  local again = state.check or ""
  local want = M.CHUNK + #again
  local text, id, size = core.read_file_from(path, state.offset - #again, want)
  if not text then
    return nil, id
  elseif state.id and (id ~= state.id or size < state.offset or text:sub(1, #again) ~= again) then
    return nil, path .. ": another file than the one read before", true
  end
  state.id = id
  local read, got = 0, text:sub(#again + 1)
  while true do
    read = read + #got
    if read > M.MAX_BYTES then
      return nil, string.format("%s: longer than %d bytes", path, M.MAX_BYTES)
    end
    kernel_log.feed(state.reader, got)
    state.offset = state.offset + #got
    state.check = #got >= CHECK_BYTES and got:sub(-CHECK_BYTES) or ((state.check or "") .. got):sub(-CHECK_BYTES)
    if #text < want then
      return true
    end
    want = M.CHUNK
    text, id = core.read_file_from(path, state.offset, want)
    if not text then
      return nil, id
    elseif id ~= state.id then
      return nil, path .. ": another file than the one read before", true
    end
    got = text
  end
end

-- The readers of --kernel-log's names: the kind of log each reads, how,
-- and the words before what its log's contents are blamed for.
local READERS = {
  journal = { kind = "journal", read = read_journal, says = kernel_log.ORIGINS.journal .. ": " },
  kmsg = { kind = "kmsg", read = read_kmsg },
  ["kern.log"] = { kind = "text", read = function(core, state) return read_file(core, state, M.KERN_LOG) end },
}

-- The reader of a FILE given with --kernel-log (dated by its own lines only).
local function file_reader(path)
  return { kind = "file", undated = true, read = function(core, state) return read_file(core, state, path) end }
end

-- A state to read a log with reader from its start: a reader of its kind
-- (dated from boot) and the position at the start.
local function fresh_state(reader, boot)
  return { reader = kernel_log.reader(reader.kind, not reader.undated and boot or nil), offset = 0 }
end

-- Reads the log with reader, from where kept_state stopped when given (and
-- from the start once more when the log no longer takes that position).
-- Returns the state read into, with the reader's records, dropped and
-- oversized (kernel_log.result); or nil and why.
local function read_log(core, reader, kept_state, boot)
  local state = kept_state or fresh_state(reader, boot)
  local ok, why, from_start = reader.read(core, state)
  if not ok and from_start then
    state = fresh_state(reader, boot)
    ok, why = reader.read(core, state)
  end
  if not ok then
    return nil, why
  end
  local records, dropped, oversized = kernel_log.result(state.reader)
  if not records then
    return nil, (reader.says or "") .. dropped
  end
  return state, records, dropped, oversized
end

-- What to grant when nothing could be read, with the dmesg_restrict setting.
local function grant_hint(core, proc_root)
  local restrict = core.read_file(proc_root .. "/sys/kernel/dmesg_restrict", 64)
  restrict = restrict and restrict:match("%d")
  return string.format("add gpuledger's user to the systemd-journal group, or grant it CAP_SYSLOG%s",
    restrict == "1" and " (kernel.dmesg_restrict is 1)" or "")
end

-- Collects the kernel log source with core as mode says ("auto", "journal",
-- "kmsg", "off" or a file path), now being core.now(). kept: nil for a read
-- of the whole log, or a table the caller keeps across calls (empty at
-- first) in which each call leaves where it stopped, so that the next
-- reads only what is new (the module's header); a new boot id in
-- <proc_root>/sys/kernel/random/boot_id empties it. Returns nil for "off",
-- else {ok=true, via, records, dropped?, oversized?} (records: [{text, at?,
-- repeated?}], NVRM lines only, bounded as sources/kernel_log.lua says;
-- dropped: how many lines did not fit, when any; oversized: how many were
-- too long to be read, when any) or {ok=false, via, error} (error: each
-- log tried and why it could not be read, "kernel_log <log>: <cause>; …",
-- as the source's other errors name it: sources/kernel_log.lua).
function M.collect(core, mode, proc_root, now, kept)
  if mode == "off" then
    return nil
  end
  kept = kept or {}
  local boot_id = core.read_file(proc_root .. "/sys/kernel/random/boot_id", 64)
  if kept.boot_id ~= boot_id then
    kept.via, kept.state, kept.boot_id = nil, nil, boot_id
  end
  local boot = kept.state and kept.state.reader.boot or boot_time(core, proc_root, now)
  local order = mode == "auto" and { "journal", "kmsg", "kern.log" } or { mode }
  local reasons = {}
  for _, via in ipairs(order) do
    local state, records, dropped, oversized = read_log(core, READERS[via] or file_reader(via),
      kept.via == via and kept.state or nil, boot)
    if state then
      kept.via, kept.state = via, state
      return { ok = true, via = READERS[via] and via or "file", path = not READERS[via] and via or nil,
               records = json.array(records), dropped = dropped > 0 and dropped or nil,
               oversized = oversized > 0 and oversized or nil }
    end
    reasons[#reasons + 1] = records
  end
  kept.via, kept.state = nil, nil
  local error = "kernel_log " .. table.concat(reasons, "; ")
  if mode ~= "journal" and mode ~= "auto" and mode ~= "kmsg" then
    return { ok = false, via = "file", path = mode, error = error }
  end
  return { ok = false, via = mode, error = error .. " — " .. grant_hint(core, proc_root) }
end

return M
