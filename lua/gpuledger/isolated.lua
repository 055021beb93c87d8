-- Where the program runs site code: never in its own process. The judge
-- (judge.lua) loads each site rule file, gives its level and evaluates it
-- through M.call: in a child of its own (core.run_isolated) under a
-- deadline in CPU time and a memory limit; only its findings come back, as
-- JSON. One child per file keeps that simple: a child that is killed takes
-- only its own file's work with it, so nothing has to be rerun or told apart
-- afterwards. The site's data files are read in a child too (M.data_of), and
-- the renderers, which a site may replace from the scripts directory, when
-- that directory holds a script (docs/rules.md, "What a site gets").
local errors = require "gpuledger.errors"
local json = require "gpuledger.json"
local rule_data = require "gpuledger.rule_data"
local sandbox = require "gpuledger.sandbox"

local M = {}

-- Each rule file's deadline (loading it, its level, its evaluations), the
-- whole set's, and the renderers', all in CPU time of the children: what a
-- child computed, which a busy node does not eat into as it does into
-- wall-clock time, so a rule that is slow only because other work shares
-- the CPUs is never cut short for it; and what each ledger judged past the
-- first adds to a file's deadline and to the set's (fleet judges every
-- node's ledger). A child also ends once WALL_TIMES its deadline has passed
-- on the wall clock: one that waits without computing (a sandboxed rule
-- cannot, but a child can hang on a lock another thread held at the fork)
-- uses no CPU time. docs/rules.md says how they are sized.
M.FILE_DEADLINE_MS = 2000
M.SET_DEADLINE_MS = 10000
M.RENDER_DEADLINE_MS = 5000
M.FILE_LEDGER_MS = 10
M.SET_LEDGER_MS = 50
M.WALL_TIMES = 3

-- The deadline of each rule file and of the whole set when they judge n
-- ledgers: FILE_DEADLINE_MS and SET_DEADLINE_MS for one ledger (or none),
-- and FILE_LEDGER_MS and SET_LEDGER_MS more for each further one.
function M.deadlines(n)
  local further = math.max(n - 1, 0)
  return M.FILE_DEADLINE_MS + further * M.FILE_LEDGER_MS, M.SET_DEADLINE_MS + further * M.SET_LEDGER_MS
end

-- value with every float that is a whole number made an integer again
-- (JSON gives floats; a GPU's index, the budgets must be integers).
local function integers(value)
  if type(value) == "table" then
    for k, v in pairs(value) do
      value[k] = integers(v)
    end
    return value
  end
  return json.whole(value)
end

-- Runs fn() in a child that may compute for cpu_ms (and lasts WALL_TIMES
-- that on the wall clock). Returns what it returned (a JSON-encodable
-- value, whole numbers as integers), or nil and why it did not; and last
-- the CPU time the child used, in ms (all of cpu_ms when it met a deadline:
-- the kernel's count of it may come in a little under).
function M.call(core, cpu_ms, fn)
  cpu_ms = math.max(1, cpu_ms)
  local before = core.children_cpu_ms()
  local answer, why, kind = core.run_isolated(function()
    return json.encode(fn())
  end, { cpu_ms = cpu_ms, deadline_ms = M.WALL_TIMES * cpu_ms })
  local used_ms = kind == "deadline" and cpu_ms or core.children_cpu_ms() - before
  if not answer then
    return nil, why, used_ms
  end
  local value, bad = json.decode(answer)
  if value == nil then
    return nil, bad, used_ms
  end
  return integers(value), nil, used_ms
end

-- The data files of sources (the embedded thresholds and Xid catalogue
-- with the site's files over them), loaded in a child and brought back as
-- plain data, so that no site code comes with them: {thresholds,
-- xid_catalogue}; and the errors of the data files, as text. When the
-- child fails, the embedded data and why. Without a site data file there is
-- no site code to run: the embedded data, read here.
function M.data_of(core, sources)
  if next(sources.data) == nil then
    return (rule_data.load(core, nil)), {}
  end
  local out, why = M.call(core, M.FILE_DEADLINE_MS, function()
    local data, data_errors = rule_data.load(core, sources.data)
    local texts = json.array()
    for _, err in ipairs(data_errors) do
      texts[#texts + 1] = errors.text(err)
    end
    return { thresholds = data.thresholds, xid_catalogue = data.xid_catalogue, errors = texts }
  end)
  if not out then
    local files = {}
    for _, file in ipairs(rule_data.FILES) do
      files[#files + 1] = sources.data[file.stem] and sources.data[file.stem].path
    end
    local named = #files > 0 and table.concat(files, ", ") or "the rules' data files"
    return (rule_data.load(core, nil)), { string.format("%s: %s; the embedded defaults stay", named, why) }
  end
  local catalogue = {} -- JSON keys are strings; the catalogue is by Xid code
  for code, entry in pairs(out.xid_catalogue or {}) do
    catalogue[math.tointeger(tonumber(code)) or code] = entry
  end
  return { thresholds = out.thresholds, xid_catalogue = catalogue }, out.errors
end

-- The program's modules written in C, which no site script replaces.
local C_MODULES = { ["gpuledger.core"] = true, ["gpuledger.json_write"] = true, ["gpuledger.shape_check"] = true }

-- Runs render() (which returns a string, or a table of strings) where the
-- site's scripts can run: in a child under the renderers' deadline, with
-- the site's modules of scripts_dir in place of the program's, when
-- scripts_dir is a directory that holds one (sandbox.site_scripts_in, asked
-- at every call, so a script put there is used at the next rendering);
-- here otherwise, with no site code to run (an empty directory, as the
-- .deb installs, costs no fork). Returns its result, or nil and why.
function M.render(core, scripts_dir, render)
  if scripts_dir == "" or core.stat(scripts_dir) ~= "dir" or not sandbox.site_scripts_in(core, scripts_dir) then
    return render()
  end
  local result, why = M.call(core, M.RENDER_DEADLINE_MS, function()
    for name in pairs(package.loaded) do
      if name:match("^gpuledger%.") and not C_MODULES[name] then
        package.loaded[name] = nil
      end
    end
    sandbox.install_searcher(core, scripts_dir)
    return render()
  end)
  return result, why
end

return M
