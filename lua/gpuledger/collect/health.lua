-- Collecting the nvidia-smi health query (docs/health.md#the-health-query): the fields are
-- chosen from the driver's --help-query-gpu, asked once per driver version
-- (the query carries driver_version; a different one, or a field the driver
-- no longer knows, asks the help again), and the remapped rows come from
-- --query-remapped-rows where the driver has no remapped_rows.* fields.
local health = require "gpuledger.sources.health"
local nvidia = require "gpuledger.collect.nvidia"
local text = require "gpuledger.text"

local M = {}

-- binary → {names, fallback, driver}: what to ask this driver.
local plans = {}

-- Asks the driver which fields it knows, by deadline_ms (core.monotonic_ms).
-- Returns the plan, or nil and why.
local function probe(core, binary, deadline_ms)
  local argv = { binary, "--help-query-gpu" }
  local out, err, status = core.spawn(argv, { deadline_ms = deadline_ms, max_bytes = nvidia.MAX_BYTES })
  if not out then
    return nil, string.format("nvidia-smi help-query-gpu: %s: %s", binary, err)
  elseif status ~= 0 then
    return nil, string.format("nvidia-smi help-query-gpu: %s: exit status %s", binary, tostring(status))
  end
  local names, fallback = health.plan(health.known_fields(out))
  return { names = names, fallback = fallback }
end

-- The driver version an answer reports (its driver_version column).
local function driver_of(answer)
  for i, name in ipairs(answer.fields) do
    if name == "driver_version" and answer.rows[1] then
      return text.trim(answer.rows[1][i] or "")
    end
  end
end

-- Runs the health query under a plan, by deadline_ms, probing the driver
-- again when the plan was made for another one. Returns the answer (or nil,
-- why).
local function ask(core, binary, deadline_ms)
  local plan = plans[binary]
  local fresh = plan == nil
  if fresh then
    local why
    plan, why = probe(core, binary, deadline_ms)
    if not plan then
      return nil, why
    end
  end
  local answer, err = nvidia.query(core, binary, "health", "--query-gpu", plan.names, deadline_ms)
  local stale = not fresh and ((not answer and err:find("is not a valid field", 1, true))
    or (answer and driver_of(answer) ~= plan.driver))
  if stale then
    plans[binary] = nil
    return ask(core, binary, deadline_ms)
  end
  if answer then
    plan.driver = driver_of(answer)
    plans[binary] = plan
  end
  return answer, err, plan
end

-- Collects the health query with core (core.spawn, core.parse_csv) from
-- the nvidia-smi binary, all of its queries by deadline_ms
-- (core.monotonic_ms: the deadline the node gives all of nvidia-smi's
-- queries). Returns the snapshot's "health" source:
-- {ok=true, binary, health = {fields, rows}, remapped_rows?} (remapped_rows,
-- for drivers without remapped_rows.* fields: {fields, rows} or {error};
-- absent when the driver has no such query either), or {ok=false, binary,
-- error}.
function M.collect(core, binary, deadline_ms)
  local answer, err, plan = ask(core, binary, deadline_ms)
  if not answer then
    return { ok = false, binary = binary, error = err }
  end
  local source = { ok = true, binary = binary, health = answer }
  if plan.fallback then
    local rows, why, status = nvidia.query(core, binary, "remapped-rows", "--query-remapped-rows",
      health.REMAPPED_ROWS_FIELDS, deadline_ms)
    if rows then
      source.remapped_rows = rows
    elseif status ~= 2 then -- 2: this driver has no such query; nothing to read
      source.remapped_rows = { error = why }
    end
  end
  return source
end

return M
