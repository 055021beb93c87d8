-- The nvidia-smi health query (docs/health.md#the-health-query): which fields to ask a driver
-- (from its --help-query-gpu list: one unknown name fails the whole query),
-- what a bracketed cell means, and the health record of each GPU read from
-- the answer (and from --query-remapped-rows where the driver has no
-- remapped_rows.* query-gpu fields).
local nvidia = require "gpuledger.sources.nvidia"
local pci = require "gpuledger.sources.pci"
local text = require "gpuledger.text"

local M = {}

-- Each health field: the record key it fills, how its cell reads, and the
-- names a driver may know it by (the first name the driver lists is asked).
M.FIELDS = {
  { key = "index", kind = "text", names = { "index" } },
  { key = "uuid", kind = "text", names = { "uuid" } },
  { key = "busId", kind = "text", names = { "pci.bus_id" } },
  { key = "driverVersion", kind = "text", names = { "driver_version" } },
  { key = "persistenceMode", kind = "enabled", names = { "persistence_mode" } },
  { key = "eccMode", kind = "enabled", names = { "ecc.mode.current" } },
  { key = "eccModePending", kind = "enabled", names = { "ecc.mode.pending" } },
  { key = "eccCorrectedVolatile", kind = "count", names = { "ecc.errors.corrected.volatile.total" } },
  { key = "eccUncorrectedVolatile", kind = "count", names = { "ecc.errors.uncorrected.volatile.total" } },
  { key = "eccCorrectedAggregate", kind = "count", names = { "ecc.errors.corrected.aggregate.total" } },
  { key = "eccUncorrectedAggregate", kind = "count", names = { "ecc.errors.uncorrected.aggregate.total" } },
  { key = "retiredPagesSbe", kind = "count", names = { "retired_pages.single_bit_ecc.count", "retired_pages.sbe" } },
  { key = "retiredPagesDbe", kind = "count", names = { "retired_pages.double_bit.count", "retired_pages.dbe" } },
  { key = "retiredPagesPending", kind = "yes", names = { "retired_pages.pending" } },
  { key = "remappedRowsCorrectable", kind = "count", names = { "remapped_rows.correctable", "remapped_rows.sbe" } },
  { key = "remappedRowsUncorrectable", kind = "count", names = { "remapped_rows.uncorrectable", "remapped_rows.dbe" } },
  { key = "remappedRowsPending", kind = "yes", names = { "remapped_rows.pending" } },
  { key = "remappedRowsFailure", kind = "yes", names = { "remapped_rows.failure" } },
  { key = "hwSlowdown", kind = "active", names = { "clocks_event_reasons.hw_slowdown", "clocks_throttle_reasons.hw_slowdown" } },
  { key = "powerBrake", kind = "active",
    names = { "clocks_event_reasons.hw_power_brake_slowdown", "clocks_throttle_reasons.hw_power_brake_slowdown" } },
  { key = "swPowerCap", kind = "active", names = { "clocks_event_reasons.sw_power_cap", "clocks_throttle_reasons.sw_power_cap" } },
  { key = "pcieGenCurrent", kind = "count", names = { "pcie.link.gen.gpucurrent", "pcie.link.gen.current" } },
  { key = "pcieGenMax", kind = "count", names = { "pcie.link.gen.max" } },
  { key = "pcieWidthCurrent", kind = "count", names = { "pcie.link.width.current" } },
  { key = "pcieWidthMax", kind = "count", names = { "pcie.link.width.max" } },
  { key = "powerLimitEnforcedW", kind = "watts", names = { "enforced.power.limit", "gpu.power.current_limit" } },
  { key = "powerLimitDefaultW", kind = "watts", names = { "power.default_limit", "gpu.power.default_limit" } },
  { key = "migMode", kind = "enabled", names = { "mig.mode.current" } },
  { key = "migModePending", kind = "enabled", names = { "mig.mode.pending" } },
  { key = "recoveryAction", kind = "text", names = { "gpu_recovery_action" } },
}

-- The older drivers' separate query for the four remapped_rows fields.
M.REMAPPED_ROWS_FIELDS = {
  "gpu_bus_id", "gpu_uuid", "remapped_rows.correctable", "remapped_rows.uncorrectable",
  "remapped_rows.pending", "remapped_rows.failure",
}

local FIELD_BY_NAME = {}
for _, field in ipairs(M.FIELDS) do
  for _, name in ipairs(field.names) do
    FIELD_BY_NAME[name] = field
  end
end

-- The field names a --help-query-gpu text lists (lines such as
-- `"ecc.mode.current"` or `"remapped_rows.correctable" or "remapped_rows.sbe"`).
function M.known_fields(help)
  local known = {}
  for line in help:gmatch("[^\n]+") do
    if line:match('^"[^"]+"') then
      for name in line:gmatch('"([^"]+)"') do
        known[name] = true
      end
    end
  end
  return known
end

-- The health query for a driver that knows the names in `known`: the names
-- to ask, in FIELDS order (fields the driver does not know are left out),
-- and whether the remapped rows must come from --query-remapped-rows.
function M.plan(known)
  local names = {}
  for _, field in ipairs(M.FIELDS) do
    for _, name in ipairs(field.names) do
      if known[name] then
        names[#names + 1] = name
        break
      end
    end
  end
  return names, not known["remapped_rows.pending"]
end

local UNSUPPORTED = {
  [""] = true, ["[N/A]"] = true, ["N/A"] = true, ["[Not Supported]"] = true,
  ["[Requested functionality has been deprecated]"] = true,
}

-- What a trimmed cell says: "value", "unsupported" ([N/A] and its kin:
-- nothing to judge), "requires-reset" ([GPU requires reset]), "lost" ([GPU
-- is lost]) or "unreadable" (any other bracketed value, such as [Unknown
-- Error]).
local function kind_of(trimmed)
  if UNSUPPORTED[trimmed] then
    return "unsupported"
  elseif trimmed == "[GPU requires reset]" then
    return "requires-reset"
  elseif trimmed == "[GPU is lost]" then
    return "lost"
  elseif trimmed:find("^%[.*%]$") then
    return "unreadable"
  end
  return "value"
end

-- What a cell says (kind_of), blanks at either end aside.
function M.cell_kind(raw)
  return kind_of(text.trim(raw or ""))
end

local FLAGS = {
  enabled = { Enabled = true, Disabled = false },
  yes = { Yes = true, No = false },
  active = { Active = true, ["Not Active"] = false },
}

-- A value cell read as its field's kind; nil when it does not read so.
local function typed(kind, raw)
  if FLAGS[kind] then
    return FLAGS[kind][raw]
  elseif kind == "count" then
    return math.tointeger(tonumber(raw:match("^%d+$")))
  elseif kind == "watts" then
    local watts = tonumber((raw:gsub("%s*W$", "")))
    return watts and watts + 0.0
  end
  return raw
end

local NOTHING = {} -- (never written)

-- What a cell of column `name` says, as fill applies it: {key, value} (its
-- field's value), {unreadable = "name: [value]"}, {flag = "requiresReset"
-- or "lost"}, or NOTHING ([N/A] and its kin, or a column of no field).
local function reading(name, raw)
  raw = text.trim(raw)
  local kind = kind_of(raw)
  if kind == "value" then
    local field = FIELD_BY_NAME[name]
    local value = field and typed(field.kind, raw)
    if field and value == nil then
      return { unreadable = string.format("%s: %s", name, raw) }
    elseif field then
      return { key = field.key, value = value }
    end
  elseif kind == "requires-reset" then
    return { flag = "requiresReset" }
  elseif kind == "lost" then
    return { flag = "lost" }
  elseif kind == "unreadable" then
    return { unreadable = string.format("%s: %s", name, raw) }
  end
  return NOTHING
end

-- Fills record from one row of an answer whose columns are `names`.
-- readings (column name → cell text → reading) keeps what each cell said:
-- the GPUs of a node mostly say the same, each text is read once.
local function fill(record, names, row, readings)
  for i = 1, #names do
    local name, raw = names[i], row[i] or ""
    local of_column = readings[name]
    if not of_column then
      of_column = {}
      readings[name] = of_column
    end
    local said = of_column[raw]
    if not said then
      said = reading(name, raw)
      of_column[raw] = said
    end
    if said.key then
      record[said.key] = said.value
    elseif said.unreadable then
      record.unreadable[#record.unreadable + 1] = said.unreadable
    elseif said.flag then
      record[said.flag] = true
    end
  end
end

-- Reads the health answers of a snapshot's nvidia source: health ({fields,
-- rows} or {error}) and remapped_rows (the same, or absent), every cell
-- text (gpu_health.read leaves out a row that is not). Returns the
-- records (one per row, keyed as FIELDS say, plus busKey, requiresReset,
-- lost and unreadable, a list of "field: [value]"; a field the driver did
-- not report is absent) and the errors (strings, naming binary: the
-- nvidia-smi that answered).
function M.read(health, remapped_rows, binary)
  local records, errors = {}, {}
  if not health then
    return records, errors
  end
  if health.error then
    errors[1] = health.error
    return records, errors
  end
  local by_bus, readings = {}, {}
  for _, row in ipairs(health.rows or {}) do
    local record = { unreadable = {} }
    if #row ~= #health.fields then
      errors[#errors + 1] = string.format("%s: expected %d fields, got %d", nvidia.asked("health", binary), #health.fields, #row)
    else
      fill(record, health.fields, row, readings)
      record.index = math.tointeger(tonumber(record.index))
      record.busKey = pci.bus_key(record.busId)
      records[#records + 1] = record
      if record.busKey then
        by_bus[record.busKey] = record
      end
    end
  end
  if remapped_rows and remapped_rows.error then
    errors[#errors + 1] = remapped_rows.error
  end
  for _, row in ipairs(remapped_rows and remapped_rows.rows or {}) do
    local record = by_bus[pci.bus_key(text.trim(row[1] or "")) or ""]
    if #row ~= #remapped_rows.fields then
      errors[#errors + 1] = string.format("%s: expected %d fields, got %d", nvidia.asked("remapped-rows", binary),
        #remapped_rows.fields, #row)
    elseif record then -- (a row of a GPU the health query did not list has no record to fill)
      fill(record, remapped_rows.fields, row, readings)
    end
  end
  return records, errors
end

return M
