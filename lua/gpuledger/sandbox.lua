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

local READONLY = setmetatable({}, { __mode = "k" }) -- view → original

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
      local value = t[key]
      if type(value) ~= "table" then -- most reads: a number, a string, a flag
        return value
      end
      return cache[value] or M.readonly(value)
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

-- The modules that reach the machine: the C core, and the modules that hold
-- it or hand it on (the command line, the commands and what they share,
-- the servers' loop and their rule set, the collectors). spec/architecture_spec.lua checks that
-- every other module reaches none of them, through any chain of requires.
M.MACHINE_MODULES = {
  "^gpuledger%.core$", "^gpuledger%.cli$", "^gpuledger%.cmd$", "^gpuledger%.cmd%.", "^gpuledger%.server$",
  "^gpuledger%.served_rules$", "^gpuledger%.collect%.",
}

-- Whether a module name is one of M.MACHINE_MODULES.
function M.reaches_machine(name)
  for _, pattern in ipairs(M.MACHINE_MODULES) do
    if name:match(pattern) then
      return true
    end
  end
  return false
end

-- What a site script may require: cjson and gpuledger's Lua modules but
-- those that reach the machine (a renderer that could call cli.main with
-- its own --nvidia-smi would run any program as gpuledger's user). A
-- module gets the core as an argument from the program, never by require.
local function script_require(name)
  if type(name) ~= "string" or not (name == "cjson" or (name:match("^gpuledger%.") and not M.reaches_machine(name))) then
    error(string.format("require %q: a site script may require cjson and gpuledger.* modules, but not those that reach the machine (gpuledger.core, cli, cmd, cmd.*, server, served_rules, collect.*)", tostring(name)), 2)
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

-- Hides the string metatable, which every string shares, so that a rule
-- cannot reach string.* of everyone through getmetatable(""). The host
-- calls it once before any rule runs (requiring this module changes
-- nothing).
function M.setup()
  local string_metatable = getmetatable("")
  if type(string_metatable) == "table" then
    string_metatable.__metatable = false
  end
end

-- The searcher of gpuledger's modules: core.search_script's copy in
-- scripts_dir, run in M.script_environment() (given at load), else the
-- embedded copy, run as the program. Returns the loader and where it came
-- from, or why nothing was found.
function M.searcher(core, scripts_dir)
  local make_environment = M.script_environment
  return function(name)
    local text, chunkname, origin = core.search_script(name, scripts_dir, "lua/")
    if not text then
      return "\n\t" .. chunkname
    end
    -- a site script is text only; an embedded one may be bytecode (release build)
    local site = origin == "site"
    local loader, why = load(text, chunkname, site and "t" or "bt", site and make_environment() or _ENV)
    if not loader then
      error(why, 0)
    end
    return loader, chunkname:sub(2)
  end
end

-- Makes the searcher of M.searcher package.searchers' only entry (the
-- host does, once the command line names the scripts directory).
function M.install_searcher(core, scripts_dir)
  package.searchers = { M.searcher(core, scripts_dir) }
end

return M
