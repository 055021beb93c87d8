-- nvidia-smi (SPEC §2.1): collect() runs the queries and keeps their raw
-- rows for the snapshot; read() turns a snapshot's raw rows into GPU and
-- process records with the value rules ([N/A] and friends are 0, optional
-- answers ignored when malformed, process names cut to the binary).
local json = require "gpuledger.json"
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

M.TIMEOUT_MS = 10000 -- for all of one collect's queries together
M.MAX_BYTES = 4 * 1024 * 1024

local function slowdown_fields(group)
  return { "index", group .. ".hw_thermal_slowdown", group .. ".sw_thermal_slowdown" }
end

-- The binary of a process name (SPEC §2.1): trimmed, cut at the first blank,
-- then after the last "/"; arguments never survive. Bracketed driver
-- placeholders such as "[Insufficient Permissions]" are kept whole.
function M.process_binary(name)
  name = text.trim(name)
  if name:match("^%[.*%]$") then
    return name
  end
  name = name:match("^[^ \t]*")
  return (name:match("([^/]*)$"))
end

-- First line of a failed command's output, trimmed and kept short.
local function first_line(s)
  local line = text.trim(s):match("^[^\n]*") or ""
  if #line > 200 then
    line = line:sub(1, 200) .. "…"
  end
  return line
end

-- Runs one query by deadline_ms (core.monotonic_ms). Returns {fields=,
-- rows=}, or nil and an error naming the query, the binary and the cause.
local function query(core, binary, kind, flag, fields, deadline_ms)
  local argv = { binary, flag .. "=" .. table.concat(fields, ","), "--format=csv,noheader,nounits" }
  local out, err, status = core.spawn(argv, { deadline_ms = deadline_ms, max_bytes = M.MAX_BYTES })
  local prefix = string.format("nvidia-smi %s: %s", kind, binary)
  if not out then
    if err == "not found" and not binary:find("/", 1, true) then
      err = "not found in PATH (--nvidia-smi names the binary)"
    end
    return nil, string.format("%s: %s", prefix, err)
  end
  if status ~= 0 then
    local said = first_line(out) ~= "" and first_line(out) or first_line(err)
    local ended = status and ("exit status " .. status) or "killed by a signal"
    return nil, string.format("%s: %s%s", prefix, ended, said ~= "" and (": " .. said) or "")
  end
  local rows, why = core.parse_csv(out)
  if not rows then
    return nil, string.format("nvidia-smi %s csv: %s", kind, why)
  end
  return { fields = json.array(fields), rows = json.array(rows) }
end

-- True when an optional answer is usable: it came, has rows, and every row
-- has exactly as many fields as were asked for (SPEC §2.1).
function M.usable_optional(answer)
  if not answer or not answer.rows or #answer.rows == 0 then
    return false
  end
  for _, row in ipairs(answer.rows) do
    if #row ~= #answer.fields then
      return false
    end
  end
  return true
end

local function short_row(answer)
  for _, row in ipairs(answer.rows) do
    if #row < #M.GPU_FIELDS then
      return #row
    end
  end
end

-- Collects nvidia-smi's answers with core (core.spawn, core.parse_csv), all
-- of its queries within one deadline of M.TIMEOUT_MS.
-- Returns the snapshot's "nvidia" source: {ok=true, binary, query_gpu,
-- tlimit, slowdown, compute_apps} (each optional part is {fields, rows} or
-- {error=}), or {ok=false, binary, error} when the main query failed.
function M.collect(core, binary)
  local deadline_ms = core.monotonic_ms() + M.TIMEOUT_MS
  local main, err = query(core, binary, "query-gpu", "--query-gpu", M.GPU_FIELDS, deadline_ms)
  if not main then
    return { ok = false, binary = binary, error = err }
  end
  local source = { ok = true, binary = binary, query_gpu = main }
  if short_row(main) then
    return source -- read() reports it; nothing more is asked of a driver that answers so
  end
  local function answer_or_error(kind, flag, fields)
    local answer, why = query(core, binary, kind, flag, fields, deadline_ms)
    return answer or { error = why }
  end
  source.tlimit = answer_or_error("tlimit", "--query-gpu", M.TLIMIT_FIELDS)
  for _, group in ipairs(M.SLOWDOWN_GROUPS) do
    source.slowdown = answer_or_error(group, "--query-gpu", slowdown_fields(group))
    if M.usable_optional(source.slowdown) then
      break
    end
  end
  source.compute_apps = answer_or_error("query-compute-apps", "--query-compute-apps", M.APP_FIELDS)
  for _, row in ipairs(source.compute_apps.rows or {}) do
    if row[4] then
      row[4] = M.process_binary(row[4])
    end
  end
  return source
end

local NOT_A_NUMBER = { [""] = true, ["[N/A]"] = true, ["N/A"] = true, ["[Not Supported]"] = true }

-- Integer rule: trimmed; empty, [N/A], N/A, [Not Supported] and anything
-- unparsable are 0; otherwise parsed as a float and truncated.
function M.int_value(raw)
  raw = text.trim(raw or "")
  if NOT_A_NUMBER[raw] then
    return 0
  end
  local value = tonumber(raw)
  if not value or value ~= value or value == math.huge or value == -math.huge then
    return 0
  end
  return math.tointeger(value < 0 and math.ceil(value) or math.floor(value)) or 0
end

-- Float rule: unparsable (including [N/A]) is 0.
function M.float_value(raw)
  local value = tonumber(text.trim(raw or ""))
  if not value or value ~= value or value == math.huge or value == -math.huge then
    return 0
  end
  return value + 0.0
end

-- Reads a snapshot's nvidia source. Returns gpus (records named as in the
-- ledger JSON, SPEC §4.1), processes ({gpu_uuid, pid, used_memory_mib,
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
  local short = short_row(main)
  if short then
    errors[1] = string.format("nvidia-smi query-gpu: expected %d fields, got %d", #M.GPU_FIELDS, short)
    return gpus, processes, errors
  end
  local by_index = {}
  for _, row in ipairs(main.rows) do
    local gpu = {
      index = M.int_value(row[1]),
      uuid = text.trim(row[2]),
      model = text.trim(row[3]),
      busId = text.trim(row[4]),
      memoryUsedMiB = M.int_value(row[5]),
      memoryTotalMiB = M.int_value(row[6]),
      utilizationPct = M.int_value(row[7]),
      memoryUtilizationPct = M.int_value(row[8]),
      temperatureC = M.int_value(row[9]),
      powerW = M.float_value(row[10]),
      encoderSessions = M.int_value(row[11]),
      encoderAverageFps = M.float_value(row[12]),
    }
    gpus[#gpus + 1] = gpu
    by_index[text.trim(row[1])] = gpu
  end

  if M.usable_optional(source.tlimit) then
    for _, row in ipairs(source.tlimit.rows) do
      local gpu, margin = by_index[text.trim(row[1])], text.trim(row[2])
      if gpu and margin:match("^[+-]?%d+$") then
        gpu.thermalMarginC = math.tointeger(tonumber(margin))
      end
    end
  end
  local FLAG = { Active = true, ["Not Active"] = false }
  if M.usable_optional(source.slowdown) then
    for _, row in ipairs(source.slowdown.rows) do
      local gpu = by_index[text.trim(row[1])]
      local hw, sw = FLAG[text.trim(row[2])], FLAG[text.trim(row[3])]
      if gpu and hw ~= nil and sw ~= nil then
        gpu.thermalSlowdown = hw or sw
      end
    end
  end

  local apps = source.compute_apps or {}
  if apps.error then
    errors[#errors + 1] = apps.error
  end
  for _, row in ipairs(apps.rows or {}) do
    if #row >= 4 then
      processes[#processes + 1] = {
        gpu_uuid = text.trim(row[1]),
        pid = M.int_value(row[2]),
        used_memory_mib = M.int_value(row[3]),
        process = M.process_binary(row[4]),
      }
    end
  end
  return gpus, processes, errors
end

return M
