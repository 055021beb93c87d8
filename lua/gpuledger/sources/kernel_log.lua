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
-- most MAX_RECORDS records in all. Each reader returns the records, how
-- many lines did not fit (dropped, 0 on any real node) and how many were
-- longer than MAX_LINE (oversized, no line of a real log), which the health
-- view names.
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

-- Calls each(line) for every non-empty line of output (its newline not
-- included) no longer than M.MAX_LINE. Returns how many lines were longer.
local function each_line(output, each)
  local at, len, oversized = 1, #output, 0
  while at <= len do
    local newline = output:find("\n", at, true) or len + 1
    if newline - at > M.MAX_LINE then
      oversized = oversized + 1
    elseif newline > at then
      each(output:sub(at, newline - 1))
    end
    at = newline + 1
  end
  return oversized
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
-- (finish): a log may hold millions of lines.
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

-- The records of log, each with its time (at) as the snapshot writes it, and
-- how many lines did not fit.
local function finish(log)
  for _, record in ipairs(log.records) do
    record.at, record.seconds = record_time(record.seconds), nil
  end
  return log.records, log.dropped
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

-- Reads `journalctl -k -b -o json` output. Returns the NVRM records, how
-- many lines did not fit and how many were longer than M.MAX_LINE; or nil
-- and why when the journal gave no kernel record at all: bytes that are no
-- JSON records say so; none at all means the caller may read only its own
-- journal (a readable journal always holds this boot's first messages, and
-- journalctl then exits 0 with a hint). Only entries that may hold an NVRM
-- line are decoded once one was.
function M.from_journal(output)
  local log, seen, other = new_log(), 0, 0
  local oversized = each_line(output, function(line)
    if not line:match("^%-%- .* %-%-$") then -- journalctl's own notes: "-- No entries --"
      other = other + (line:sub(1, 1) == "{" and 0 or 1)
    end
    if line:sub(1, 1) == "{" and (seen == 0 or may_hold_nvrm(line)) then
      local entry = json.decode(line)
      if type(entry) == "table" then
        seen = seen + 1
        local message = field_text(entry.MESSAGE)
        local micros = tonumber(entry.__REALTIME_TIMESTAMP)
        if message then
          add_nvrm(log, message, micros and micros / 1e6)
        end
      end
    end
  end)
  if seen == 0 and (other > 0 or oversized > 0 or output:find("^%s*{")) then
    return nil, string.format("answered %d bytes that are not JSON records%s", #output,
      oversized > 0 and string.format(" (%d lines over %d KiB)", oversized, M.MAX_LINE // 1024) or "")
  elseif seen == 0 then
    return nil, "no kernel messages of this boot (the journal is not readable by this user)"
  end
  local records, dropped = finish(log)
  return records, dropped, oversized
end

-- Reads /dev/kmsg records ("prio,seq,usec,flags;text"): only the kernel's
-- own (facility 0; user space can write lines of its own into the log), with
-- the \xNN escapes undone. boot (seconds since the epoch), when known, dates
-- each record from its microseconds since boot.
function M.from_kmsg(output, boot)
  local log = new_log()
  local oversized = each_line(output, function(line)
    local prio, usec, message = line:match("^(%d+),%d+,(%d+),[^;]*;(.*)$")
    if prio and tonumber(prio) < 8 and message:find("NVRM", 1, true) then
      message = message:gsub("\\x(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end)
      add_nvrm(log, message, boot and boot + tonumber(usec) / 1e6)
    end
  end)
  local records, dropped = finish(log)
  return records, dropped, oversized
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

-- Reads kernel log lines (a FILE given with --kernel-log, or kern.log): only
-- the lines after the last boot they show, and, when boot is known, none
-- dated before it (a kern.log spans reboots).
function M.from_text(output, boot)
  local log = new_log()
  local oversized = each_line(output, function(line)
    if starts_boot(line) then
      log = new_log()
    else
      local text = nvrm_text(line)
      local at = text and line_time(line, boot)
      if text and not (boot and at and at < boot) then
        keep(log, text, at)
      end
    end
  end)
  local records, dropped = finish(log)
  return records, dropped, oversized
end

-- Reads a file given with --kernel-log: journal JSON lines when its first
-- character is "{", else kernel log lines.
function M.from_file(output, boot)
  if output:match("^%s*{") then
    return M.from_journal(output)
  end
  return M.from_text(output, boot)
end

return M
