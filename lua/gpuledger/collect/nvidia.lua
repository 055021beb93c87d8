-- nvidia-smi (docs/sources.md#nvidia-smi), the impure half: runs the queries through the
-- core and keeps their raw rows for the snapshot (gpuledger.sources.nvidia
-- reads them).
local json = require "gpuledger.json"
local parse = require "gpuledger.sources.nvidia"
local text = require "gpuledger.text"

local M = {}

M.TIMEOUT_MS = 10000 -- for all of one collect's queries together
M.MAX_BYTES = 4 * 1024 * 1024

-- First line of a failed command's output, trimmed and kept short.
local function first_line(s)
  local line = text.trim(s):match("^[^\n]*") or ""
  if #line > 200 then
    line = line:sub(1, 200) .. "…"
  end
  return line
end

-- Runs nvidia-smi with args by deadline_ms (core.monotonic_ms). Returns
-- its output, or nil and an error naming the kind of query, the binary and
-- the cause; third, the exit status when it ran; fourth, true when binary
-- is a bare name found nowhere in PATH.
function M.run(core, binary, kind, args, deadline_ms)
  local argv = { binary, table.unpack(args) }
  local out, err, status = core.spawn(argv, { deadline_ms = deadline_ms, max_bytes = M.MAX_BYTES })
  local prefix = string.format("nvidia-smi %s: %s", kind, binary)
  if not out then
    local not_in_path = err == "not found" and not binary:find("/", 1, true)
    if not_in_path then
      err = "not found in PATH (--nvidia-smi names the binary)"
    end
    return nil, string.format("%s: %s", prefix, err), nil, not_in_path
  end
  if status ~= 0 then
    local said = first_line(out) ~= "" and first_line(out) or first_line(err)
    local ended = status and ("exit status " .. status) or "killed by a signal"
    return nil, string.format("%s: %s%s", prefix, ended, said ~= "" and (": " .. said) or ""), status
  end
  return out
end

-- Runs one query by deadline_ms (core.monotonic_ms). Returns {fields=,
-- rows=}, or nil and an error as M.run does (and its third and fourth).
function M.query(core, binary, kind, flag, fields, deadline_ms)
  local out, err, status, not_in_path = M.run(core, binary, kind,
    { flag .. "=" .. table.concat(fields, ","), "--format=csv,noheader,nounits" }, deadline_ms)
  if not out then
    return nil, err, status, not_in_path
  end
  local rows, why = core.parse_csv(out)
  if not rows then
    return nil, string.format("nvidia-smi %s csv: %s", kind, why)
  end
  return { fields = json.array(fields), rows = json.array(rows) }
end

-- Runs one query by deadline_ms as M.query does: its answer, or {error=}.
local function answer_or_error(core, binary, kind, flag, fields, deadline_ms)
  local answer, why = M.query(core, binary, kind, flag, fields, deadline_ms)
  return answer or { error = why }
end

-- Collects nvidia-smi's main query and who holds the GPUs (the process
-- list) with core (core.spawn, core.parse_csv) by deadline_ms
-- (core.monotonic_ms), the deadline that the health query and then the
-- thermal queries (M.collect_thermal) share (collect/node.lua sets it
-- M.TIMEOUT_MS from the start): what matters most is asked first.
-- Returns the snapshot's "nvidia" source: {ok=true, binary, query_gpu,
-- compute_apps} (compute_apps {fields, rows} or {error=}), or {ok=false,
-- binary, error} when the main query failed. A bare name (not a path) that
-- is nowhere in PATH is a node without an NVIDIA driver, not a failure:
-- {ok=true, binary, installed=false} with no GPU and no process.
function M.collect(core, binary, deadline_ms)
  local main, err, _, not_in_path = M.query(core, binary, "query-gpu", "--query-gpu", parse.GPU_FIELDS, deadline_ms)
  if not_in_path then
    local none = { fields = json.array(parse.GPU_FIELDS), rows = json.array() }
    return { ok = true, binary = binary, installed = false, query_gpu = none,
      compute_apps = { fields = json.array(parse.APP_FIELDS), rows = json.array() } }
  end
  if not main then
    return { ok = false, binary = binary, error = err }
  end
  local source = { ok = true, binary = binary, query_gpu = main }
  if parse.short_row(main) then
    return source -- read() reports it; nothing more is asked of a driver that answers so
  end
  source.compute_apps = answer_or_error(core, binary, "query-compute-apps", "--query-compute-apps", parse.APP_FIELDS, deadline_ms)
  for _, row in ipairs(source.compute_apps.rows or {}) do
    if row[4] then
      row[4] = parse.process_binary(row[4])
    end
  end
  return source
end

-- binary → the slowdown group its driver answered last, asked alone until
-- it stops answering (a serve asks every refresh; the driver may change).
local slowdown_groups = {}

-- The slowdown flags of binary by deadline_ms: the first group of
-- SLOWDOWN_GROUPS (clocks_event_reasons, else the legacy throttle reasons)
-- that answers, {fields, rows}, or the last one's {error=}.
local function collect_slowdown(core, binary, deadline_ms)
  local known = slowdown_groups[binary]
  local answer
  for _, group in ipairs(known and { known } or parse.SLOWDOWN_GROUPS) do
    answer = answer_or_error(core, binary, group, "--query-gpu", parse.slowdown_fields(group), deadline_ms)
    if parse.usable_optional(answer) then
      slowdown_groups[binary] = group
      return answer
    end
  end
  slowdown_groups[binary] = nil
  return known and collect_slowdown(core, binary, deadline_ms) or answer
end

-- Adds the optional thermal answers to source (an "nvidia" source of
-- M.collect), asked by deadline_ms (M.collect's): tlimit and the
-- slowdown flags (collect_slowdown), each {fields, rows} or {error=}.
-- Nothing is asked of a source that failed or answered short rows.
function M.collect_thermal(core, source, deadline_ms)
  if not source.ok or source.installed == false or parse.short_row(source.query_gpu) then
    return
  end
  source.tlimit = answer_or_error(core, source.binary, "tlimit", "--query-gpu", parse.TLIMIT_FIELDS, deadline_ms)
  source.slowdown = collect_slowdown(core, source.binary, deadline_ms)
end

return M
