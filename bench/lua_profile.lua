-- Lua's count hook as a sampling profiler, for the bench harnesses (not a test;
-- judge_profile.lua and refresh_stages.lua load it with dofile, beside them):
-- every `every` VM instructions the running function and line are counted.
local M = {}

-- New samples: functions ("<name> <source>:<line defined>") and lines
-- ("<source>:<line>"), each key → count, and their total.
function M.new()
  return { functions = {}, lines = {}, total = 0 }
end

-- Calls fn(...) with a sample taken into samples every `every` VM
-- instructions; returns what fn returns.
function M.sampling(samples, every, fn, ...)
  debug.sethook(function()
    local info = debug.getinfo(2, "Sln")
    if info then
      local line = info.short_src .. ":" .. (info.currentline or 0)
      samples.lines[line] = (samples.lines[line] or 0) + 1
      local name = (info.name or "?") .. " " .. info.short_src .. ":" .. info.linedefined
      samples.functions[name] = (samples.functions[name] or 0) + 1
      samples.total = samples.total + 1
    end
  end, "", every)
  local results = table.pack(fn(...))
  debug.sethook()
  return table.unpack(results, 1, results.n)
end

-- The keys of counts (a samples' functions or lines), most counted first,
-- at most n of them.
function M.top(counts, n)
  local keys = {}
  for key in pairs(counts) do
    keys[#keys + 1] = key
  end
  table.sort(keys, function(a, b)
    return counts[a] > counts[b]
  end)
  return { table.unpack(keys, 1, math.min(n, #keys)) }
end

return M
