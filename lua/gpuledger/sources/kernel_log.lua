-- Kernel log text as each reader gets it, turned into this boot's NVRM
-- records {text, at?} (docs/sources.md#the-kernel-log): journalctl's JSON lines, the
-- records of /dev/kmsg, and plain lines as dmesg, journalctl -k or
-- /var/log/kern.log print them. Only lines from "NVRM:" on are kept: they are
-- all the health view reads, and no other line reaches the snapshot.
local clock = require "gpuledger.clock"
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"

local M = {}

-- The shape of a record as the snapshot keeps it (shape.lua).
M.RECORD = { text = shape.required "string", at = "string" }

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

-- Adds the NVRM lines of one message (which may hold several lines).
local function add_nvrm(records, message, at)
  for line in (message .. "\n"):gmatch("([^\n]*)\n") do
    local text = nvrm_text(line)
    if text then
      records[#records + 1] = { text = text, at = at }
    end
  end
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

-- Reads `journalctl -k -b -o json` output. Returns the NVRM records, or nil
-- and why when the journal gave no kernel record at all: a readable journal
-- always holds this boot's first messages, so none means the caller may
-- read only its own journal (journalctl then exits 0 with a hint).
function M.from_journal(output)
  local records, seen = {}, 0
  for line in output:gmatch("[^\n]+") do
    if line:sub(1, 1) == "{" then
      local entry = json.decode(line)
      if type(entry) == "table" then
        seen = seen + 1
        local message = field_text(entry.MESSAGE)
        local micros = tonumber(entry.__REALTIME_TIMESTAMP)
        if message then
          add_nvrm(records, message, record_time(micros and micros / 1e6))
        end
      end
    end
  end
  if seen == 0 then
    return nil, "no kernel messages of this boot (the journal is not readable by this user)"
  end
  return records
end

-- Reads /dev/kmsg records ("prio,seq,usec,flags;text"): only the kernel's
-- own (facility 0; user space can write lines of its own into the log), with
-- the \xNN escapes undone. boot (seconds since the epoch), when known, dates
-- each record from its microseconds since boot.
function M.from_kmsg(output, boot)
  local records = {}
  for line in output:gmatch("[^\n]+") do
    local prio, usec, message = line:match("^(%d+),%d+,(%d+),[^;]*;(.*)$")
    if prio and tonumber(prio) < 8 then
      message = message:gsub("\\x(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end)
      add_nvrm(records, message, record_time(boot and boot + tonumber(usec) / 1e6))
    end
  end
  return records
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
  local lines = {}
  for line in output:gmatch("[^\n]+") do
    if starts_boot(line) then
      lines = {}
    else
      lines[#lines + 1] = line
    end
  end
  local records = {}
  for _, line in ipairs(lines) do
    local at = line_time(line, boot)
    if not (boot and at and at < boot) then
      add_nvrm(records, line, record_time(at))
    end
  end
  return records
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
