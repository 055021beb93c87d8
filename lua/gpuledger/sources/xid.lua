-- Xid events in kernel log lines (docs/health.md#xid-events-the-kernel-log):
-- parse() finds every NVRM Xid line (with or without "PCI:", with or
-- without pid and name, with MIG instance ids, the NVLink5 forms with their
-- Fatal/Nonfatal word), the fallen-off-the-bus lines that report Xid 79
-- without saying "Xid", and the lines that name a bus's GPU UUID; summary()
-- groups the events per GPU and code.
local pci = require "gpuledger.sources.pci"

local M = {}

-- The NVLink5 codes, whose lines carry a unit and a Fatal/Nonfatal word.
local function is_nvlink5(xid)
  return xid >= 144 and xid <= 150
end

-- Reads what follows "<code>, ": the owner (pid=, name=) when the driver
-- printed one, then the message.
local function owner_and_message(rest)
  local pid, name, message = rest:match("^pid=([^,]*), name=([^,]*),%s*(.*)$")
  if not pid then
    return nil, nil, rest
  end
  pid = math.tointeger(tonumber(pid))
  if name == "<unknown>" then
    name = nil
  end
  return pid, name, message
end

-- One Xid line ("NVRM: Xid (PCI:0000:3b:00 GPU-I:02): 31, pid=…"), or nil
-- (also for a line without a PCI address, or with a code too big to be one).
local function xid_line(text)
  local inside, code, rest = text:match("NVRM: Xid %(([^)]*)%):%s*(%d+),?%s*(.*)$")
  if not inside then
    return nil
  end
  local bus, xid = pci.bus_key(inside:match("^%S+")), math.tointeger(tonumber(code))
  if not (bus and xid) then
    return nil
  end
  local event = { xid = xid, bus = bus }
  event.gi = math.tointeger(tonumber(inside:match("GPU%-I:(%d+)")))
  event.ci = math.tointeger(tonumber(inside:match("GPU%-CI:(%d+)")))
  event.pid, event.process, event.message = owner_and_message(rest)
  if is_nvlink5(event.xid) then
    local unit, severity = event.message:match("^(%S+) (%a+) ")
    if severity == "Fatal" or severity == "Nonfatal" then
      event.unit, event.fatal = unit, severity == "Fatal"
      event.link = math.tointeger(tonumber(event.message:match(" Link (%d+)")))
    end
  end
  return event
end

-- What an Xid line is about, for keeping a bounded log (kernel_log.lua),
-- read cheaply (a log may hold millions): "<address as written>/<code>"
-- ("/fatal" after it for a NVLink5 line that says Fatal, which summary
-- must not lose among Nonfatal ones) and the process it names (nil when
-- none); nil for a line that is no Xid line. An address written two ways
-- gives two keys, and a line parse refuses a key of its own: either way
-- only fewer lines are collapsed.
function M.key(text)
  local inside, code, rest = text:match("NVRM: Xid %(([^)]*)%):%s*(%d+),?%s*(.*)$")
  if not inside then
    return nil
  end
  local _, process, message = owner_and_message(rest)
  local fatal = is_nvlink5(tonumber(code)) and message:match("^%S+ (%a+) ") == "Fatal"
  return inside .. "/" .. code .. (fatal and "/fatal" or ""), process
end

local FALLEN = "GPU has fallen off the bus"
local NOT_RESPONDING = "fallen off the bus and is not responding to commands"

-- Splits records ({text=, at=, repeated=}) into lines, each keeping its
-- record's time and how many more like it it stands for (repeated, nil for
-- none: kernel_log.lua keeps the last of a run of lines about the
-- same GPU and code, and counts the ones before it): a journal message can
-- hold several lines.
local function lines_of(records)
  local lines = {}
  for _, record in ipairs(records) do
    local repeated = math.tointeger(record.repeated)
    repeated = repeated and repeated > 0 and repeated or nil
    for line in (record.text .. "\n"):gmatch("([^\n]*)\n") do
      lines[#lines + 1] = { text = line, at = record.at, repeated = repeated }
    end
  end
  return lines
end

-- Parses kernel log records ({text, at?, repeated?}, oldest first). Returns
-- the events (each {xid, bus, at?, pid?, process?, message, gi?, ci?,
-- unit?, fatal?, link?, worded?, repeated}; worded marks Xid 79 reported
-- without the word "Xid", repeated counts the earlier events like it that
-- its record stands for, when any) and
-- uuids (bus key → the GPU UUID the driver named for it). A line whose
-- address is not a PCI address (pci.bus_key) names no GPU: no event; nor
-- does an Xid line whose code is too big for an integer.
function M.parse(records)
  local events, uuids = {}, {}
  local announced -- "NVRM: The NVIDIA GPU <addr>", waiting for its last line
  for _, line in ipairs(lines_of(records)) do
    local text = line.text
    local event = xid_line(text)
    if event then
      event.at, event.repeated = line.at, line.repeated
      events[#events + 1] = event
    else
      local named, uuid = text:match("NVRM: GPU at (%S+): (GPU%-[%x%-]+)")
      local key = named and pci.bus_key(named)
      if key then
        uuids[key] = uuid
      end
      local fallen = pci.bus_key(text:match("NVRM: GPU (%x+:%x+:%x+%.%x+): " .. FALLEN))
      local the_gpu = pci.bus_key(text:match("NVRM: The NVIDIA GPU (%x+:%x+:%x+%.%x+)"))
      if the_gpu then
        announced = { bus = the_gpu, left = 3 }
      end
      if not fallen and announced and text:find(NOT_RESPONDING, 1, true) then
        fallen, announced = announced.bus, nil
      end
      if fallen then
        events[#events + 1] = { xid = 79, bus = fallen, at = line.at, message = FALLEN, worded = true }
      end
      if announced then
        announced.left = announced.left - 1
        announced = announced.left > 0 and announced or nil
      end
    end
  end
  return events, uuids
end

-- Groups events per (bus, code), in order of first appearance. Each group:
-- {bus, xid, count, first, last (times when known), message (the last),
-- processes (the names seen, in order), fatal (NVLink5: any line said
-- Fatal; nil for other codes), places (each line's MIG instance ids and
-- pid, {gi?, ci?, pid?}, where it named any)}. A worded Xid 79 counts only for a bus with
-- no "Xid … 79" line: the driver prints both for one event.
function M.summary(events)
  local has_xid79 = {}
  for _, event in ipairs(events) do
    if event.xid == 79 and not event.worded then
      has_xid79[event.bus] = true
    end
  end
  local groups, by_key = {}, {}
  for _, event in ipairs(events) do
    if not (event.worded and has_xid79[event.bus]) then
      local key = event.bus .. "/" .. event.xid
      local group = by_key[key]
      if not group then
        group = { bus = event.bus, xid = event.xid, count = 0, processes = {}, places = {} }
        by_key[key] = group
        groups[#groups + 1] = group
      end
      group.count = group.count + 1 + (event.repeated or 0)
      group.first = group.first or event.at
      group.last = event.at or group.last
      group.message = event.message
      if event.process and not group.processes[event.process] then
        group.processes[event.process] = true
        group.processes[#group.processes + 1] = event.process
      end
      if event.fatal ~= nil then
        group.fatal = group.fatal or event.fatal
      end
      if event.gi or event.pid then
        group.places[#group.places + 1] = { gi = event.gi, ci = event.ci, pid = event.pid }
      end
    end
  end
  for _, group in ipairs(groups) do
    for _, name in ipairs(group.processes) do
      group.processes[name] = nil
    end
  end
  return groups
end

-- What the catalogue ({[code] = {class, meaning, action, nonfatal?}}) says
-- of a group: {class, meaning, action}. A NVLink5 group whose lines all said
-- Nonfatal takes the entry's nonfatal class; a code the catalogue lacks is
-- an "app" event, to be looked up.
function M.describe(catalogue, group)
  local entry = catalogue[group.xid]
  if not entry then
    return { class = "app", meaning = "an Xid this catalogue does not list",
             action = "look the code up in NVIDIA's Xid catalogue" }
  end
  local class = entry.class
  if group.fatal == false and entry.nonfatal then
    class = entry.nonfatal
  end
  return { class = class, meaning = entry.meaning, action = entry.action }
end

return M
