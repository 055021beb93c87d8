-- Kernel log text as each reader gets it, turned into this boot's NVRM
-- records {text, at?, repeated?} (docs/sources.md#the-kernel-log):
-- journalctl's JSON lines, the records of /dev/kmsg, and plain lines as
-- dmesg, journalctl -k or /var/log/kern.log print them. Only lines from
-- "NVRM:" on are kept: they are all the health view reads, and no other
-- line reaches the snapshot.
--
-- What is kept is bounded, however many lines the log holds: of the Xid
-- lines about one GPU and code, the first, the first naming each process
-- (up to MAX_PROCESSES names), and the last, whose `repeated` counts the
-- lines before it that it stands for; every other NVRM line as it is; at
-- most MAX_RECORDS records in all. A reader (M.reader) is fed the log's
-- bytes as they come, at once or a part at a time (serve feeds it what is
-- new at each refresh), and gives (M.result) what reading them all at once
-- gives: the records, how many lines did not fit (dropped, 0 on any real
-- node) and how many were longer than MAX_LINE (oversized, no line of a
-- real log), which the health view names.
local clock = require "gpuledger.clock"
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"
local xid = require "gpuledger.sources.xid"

local M = {}

M.MAX_RECORDS = 4096
M.MAX_PROCESSES = 16
-- The longest line read: a kernel message is under 1 KiB, a journal entry
-- of one a few. A longer line is no kernel record: it is counted, never
-- copied or decoded (a 60 MB line cost seconds and hundreds of MB).
M.MAX_LINE = 64 * 1024

-- What each reader of --kernel-log reads (the source's via): the journal
-- command and the files; a FILE given by name is its path.
M.ORIGINS = { journal = "journalctl -k", kmsg = "/dev/kmsg", ["kern.log"] = "/var/log/kern.log" }

-- How an error names the log a snapshot's kernel_log source (via, path?)
-- was read from: "kernel_log <journal command or file>".
function M.asked(source)
  return shape.named("kernel_log", source.via == "file" and source.path or M.ORIGINS[source.via], "log")
end

-- The shape of a record as the snapshot keeps it (shape.lua).
M.RECORD = { text = shape.required "string", at = "string", repeated = "number" }

-- A bounded log of this boot's NVRM lines, empty: records, the Xid groups
-- by xid.key (each {names = {[process] = true}, named, tail}: tail is the
-- record the next repeat of the group writes over), dropped.
local function new_log()
  return { records = {}, groups = {}, dropped = 0 }
end

-- Keeps one NVRM line of log, as the module's header says, with its time
-- in seconds since the epoch (nil when unknown), formatted once at the end
-- (M.result): a log may hold millions of lines.
local function keep(log, text, seconds)
  local key, process = xid.key(text)
  local group = key and log.groups[key]
  local new_name = group and process and not group.names[process] and group.named < M.MAX_PROCESSES
  if group and group.tail and not new_name then
    local tail = group.tail
    tail.text, tail.seconds, tail.repeated = text, seconds, tail.repeated + 1
    return
  end
  if #log.records >= M.MAX_RECORDS then
    log.dropped = log.dropped + 1
    return
  end
  local record = { text = text, seconds = seconds }
  log.records[#log.records + 1] = record
  if not key then
    return
  end
  if not group then
    group = { names = {}, named = 0 }
    log.groups[key] = group
  elseif not new_name then -- the group's next repeats write over this one
    record.repeated = 0
    group.tail = record
    return
  end
  if process and not group.names[process] then
    group.names[process], group.named = true, group.named + 1
  end
  group.tail = nil
end

-- The NVRM part of a line, or nil.
local function nvrm_text(line)
  return line:match("NVRM:.*$")
end

-- The last instant RFC 3339 can write (its years have four digits).
local LAST_TIME = 253402300799

-- A record's time from seconds since the epoch, or nil when they are
-- unknown or out of RFC 3339's range (a garbled stamp, which dates nothing).
local function record_time(seconds)
  if seconds and seconds >= 0 and seconds <= LAST_TIME then
    return clock.format_time(seconds)
  end
end

-- Keeps the NVRM lines of one message (which may hold several lines) in log.
local function add_nvrm(log, message, seconds)
  for line in (message .. "\n"):gmatch("([^\n]*)\n") do
    local text = nvrm_text(line)
    if text then
      keep(log, text, seconds)
    end
  end
end

-- A copy of log that keeping lines in leaves log as it is.
local function copy_log(log)
  local copy, copy_of = { records = {}, groups = {}, dropped = log.dropped }, {}
  for i, record in ipairs(log.records) do
    copy_of[record] = { text = record.text, seconds = record.seconds, repeated = record.repeated }
    copy.records[i] = copy_of[record]
  end
  for key, group in pairs(log.groups) do
    local names = {}
    for name in pairs(group.names) do
      names[name] = true
    end
    copy.groups[key] = { names = names, named = group.named, tail = group.tail and copy_of[group.tail] }
  end
  return copy
end

-- A journal field as text: journald writes a value holding bytes that are
-- not printable UTF-8 as an array of byte values; null (too long) is nil.
local function field_text(value)
  if type(value) == "string" then
    return value
  elseif type(value) == "table" then
    local bytes = {}
    for i, byte in ipairs(value) do
      local code = math.tointeger(byte)
      if not code or code < 0 or code > 255 then
        return nil
      end
      bytes[i] = string.char(code)
    end
    return table.concat(bytes)
  end
end

-- True when a journal entry's JSON line may hold an NVRM line: it says
-- NVRM, or its message is written as byte values.
local function may_hold_nvrm(line)
  return line:find("NVRM", 1, true) ~= nil or line:find('"MESSAGE"%s*:%s*%[') ~= nil
end

-- True for a line that starts a boot: the kernel's banner, or journalctl's
-- boot separators.
local function starts_boot(line)
  return line:find("Linux version %d") ~= nil or line:match("^%-%- Boot %x+ %-%-") ~= nil
    or line:match("^%-%- Reboot %-%-") ~= nil
end

-- The time a text line carries, when it says one in full: dmesg's
-- "[ 7868.570912]" (from boot, when boot is known) or an RFC 3339 stamp
-- (kern.log, dmesg --time-format iso). Syslog's "Aug 30 11:43:14" has no
-- year and no zone, so it gives none.
local function line_time(line, boot)
  local since_boot = line:match("^%[%s*(%d+%.%d+)%]")
  if since_boot then
    return boot and boot + tonumber(since_boot)
  end
  local stamp = line:match("^(%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d[.,]?%d*[Zz+-]?[%d:]*)")
  return stamp and clock.parse_time((stamp:gsub(",", ".")))
end

-- What each kind of reader does with one line of its log (the reader is
-- M.reader's; lines come without their newline, none empty or over
-- MAX_LINE).
local LINES = {}

-- journalctl's JSON lines (`journalctl -k -b -o json`), and the cursor line
-- that --show-cursor ends them with. Only entries that may hold an NVRM line
-- are decoded once one was; seen counts the entries decoded, other the lines
-- that are neither an entry nor one of journalctl's own notes ("-- No
-- entries --").
function LINES.journal(reader, line)
  if line:sub(1, 1) ~= "{" then
    local cursor = line:match("^%-%- cursor: (.+)$")
    if cursor then
      reader.cursor = cursor
    elseif not line:match("^%-%- .* %-%-$") then
      reader.other = reader.other + 1
    end
  elseif reader.seen == 0 or may_hold_nvrm(line) then
    local entry = json.decode(line)
    if type(entry) == "table" then
      reader.seen = reader.seen + 1
      local message = field_text(entry.MESSAGE)
      local micros = tonumber(entry.__REALTIME_TIMESTAMP)
      if message then
        add_nvrm(reader.log, message, micros and micros / 1e6)
      end
    end
  end
end

-- /dev/kmsg records ("prio,seq,usec,flags;text"): only the kernel's own
-- (facility 0; user space can write lines of its own into the log), with
-- the \xNN escapes undone. The boot time (seconds since the epoch), when
-- known, dates each record from its microseconds since boot.
function LINES.kmsg(reader, line)
  local prio, usec, message = line:match("^(%d+),%d+,(%d+),[^;]*;(.*)$")
  if prio and tonumber(prio) < 8 and message:find("NVRM", 1, true) then
    message = message:gsub("\\x(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end)
    add_nvrm(reader.log, message, reader.boot and reader.boot + tonumber(usec) / 1e6)
  end
end

-- Kernel log lines (a FILE given with --kernel-log, or kern.log): only the
-- lines after the last boot they show, and, when the boot time is known,
-- none dated before it (a kern.log spans reboots).
function LINES.text(reader, line)
  if starts_boot(line) then
    reader.log = new_log()
  else
    local text = nvrm_text(line)
    local at = text and line_time(line, reader.boot)
    if text and not (reader.boot and at and at < reader.boot) then
      keep(reader.log, text, at)
    end
  end
end

-- A FILE given with --kernel-log, before its first character that is not
-- white space says what it holds ("{": journal JSON lines, else kernel log
-- lines): the lines until then are blank.
function LINES.file()
end

-- A reader of one kind of log ("journal", "kmsg", "text" or "file", as
-- LINES says), empty, to be fed the log's bytes as they come (M.feed): all
-- at once, or a part at each refresh of a log that grows. boot: the boot
-- time in seconds since the epoch, nil when unknown. Besides what LINES
-- keeps, it holds the start of the line still being written (pending; or
-- skipping, once that line is past MAX_LINE), how many bytes it was fed
-- and the first character that is not white space.
function M.reader(kind, boot)
  return { kind = kind, boot = boot, log = new_log(), pending = "", skipping = false, oversized = 0, bytes = 0,
           seen = 0, other = 0 }
end

-- Feeds reader the next bytes of its log: each line they end is read, the
-- part of a line they leave unended waits for the rest. A line longer than
-- MAX_LINE is counted in oversized, never copied or decoded.
function M.feed(reader, text)
  reader.bytes = reader.bytes + #text
  reader.first = reader.first or text:match("%S")
  if reader.kind == "file" and reader.first then
    reader.kind = reader.first == "{" and "journal" or "text"
  end
  local read_line = LINES[reader.kind]
  local at, len = 1, #text
  while at <= len do
    local newline = text:find("\n", at, true)
    local line_len = #reader.pending + (newline or len + 1) - at
    if not newline then
      if not reader.skipping and line_len > M.MAX_LINE then
        reader.skipping, reader.pending, reader.oversized = true, "", reader.oversized + 1
      elseif not reader.skipping then
        reader.pending = reader.pending .. text:sub(at)
      end
      return
    end
    if reader.skipping then
      reader.skipping = false -- the end of a line counted when it went past MAX_LINE
    elseif line_len > M.MAX_LINE then
      reader.oversized = reader.oversized + 1
    elseif line_len > 0 then
      read_line(reader, reader.pending .. text:sub(at, newline - 1))
    end
    reader.pending = ""
    at = newline + 1
  end
end

-- What the reader's log holds, as reading all it was fed at once gives it
-- (the line still unended read as a line, in a copy: its end may come
-- next): the NVRM records, each with its time (at) as the snapshot writes
-- it, how many lines did not fit (dropped) and how many were longer than
-- MAX_LINE (oversized). A journal that gave no entry at all is nil and why:
-- bytes that are no JSON records say so; none at all means the caller may
-- read only its own journal (a readable journal always holds this boot's
-- first messages, and journalctl then exits 0 with a hint).
function M.result(reader)
  local now = reader
  if reader.pending ~= "" then
    now = {}
    for key, value in pairs(reader) do
      now[key] = value
    end
    now.log = copy_log(reader.log)
    LINES[now.kind](now, now.pending)
  end
  if now.kind == "journal" and now.seen == 0 then
    if now.other > 0 or now.oversized > 0 or now.first == "{" then
      return nil, string.format("answered %d bytes that are not JSON records%s", now.bytes,
        now.oversized > 0 and string.format(" (%d lines over %d KiB)", now.oversized, M.MAX_LINE // 1024) or "")
    end
    return nil, "no kernel messages of this boot (the journal is not readable by this user)"
  end
  local records = {}
  for i, record in ipairs(now.log.records) do
    records[i] = { text = record.text, at = record_time(record.seconds), repeated = record.repeated }
  end
  return records, now.log.dropped, now.oversized
end

-- Reads a whole log of kind (M.reader) at once: M.result of it.
function M.read_all(kind, output, boot)
  local reader = M.reader(kind, boot)
  M.feed(reader, output)
  return M.result(reader)
end

return M
