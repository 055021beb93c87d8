-- nvidia-smi (docs/sources.md#nvidia-smi), the impure half: asks its queries through the
-- core in rounds, the queries of a round at the same time (core.spawn_all), all of them by one
-- deadline, and keeps their raw rows for the snapshot (gpuledger.sources.nvidia,
-- sources.health and sources.mig read them). Round one: the main query, the process list, the
-- driver's field list (--help-query-gpu) with its versions (--version: the driver's and CUDA's,
-- which no --query-gpu field gives), and the optional query (sources/nvidia_optional.lua) that
-- the newest driver's field list gives: a guess, kept when the optional query this driver's own
-- list gives is the same, so a current driver is asked in one round of five processes. An older
-- driver refuses the guess, or its list gives another query: round two asks that query and,
-- where its list has no remapped_rows.* fields, --query-remapped-rows. The field list is
-- remembered per binary, so a serve asks one round of three processes (or four, the remapped
-- rows beside) from its second refresh on; a GPU in MIG mode adds a round (collect/mig.lua).
local json = require "gpuledger.json"
local health = require "gpuledger.sources.health"
local mig = require "gpuledger.collect.mig"
local optional = require "gpuledger.sources.nvidia_optional"
local parse = require "gpuledger.sources.nvidia"
local run = require "gpuledger.collect.nvidia_run"

local M = {}

M.TIMEOUT_MS = 10000 -- for all of one collect's queries together

local FORMAT = "--format=csv,noheader,nounits"

-- The ask of a CSV query: key, its kind (its name in errors), and args.
local function query(key, kind, flag, fields)
  return { key = key, kind = kind, fields = fields, args = { flag .. "=" .. table.concat(fields, ","), FORMAT } }
end

local MAIN = query("main", "query-gpu", "--query-gpu", parse.GPU_FIELDS)
local APPS = query("apps", "query-compute-apps", "--query-compute-apps", parse.APP_FIELDS)
local REMAPPED = query("remapped", "remapped-rows", "--query-remapped-rows", health.REMAPPED_ROWS_FIELDS)
local HELP = { key = "help", args = { "--help-query-gpu" } }
local VERSION = { key = "version", args = { "--version" } }

-- What --version's result says: {text} (its lines as printed), or {error}
-- (a driver whose nvidia-smi has no --version answers exit status 2,
-- "Option --version is not recognized").
local function version_of(binary, result)
  local why = run.failure(binary, "version", result)
  return why and { error = why } or { text = result.out }
end

-- The rows of a CSV query's result, or nil and its error (run.failure, or
-- "nvidia-smi <kind>: <binary>: csv: …").
local function rows_of(core, binary, kind, result)
  local why = run.failure(binary, kind, result)
  if why then
    return nil, why
  end
  local rows, bad = core.parse_csv(result.out)
  if not rows then
    return nil, string.format("%s: csv: %s", parse.asked(kind, binary), bad)
  end
  return rows
end

-- The answer {fields, rows} of ask's result, or {error=}.
local function answer_or_error(core, binary, ask, result)
  local rows, why = rows_of(core, binary, ask.kind, result)
  return rows and { fields = json.array(ask.fields), rows = json.array(rows) } or { error = why }
end

-- The snapshot's "nvidia" source from the main query's and the process
-- list's results: {ok=true, binary, query_gpu, compute_apps} (compute_apps
-- {fields, rows} or {error=}; absent after a row of another field count, which read()
-- reports), or {ok=false, binary, error} when the main query failed. A bare
-- name (not a path) that is nowhere in PATH is a node without an NVIDIA
-- driver, not a failure: {ok=true, binary, installed=false} with no GPU and
-- no process.
local function main_source(core, binary, results)
  if run.not_in_path(binary, results.main) then
    return { ok = true, binary = binary, installed = false,
      query_gpu = { fields = json.array(parse.GPU_FIELDS), rows = json.array() },
      compute_apps = { fields = json.array(parse.APP_FIELDS), rows = json.array() } }
  end
  local main = answer_or_error(core, binary, MAIN, results.main)
  if main.error then
    return { ok = false, binary = binary, error = main.error }
  end
  local source = { ok = true, binary = binary, query_gpu = main }
  if not parse.odd_row(main) then
    source.compute_apps = answer_or_error(core, binary, APPS, results.apps)
    for _, row in ipairs(source.compute_apps.rows or {}) do
      if row[4] then
        row[4] = parse.process_binary(row[4])
      end
    end
  end
  return source
end

-- The queries of round two for plan (optional.plan): the optional query
-- (none when the driver lists no optional field) and the remapped rows.
local function optional_asks(plan)
  local asks = {}
  if #plan.fields > 0 then
    asks[1] = query("optional", "optional", "--query-gpu", plan.fields)
  end
  if plan.remapped_rows then
    asks[#asks + 1] = REMAPPED
  end
  return asks
end

-- binary → {known = the field names its help lists, driver = the driver
-- version its optional query last reported, version = its --version
-- (version_of)}: asked again when the driver changes, or refuses a field
-- after all.
local drivers = {}

-- The field a failed optional query's result says the driver refused
-- (exit status 2, `Field "x" is not a valid field to query.`), or nil.
local function refused_field(result)
  return result and result.status == 2 and (result.out or ""):match('Field "([^"]*)" is not a valid field') or nil
end

-- Whether the optional query's result says the remembered field list of
-- driver is out of date: a field refused, or another driver version.
local function stale(core, driver, plan, result)
  if not result then
    return false
  elseif refused_field(result) then
    return true
  elseif result.error or result.status ~= 0 then
    return false
  end
  local rows = core.parse_csv(result.out)
  return rows ~= nil and optional.driver(plan, rows) ~= driver.driver
end

-- The answers of the optional query's result under plan: key → {fields,
-- rows} (optional.split), or key → {error} naming each part's own kind.
local function optional_answers(core, binary, plan, result)
  if #plan.fields == 0 then
    return {}
  end
  local rows = rows_of(core, binary, "optional", result)
  if rows then
    return optional.split(plan, rows), rows
  end
  local answers = {}
  for _, part in ipairs(plan.parts) do
    local _, why = rows_of(core, binary, part.kind, result)
    answers[part.key] = { error = why }
  end
  return answers
end

-- Fills sources (nvidia's and, with_health, the health source with the
-- driver's --version; the MIG mode's answer) from the optional answers and
-- the remapped rows' result.
local function fill_optional(core, binary, sources, answers, remapped, with_health, version)
  local source = sources.nvidia
  if source.compute_apps then -- (no thermal fields after a row of another field count)
    source.tlimit, source.slowdown = answers.tlimit, answers.slowdown
  end
  if not with_health then
    return
  end
  local answer = answers.health or { fields = json.array(), rows = json.array() } -- (no health field listed)
  if answer.error then
    sources.health = { ok = false, binary = binary, error = answer.error }
    return
  end
  sources.health = { ok = true, binary = binary, health = answer, version = version }
  if remapped then
    local rows = answer_or_error(core, binary, REMAPPED, remapped)
    if not rows.error or remapped.status ~= 2 then -- 2: this driver has no such query; nothing to read
      sources.health.remapped_rows = rows
    end
  end
end

-- Collects everything nvidia-smi is asked with core (core.spawn_all,
-- core.parse_csv), from binary, by deadline_ms (core.monotonic_ms; the one
-- deadline of all of nvidia-smi's queries: collect/node.lua sets it
-- M.TIMEOUT_MS from the start). Returns the snapshot's sources {nvidia,
-- health, mig}: nvidia always (main_source, with the optional tlimit and
-- slowdown answers, each {fields, rows} or {error=}); with_health, the
-- health source ({ok=true, binary, health = {fields, rows}, version
-- ({text} or {error}), remapped_rows?}, or {ok=false, binary, error}); mig where the field list
-- says a GPU is in MIG mode (collect/mig.lua), or {ok=false, binary, error}
-- when that cannot be told. Nothing but nvidia after a failed main query,
-- or on a node without the driver.
function M.collect(core, binary, with_health, deadline_ms)
  local driver = drivers[binary]
  -- the optional query of round one: the remembered driver's own, else the newest driver's
  local asked = optional.plan(driver and driver.known or optional.NEWEST_KNOWN, with_health)
  local asks = { MAIN, APPS }
  for _, ask in ipairs(optional_asks(asked)) do
    asks[#asks + 1] = ask
  end
  if not driver then
    asks[#asks + 1], asks[#asks + 2] = HELP, VERSION
  end
  local results = run.run_all(core, binary, asks, deadline_ms)
  local sources = { nvidia = main_source(core, binary, results) }
  if not sources.nvidia.ok or sources.nvidia.installed == false then
    return sources
  end
  if driver and stale(core, driver, asked, results.optional) then
    drivers[binary], driver = nil, nil
    run.run_all(core, binary, { HELP, VERSION }, deadline_ms, results)
  end
  local plan = asked
  if not driver then
    local why = run.failure(binary, "help-query-gpu", results.help)
    local known = not why and health.known_fields(results.help.out)
    if known and next(known) == nil then -- garbage, not the driver's field list
      why = string.format("%s: answered %d bytes that list no field to query", parse.asked("help-query-gpu", binary), #results.help.out)
    end
    if why then
      sources.health = with_health and { ok = false, binary = binary, error = why } or nil
      sources.mig = { ok = false, binary = binary, error = why }
      return sources
    end
    driver = { known = known, version = version_of(binary, results.version) }
    plan = optional.plan(driver.known, with_health)
    if refused_field(results.optional) or not optional.same(plan, asked) then -- asked again, as this driver's own
      local refused -- a field the driver lists but refuses: asked again without it
      repeat
        if refused then
          driver.known[refused] = nil
          plan = optional.plan(driver.known, with_health)
        end
        results.optional, results.remapped = nil, nil -- (the guess's, a stale plan's, or one refused)
        run.run_all(core, binary, optional_asks(plan), deadline_ms, results)
        refused = refused_field(results.optional)
      until not (refused and driver.known[refused])
    end
  end
  local answers, rows = optional_answers(core, binary, plan, results.optional)
  if rows then -- (a list that asks nothing is asked again: it costs no round)
    driver.driver = optional.driver(plan, rows)
    drivers[binary] = driver
  end
  fill_optional(core, binary, sources, answers, results.remapped, with_health, driver.version)
  sources.mig = mig.collect(core, binary, answers.mig_mode, deadline_ms)
  return sources
end

return M
