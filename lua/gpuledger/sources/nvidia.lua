-- nvidia-smi (docs/sources.md#nvidia-smi), the pure half: what is asked (the fields), and
-- read(), which turns a snapshot's raw rows (gpuledger.collect.nvidia runs
-- the queries) into GPU and process records with the value rules ([N/A]
-- and friends are 0, a value outside M.GPU_BOUNDS an error, optional
-- answers ignored when malformed, process names cut to the binary).
local shape = require "gpuledger.sources.shape"
local text = require "gpuledger.text"

local M = {}

M.GPU_FIELDS = {
  "index", "uuid", "name", "pci.bus_id", "memory.used", "memory.total",
  "utilization.gpu", "utilization.memory", "temperature.gpu", "power.draw",
  "encoder.stats.sessionCount", "encoder.stats.averageFps",
}
M.TLIMIT_FIELDS = { "index", "temperature.gpu.tlimit" }
M.SLOWDOWN_GROUPS = { "clocks_event_reasons", "clocks_throttle_reasons" }
M.APP_FIELDS = { "gpu_uuid", "pid", "used_memory", "process_name" }

-- How an error names the query of kind ("query-gpu", "health", …) that
-- binary answered: "nvidia-smi <kind>: <binary>" (shape.named: where a
-- replayed snapshot names no binary, it says so).
function M.asked(kind, binary)
  return shape.named(string.format("nvidia-smi %s:", kind), binary, "binary")
end

-- The fields of a thermal-slowdown query of group (clocks_event_reasons, …).
function M.slowdown_fields(group)
  return { "index", group .. ".hw_thermal_slowdown", group .. ".sw_thermal_slowdown" }
end

-- What the driver writes in place of a name it cannot give; shown whole.
local NAME_PLACEHOLDERS = {
  ["[Insufficient Permissions]"] = true, ["[Not Found]"] = true, ["[N/A]"] = true, ["[Not Supported]"] = true,
}

-- Unicode's White_Space beyond ASCII (and the invisible U+180E, U+200B and
-- U+FEFF), UTF-8 encoded: each ends a name as a blank does.
local WIDE_BLANKS = {
  "\u{85}", "\u{A0}", "\u{1680}", "\u{180E}", "\u{2000}", "\u{2001}", "\u{2002}", "\u{2003}", "\u{2004}",
  "\u{2005}", "\u{2006}", "\u{2007}", "\u{2008}", "\u{2009}", "\u{200A}", "\u{200B}", "\u{2028}", "\u{2029}",
  "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}",
}

-- A name that is one word of printable ASCII without "/", not bracketed:
-- its own binary, the common case.
local PLAIN_NAME = "^[!-.0-Z\\-~][!-.0-~]*$"

-- The binary of a process name: trimmed, cut at the first
-- blank (any Unicode white space), then after the last "/"; arguments never
-- survive, bracketed or not ("[python3 --token=x]" is "python3"). The
-- driver's placeholders such as "[Insufficient Permissions]" are kept whole.
function M.process_binary(name)
  if name:find(PLAIN_NAME) then
    return name
  end
  if name:find("[\128-\255]") then -- each wide blank is beyond ASCII
    for _, blank in ipairs(WIDE_BLANKS) do
      name = name:gsub(blank, " ")
    end
  end
  name = text.trim(name)
  if NAME_PLACEHOLDERS[name] then
    return name
  end
  local bracketed = name:match("^%[%s*(.*)$")
  name = (bracketed or name):match("^%S*")
  if bracketed then
    name = name:gsub("%]+$", "")
  end
  return (name:match("([^/]*)$"))
end

-- True when an optional answer is usable: it came, has rows, and every row
-- has exactly as many fields as were asked for.
function M.usable_optional(answer)
  if not answer or not answer.rows or #answer.rows == 0 or not answer.fields then
    return false
  end
  for _, row in ipairs(answer.rows) do
    if #row ~= #answer.fields then
      return false
    end
  end
  return true
end

-- The place and field count of the first row of the main query without
-- as many fields as were asked (a row with more cannot be read by place
-- either), or nil when every row has them.
function M.odd_row(answer)
  for r, row in ipairs(answer.rows) do
    if #row ~= #M.GPU_FIELDS then
      return r, #row
    end
  end
end

local NOT_A_NUMBER = { [""] = true, ["[N/A]"] = true, ["N/A"] = true, ["[Not Supported]"] = true }

-- The number a cell holds, parsed as Lua reads one (blanks at either end
-- skipped; 1e23 and 1e999, an infinity, too), or nil for none: empty,
-- [N/A] and the like, or no number.
local function number_of(raw)
  return type(raw) == "string" and tonumber(raw) or nil
end

-- value truncated to an integer; 0 for none (nil), NaN, an infinity or one
-- too big for an integer.
local function truncated(value)
  if math.type(value) == "integer" then
    return value -- a whole number as written, the common case: nothing to truncate
  elseif not value or value ~= value or value == math.huge or value == -math.huge then
    return 0
  end
  return math.tointeger(value < 0 and math.ceil(value) or math.floor(value)) or 0
end

-- Integer rule: trimmed; empty, [N/A], N/A, [Not Supported] and anything
-- unparsable are 0; otherwise parsed as a float and truncated.
function M.int_value(raw)
  return truncated(number_of(raw))
end

-- Whether a cell is the driver's text for no value: empty, [N/A], N/A or
-- any bracketed text ([Not Supported], [Insufficient Permissions], …).
local function no_value(raw)
  local trimmed = text.trim(type(raw) == "string" and raw or "")
  return NOT_A_NUMBER[trimmed] or trimmed:match("^%[") ~= nil
end

-- An integer as M.int_value reads it, or nil when the driver reports none
-- ([N/A] and the like: utilisation under MIG is unknown, not 0 %).
function M.known_int(raw)
  if no_value(raw) then
    return nil
  end
  return M.int_value(raw)
end

-- Float rule: unparsable (including [N/A]) is 0.
function M.float_value(raw)
  local value = tonumber(text.trim(type(raw) == "string" and raw or ""))
  if not value or value ~= value or value == math.huge or value == -math.huge then
    return 0
  end
  return value + 0.0
end

-- The values a GPU can report, by column of the main query (1 = index,
-- M.GPU_FIELDS) and of the process list (M.APP_FIELDS): the least and the
-- most. A value outside is no measurement (a driver or a wrapper gone
-- wrong): an error naming the GPU, the field and the value as sent, and the
-- field reads as one the driver did not report. The bounds are wide:
-- 1,024 GPUs, 16 TiB of memory, -40 to 150 °C (a card throttles near 90
-- and shuts down near 100), 10 kW, Linux's largest pid.
M.GPU_BOUNDS = {
  [1] = { 0, 1023 }, [5] = { 0, 16 * 1024 * 1024 }, [6] = { 0, 16 * 1024 * 1024 },
  [7] = { 0, 100 }, [8] = { 0, 100 }, [9] = { -40, 150 }, [10] = { 0, 10000 },
  [11] = { 0, 100000 }, [12] = { 0, 1000000 },
}
M.APP_BOUNDS = { [2] = { 1, 4194304 }, [3] = { 0, 16 * 1024 * 1024 } }
M.TLIMIT_BOUNDS = { -200, 200 } -- the thermal margin, °C

-- Whether value (number_of's) is outside bounds ({least, most}): out of
-- range, NaN, or too big to be a number; none (nil) is not.
local function outside(value, bounds)
  return value ~= nil and not (value >= bounds[1] and value <= bounds[2])
end

-- Whether a cell is a number outside bounds, as nvidia-smi writes one;
-- [N/A] and the like are not.
local function out_of_range(raw, bounds)
  return outside(number_of(raw), bounds)
end

-- row, or where a cell is outside its bounds (by column) a copy with each
-- such cell replaced by [N/A], and an error for each ("nvidia-smi
-- query-gpu: /usr/bin/nvidia-smi: GPU 0 (GPU-…): memory.used is 1e23, want
-- 0–16777216") appended to errors; asked (M.asked's) names the query and
-- the binary, who(row) the GPU, names the columns.
local function bounded(row, bounds, names, asked, who, errors)
  local checked = row
  for i = 1, #row do -- (a row is a list of text: the shape checks saw to it)
    local raw = row[i]
    if bounds[i] and out_of_range(raw, bounds[i]) then
      if checked == row then
        checked = table.move(row, 1, #row, 1, {})
      end
      errors[#errors + 1] = string.format("%s: %s: %s is %s, want %s–%s", asked, who(row), names[i],
        text.one_line(text.trim(raw), 64), bounds[i][1], bounds[i][2])
      checked[i] = "[N/A]"
    end
  end
  return checked
end

-- Cell i of a row, trimmed; "" when it is missing or not text.
local function cell(row, i)
  return type(row[i]) == "string" and text.trim(row[i]) or ""
end

-- Reads a snapshot's nvidia source. Returns gpus (records named as in the
-- ledger JSON, docs/json.md), processes ({gpu_uuid, pid, used_memory_mib,
-- process}) and errors (strings), in nvidia-smi's order.
function M.read(source)
  local gpus, processes, errors = {}, {}, {}
  if not source then
    return gpus, processes, errors
  end
  if not source.ok then
    errors[1] = source.error
    return gpus, processes, errors
  end
  local main = source.query_gpu
  if not (main and main.rows) then
    errors[1] = shape.unexpected("nvidia-smi", "the snapshot has no query_gpu rows")
    return gpus, processes, errors
  end
  local odd, count = M.odd_row(main)
  if odd then
    errors[1] = string.format("%s: row %d has %d fields, want %d", M.asked("query-gpu", source.binary), odd, count, #M.GPU_FIELDS)
    return gpus, processes, errors
  end
  local by_index, main_asked = {}, M.asked("query-gpu", source.binary)
  local function gpu_who(row)
    return string.format("GPU %s (%s)", cell(row, 1), cell(row, 2))
  end
  for _, raw_row in ipairs(main.rows) do
    local row = bounded(raw_row, M.GPU_BOUNDS, M.GPU_FIELDS, main_asked, gpu_who, errors)
    local gpu = {
      index = M.int_value(row[1]),
      uuid = cell(row, 2),
      model = cell(row, 3),
      busId = cell(row, 4),
      memoryUsedMiB = M.int_value(row[5]),
      memoryTotalMiB = M.int_value(row[6]),
      utilizationPct = M.known_int(row[7]),
      memoryUtilizationPct = M.known_int(row[8]),
      temperatureC = M.int_value(row[9]),
      powerW = M.float_value(row[10]),
      encoderSessions = M.int_value(row[11]),
      encoderAverageFps = M.float_value(row[12]),
    }
    gpus[#gpus + 1] = gpu
    by_index[cell(row, 1)] = gpu
  end

  if M.usable_optional(source.tlimit) then
    for _, row in ipairs(source.tlimit.rows) do
      local gpu, margin = by_index[cell(row, 1)], cell(row, 2)
      if gpu and out_of_range(margin, M.TLIMIT_BOUNDS) then
        errors[#errors + 1] = string.format("%s: GPU %s (%s): %s is %s, want %s–%s", M.asked("tlimit", source.binary),
          cell(row, 1), gpu.uuid, M.TLIMIT_FIELDS[2], text.one_line(margin, 64), M.TLIMIT_BOUNDS[1], M.TLIMIT_BOUNDS[2])
      elseif gpu and margin:match("^[+-]?%d+$") then
        gpu.thermalMarginC = math.tointeger(tonumber(margin))
      end
    end
  end
  local FLAG = { Active = true, ["Not Active"] = false }
  if M.usable_optional(source.slowdown) then
    for _, row in ipairs(source.slowdown.rows) do
      local gpu = by_index[cell(row, 1)]
      local hw, sw = FLAG[cell(row, 2)], FLAG[cell(row, 3)]
      if gpu and hw ~= nil and sw ~= nil then
        gpu.thermalSlowdown = hw or sw
      end
    end
  end

  -- An optional query that did not answer in time is named; one the driver
  -- does not know (an older driver) is not an error: the field stays unknown.
  for _, answer in ipairs { source.tlimit, source.slowdown } do
    local why = answer and answer.error
    if why and (why:find(": timed out after ", 1, true) or why:find(": not started: ", 1, true)) then
      errors[#errors + 1] = why
    end
  end
  local apps = source.compute_apps or {}
  if apps.error then
    errors[#errors + 1] = apps.error
  end
  local function process_who(row)
    return "a process of " .. cell(row, 1)
  end
  local apps_asked = M.asked("compute-apps", source.binary)
  local pid_bounds, memory_bounds = M.APP_BOUNDS[2], M.APP_BOUNDS[3]
  local least_pid, most_pid = pid_bounds[1], pid_bounds[2]
  local least_memory, most_memory = memory_bounds[1], memory_bounds[2]
  -- the rows name a few GPUs and, mostly, a few binaries, over and over:
  -- each text is read once
  local uuid_of, binary_of = {}, {}
  local rows = apps.rows or {}
  for r = 1, #rows do
    local row = rows[r]
    if #row >= 4 then
      local pid, memory = tonumber(row[2]), tonumber(row[3]) -- (text: the shape checks saw to it)
      -- a whole pid and memory in bounds, the common case, are read as they are
      local whole = math.type(pid) == "integer" and pid >= least_pid and pid <= most_pid
        and math.type(memory) == "integer" and memory >= least_memory and memory <= most_memory
      local named = true
      if pid == nil and not no_value(row[2]) then -- garbage, no process to name: the row is left out, an error
        named = false
        errors[#errors + 1] = string.format("%s: %s: pid is %s, want %s–%s", apps_asked, process_who(row),
          text.one_line(text.trim(row[2]), 64), least_pid, most_pid)
      elseif not whole then
        if outside(pid, pid_bounds) or outside(memory, memory_bounds) then -- an error each, the value unknown
          local checked = bounded(row, M.APP_BOUNDS, M.APP_FIELDS, apps_asked, process_who, errors)
          named, memory = checked[2] == row[2], number_of(checked[3]) -- a pid out of range names no process
        end
        pid, memory = truncated(pid), truncated(memory)
      end
      if named then
        local uuid, binary = uuid_of[row[1]], binary_of[row[4]]
        if not uuid then
          uuid = cell(row, 1)
          uuid_of[row[1]] = uuid
        end
        if not binary then
          binary = M.process_binary(row[4])
          binary_of[row[4]] = binary
        end
        processes[#processes + 1] = { gpu_uuid = uuid, pid = pid, used_memory_mib = memory, process = binary }
      end
    end
  end
  return gpus, processes, errors
end

return M
