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

-- A view is an empty table whose metatable (hidden from rules by
-- __metatable) holds, under keys no rule can name, the table it shows and
-- the maker of the views of its nested tables.
local ORIGINAL, VIEW_OF = {}, {}

-- The table that t, a view, shows; nil when t is no view.
local function original_of(t)
  local metatable = debug.getmetatable(t)
  return type(metatable) == "table" and rawget(metatable, ORIGINAL) or nil
end

local function view_len(view)
  return #original_of(view)
end

-- pairs of a view: the keys of the table it shows, in their order, each value as
-- indexing the view gives it (a nested table's view).
local function view_pairs(view)
  local original = original_of(view)
  return function(_, key)
    local k = next(original, key)
    if k == nil then
      return nil
    end
    return k, view[k]
  end, view, nil
end

-- The first read of a view: its __index becomes its original when no field
-- is a table, else a table of the views of the nested tables that falls
-- through to the original for every other field, so that every later read
-- is a lookup Lua makes itself, without a call. Only a finished table is
-- kept, so a rule stopped halfway leaves nothing half-made.
local function first_read(view, key)
  local metatable = debug.getmetatable(view)
  local original, view_of = metatable[ORIGINAL], metatable[VIEW_OF]
  local nested, scalars = nil, false
  for k, v in next, original do
    if type(v) == "table" then
      nested = nested or {}
      nested[k] = view_of(v)
    else
      scalars = true
    end
  end
  if nested and scalars then
    setmetatable(nested, { __index = original })
  end
  metatable.__index = nested or original
  return view[key]
end

-- Returns a read-only view of t, whose nested tables are read-only views
-- too (one view per table: the same table reached twice gives the same
-- view). ipairs, pairs, # and indexing work on it; assignment, rawset and
-- setmetatable do not. Which of a table's fields are tables is looked at
-- when the view is first read, and a later read of any other field reads
-- the table itself: so take a view for each judging, of tables nothing
-- gives a new table field while rules read them (the program adds each
-- GPU's healthVerdict only once every rule has run). A view of a view, or
-- of a value that is no table, is the value itself.
function M.readonly(t)
  if type(t) ~= "table" or original_of(t) then
    return t
  end
  local views = {} -- original → view
  local function view_of(original)
    local view = views[original]
    if not view then
      view = setmetatable({}, {
        __index = first_read, __newindex = refuse_write, __len = view_len, __pairs = view_pairs,
        __metatable = "read-only", [ORIGINAL] = original, [VIEW_OF] = view_of,
      })
      views[original] = view
    end
    return view
  end
  return view_of(t)
end

-- The table behind a read-only view (or t itself).
function M.original(t)
  return original_of(t) or t
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
  local original = original_of(t)
  if original then
    local k = next(original, key)
    if k == nil then
      return nil
    end
    return k, t[k]
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

-- Whether the searcher of M.searcher would load anything from scripts_dir
-- (a directory): whether core.search_script, the lookup the searcher makes,
-- finds the site's copy of one of the program's Lua modules there, or
-- cannot read one (which the searcher reports as an error). A module of
-- the site's own is reached only through such a copy. The program's
-- modules are all gpuledger.*, looked up under scripts_dir/gpuledger/: when
-- that is missing (an empty directory, as the .deb installs), one stat
-- says so, where asking for each module would copy every embedded text.
function M.site_scripts_in(core, scripts_dir)
  if select(3, core.stat(scripts_dir .. "/gpuledger")) == "ENOENT" then
    return false
  end
  for _, path in ipairs(core.embedded_files("lua/gpuledger/")) do
    local module = path:match("^lua/(.*)%.lua$") -- the embedded files are modules and their data
    if module and select(3, core.search_script(module:gsub("/", "."), scripts_dir, "lua/")) ~= "embedded" then
      return true
    end
  end
  return false
end

-- Makes the searcher of M.searcher package.searchers' only entry (the
-- host does, once the command line names the scripts directory).
function M.install_searcher(core, scripts_dir)
  package.searchers = { M.searcher(core, scripts_dir) }
end

return M
