-- Running nvidia-smi (docs/sources.md#nvidia-smi): several of its queries at the same time
-- through the core (core.spawn_all), under one deadline and one size cap, and the error that
-- names a query's failure: the kind of query, the binary and the cause.
local parse = require "gpuledger.sources.nvidia"
local text = require "gpuledger.text"

local M = {}

M.MAX_BYTES = 4 * 1024 * 1024

-- First line of a failed command's output, trimmed and kept short.
local function first_line(s)
  local line = text.trim(s):match("^[^\n]*") or ""
  if #line > 200 then
    line = line:sub(1, 200) .. "…"
  end
  return line
end

-- Whether a run of binary failed because binary is a bare name found
-- nowhere in PATH (result: one of core.spawn_all's results).
function M.not_in_path(binary, result)
  return result.error == "not found" and not binary:find("/", 1, true)
end

-- Why a run of binary asking kind gave no answer (result: one of
-- core.spawn_all's results): "nvidia-smi <kind>: <binary>: <cause>", the
-- cause being the spawn's, or the exit status and the first line it said;
-- nil when it ran and exited 0.
function M.failure(binary, kind, result)
  local prefix = parse.asked(kind, binary)
  if result.error then
    local cause = M.not_in_path(binary, result) and "not found in PATH (--nvidia-smi names the binary)" or result.error
    return string.format("%s: %s", prefix, cause)
  elseif result.status ~= 0 then
    local said = first_line(result.out) ~= "" and first_line(result.out) or first_line(result.err)
    local ended = result.status and ("exit status " .. result.status) or "killed by a signal"
    return string.format("%s: %s%s", prefix, ended, said ~= "" and (": " .. said) or "")
  end
end

-- Runs asks (a list of {key, args}) of binary at the same time with core,
-- by deadline_ms (core.monotonic_ms). Returns key → the run's result
-- ({out, err, status} or {error}, as core.spawn_all gives them), added to
-- results when given (a key asked again replaces its result).
function M.run_all(core, binary, asks, deadline_ms, results)
  local commands = {}
  for i, ask in ipairs(asks) do
    commands[i] = { binary, table.unpack(ask.args) }
  end
  local answers = #commands > 0 and core.spawn_all(commands, { deadline_ms = deadline_ms, max_bytes = M.MAX_BYTES }) or {}
  results = results or {}
  for i, ask in ipairs(asks) do
    results[ask.key] = answers[i]
  end
  return results
end

return M
