-- Runs one file of the rules directory (a rule, or a data file such as
-- thresholds.lua) in a sandbox under the load budget: its top level only
-- defines things, so the budget is small. A function the file gives back
-- and gpuledger calls outside the findings engine (a rule's level
-- function) runs under the same budget.
local errors = require "gpuledger.errors"

local M = {}

-- Budget for loading a file, and for a rule's level function.
local LOAD_INSTRUCTIONS = 5000000
local LOAD_BYTES = 16 * 1024 * 1024

-- Runs a chunk in env under the load budget: a site file's text, or an
-- embedded file (origin "embedded"), which may be bytecode (a release build
-- embeds the defaults precompiled). Returns true and its value (nil when
-- it returned nothing), or false and the error (errors.lua: its file, and
-- line when it has one).
function M.run(core, text, chunkname, env, origin)
  local file = chunkname:sub(2)
  local chunk, why = load(text, chunkname, origin == "embedded" and "bt" or "t", env)
  if not chunk then
    return false, errors.of_load(why, chunkname, file)
  end
  local ok, value = core.call_limited(chunk, LOAD_INSTRUCTIONS, LOAD_BYTES)
  if not ok then
    return false, errors.of_call(value, file)
  end
  return true, value
end

-- fn wrapped so that it runs under the load budget: the wrapper returns
-- true and fn's first value, or false and why it failed (errors.lua).
function M.limited(core, fn)
  return function(...)
    local ok, value = core.call_limited(fn, LOAD_INSTRUCTIONS, LOAD_BYTES, ...)
    if not ok then
      return false, errors.of_call(value)
    end
    return true, value
  end
end

return M
