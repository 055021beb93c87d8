-- Where rules run: an environment with only pure libraries (no io, no os
-- beyond time and date, no require, no debug, load of text only), globals
-- that cannot be assigned, and read-only views of shared tables, so one rule
-- can neither reach the machine nor change what another rule sees.
local M = {}

local function copy(t)
  local c = {}
  for k, v in pairs(t) do
    c[k] = v
  end
  return c
end

-- The string metatable is shared by every string: hide it, or a rule could
-- reach string.* of everyone through getmetatable("").
local string_metatable = getmetatable("")
if type(string_metatable) == "table" then
  string_metatable.__metatable = false
end

local READONLY = setmetatable({}, { __mode = "k" }) -- view → original
local GUARDS = setmetatable({}, { __mode = "k" }) -- searchers guard_site_scripts made

local function refuse_write(_, key)
  error(string.format("cannot change field %q: the ledger and the policy are read-only", tostring(key)), 2)
end

-- The text of an error a rule raised, without running any of its code (a
-- __tostring metamethod would run outside the rule's budget).
function M.error_text(err)
  if type(err) == "string" then
    return err
  end
  return string.format("(error object is a %s value)", type(err))
end

-- Returns a read-only view of t (the same view for the same table), whose
-- nested tables are read-only views too. ipairs, pairs, # and indexing work
-- on it; assignment, rawset and setmetatable do not.
function M.readonly(t)
  if type(t) ~= "table" or READONLY[t] then
    return t
  end
  local cache = M._views
  if cache[t] then
    return cache[t]
  end
  local view = setmetatable({}, {
    __index = function(_, key)
      return M.readonly(t[key])
    end,
    __newindex = refuse_write,
    __len = function()
      return #t
    end,
    __pairs = function()
      local function step(_, key)
        local k, v = next(t, key)
        return k, M.readonly(v)
      end
      return step, nil, nil
    end,
    __metatable = "read-only",
  })
  READONLY[view] = t
  cache[t] = view
  return view
end
M._views = setmetatable({}, { __mode = "kv" })

-- The table behind a read-only view (or t itself).
function M.original(t)
  return READONLY[t] or t
end

-- setmetatable for rules: a finalizer (__gc) would run rule code after the
-- rule returned, outside its budget, so it is refused.
local function guarded_setmetatable(t, mt)
  if type(mt) == "table" and rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc is not allowed in a rule", 2)
  end
  local ok, result = pcall(setmetatable, t, mt)
  if not ok then -- a read-only view (the ledger, the policy, gl) or the sandbox itself
    error("setmetatable: " .. result .. " (the ledger, the policy and gl are read-only)", 2)
  end
  return result
end

-- next for rules: a read-only view is an empty table with a metatable, so
-- plain next would call every ledger table empty.
local function view_next(t, key)
  local original = READONLY[t]
  if original then
    local k, v = next(original, key)
    return k, M.readonly(v)
  end
  return next(t, key)
end

local function undeclared(_, key)
  error(string.format("assignment to global %q: rules keep their state in locals", tostring(key)), 2)
end

-- A fresh environment for one rule file. `extra` adds names (gl, for one).
function M.environment(extra)
  local base = {
    assert = assert, error = error, ipairs = ipairs, next = view_next, pairs = pairs,
    pcall = pcall, select = select, tonumber = tonumber, tostring = tostring,
    type = type, xpcall = xpcall, rawequal = rawequal, rawlen = rawlen,
    getmetatable = getmetatable, setmetatable = guarded_setmetatable,
    string = copy(string), table = copy(table), math = copy(math), utf8 = copy(utf8),
    os = { time = os.time, date = os.date, clock = os.clock },
    _VERSION = _VERSION,
  }
  for name, value in pairs(extra or {}) do
    base[name] = value
  end
  local env = setmetatable({}, { __index = base, __newindex = undeclared, __metatable = "sandbox" })
  base._G = env
  -- load: text only, into this same sandbox (or a table the caller has).
  base.load = function(chunk, name, _, chunk_env)
    if type(chunk) ~= "string" then
      return nil, "load takes a string in a rule"
    end
    return load(chunk, name, "t", chunk_env or env)
  end
  return env
end

-- What a site script may require: gpuledger's Lua modules and cjson. The C
-- core is not among them: a module gets it as an argument from the program.
local function script_require(name)
  if type(name) ~= "string" or not (name == "cjson" or (name:match("^gpuledger%.") and name ~= "gpuledger.core")) then
    error(string.format("require %q: a site script may require gpuledger.* modules (not gpuledger.core) and cjson", tostring(name)), 2)
  end
  return require(name)
end

-- The environment of a site script (a module of the scripts directory): the
-- rules' sandbox plus require of gpuledger.* modules and the standard output
-- streams. No time or memory budget: a site script is part of the program.
function M.script_environment()
  return M.environment {
    require = script_require,
    io = { stdout = io.stdout, stderr = io.stderr, write = function(...) return io.stdout:write(...) end },
  }
end

-- Wraps the host's searcher (package.searchers, or the list given) so that a
-- module found in the site scripts directory (its origin is an absolute
-- path) runs in M.script_environment() instead of the program's globals.
-- Only the gpuledger host has a single searcher: under a stock lua5.4
-- (busted) nothing is wrapped unless a list is given. Returns true when it
-- wrapped the searcher (once: a second call changes nothing).
function M.guard_site_scripts(searchers)
  searchers = searchers or package.searchers
  local inner = searchers[1]
  if #searchers ~= 1 or type(inner) ~= "function" or GUARDS[inner] then
    return false
  end
  local getupvalue, setupvalue = debug.getupvalue, debug.setupvalue
  local make_environment = M.script_environment
  local function guarded(name)
    local loader, origin = inner(name)
    if type(loader) == "function" and type(origin) == "string" and origin:sub(1, 1) == "/" then
      if getupvalue(loader, 1) ~= "_ENV" then
        error(string.format("%s: cannot give the site script its sandbox", origin), 0)
      end
      setupvalue(loader, 1, make_environment())
    end
    return loader, origin
  end
  GUARDS[guarded] = true
  searchers[1] = guarded
  return true
end

return M
