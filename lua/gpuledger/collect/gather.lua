-- Asking several HTTP sources at once (Docker, Podman and Nomad in one
-- refresh), each written as plain code that asks, waits and asks again:
-- every task runs as a coroutine with a core whose http_get and
-- http_get_many hand their requests to one core.http_get_many run of all
-- the tasks together and resume the task when its answers are in. So a
-- source that drips holds only itself, and the tasks' deadlines overlap.
local M = {}

-- Hands a batch of requests to the run; returns their results, in order.
local function ask(requests)
  return coroutine.yield(requests)
end

-- The core a task gets: core itself but for http_get and http_get_many,
-- which ask the run (http_get_many without each; its deadline_ms caps every
-- request's timeout_ms).
local function task_core(core)
  local function http_get(url, opts)
    local request = { url = url }
    for key, value in pairs(opts or {}) do
      request[key] = value
    end
    local result = ask({ request })[1]
    if result.error then
      return nil, result.error
    end
    return result.status, result.body, result.content_type
  end
  local function http_get_many(requests, opts)
    opts = opts or {}
    assert(not opts.each, "gather: a task's http_get_many takes no each")
    if opts.deadline_ms then
      for _, request in ipairs(requests) do
        request.timeout_ms = math.min(request.timeout_ms or opts.deadline_ms, opts.deadline_ms)
      end
    end
    return ask(requests)
  end
  return setmetatable({ http_get = http_get, http_get_many = http_get_many }, { __index = core })
end

-- Runs tasks (functions of a core, which keep what they learn themselves)
-- together with core, within deadline_ms (every request also keeps its own
-- timeout_ms: a task sets those from its own deadline). Returns when every
-- task has ended. A task that raises ends the run, and its error is raised
-- again; a run that cannot start is every request's error.
function M.run(core, tasks, deadline_ms)
  local waiting = {} -- request index → {batch, slot}
  local task_error -- what a task raised
  local count = 0 -- the requests handed to the run so far
  local proxy = task_core(core)

  -- Resumes task with value until it asks for something or ends. Returns
  -- the requests it asks for (waiting on them), or nil when it ended.
  local function advance(task, value)
    while true do
      local ok, asked = coroutine.resume(task, value)
      if not ok then
        task_error = asked
        error(asked, 0)
      elseif coroutine.status(task) == "dead" then
        return nil
      elseif #asked > 0 then
        local batch = { task = task, results = {}, left = #asked }
        for slot = 1, #asked do
          count = count + 1
          waiting[count] = { batch, slot }
        end
        return asked
      end
      value = {}
    end
  end

  local first = {}
  for _, fn in ipairs(tasks) do
    for _, request in ipairs(advance(coroutine.create(fn), proxy) or {}) do
      first[#first + 1] = request
    end
  end
  if #first == 0 then
    return
  end
  -- hears the result of request index; returns what its task asks next
  local function hear(index, result)
    local batch, slot = waiting[index][1], waiting[index][2]
    waiting[index] = nil
    batch.results[slot] = result
    batch.left = batch.left - 1
    if batch.left == 0 then
      return advance(batch.task, batch.results)
    end
  end
  local ok, why = pcall(core.http_get_many, first, { deadline_ms = deadline_ms, each = hear })
  if task_error then
    error(task_error, 0)
  end
  -- the run could not start (no descriptor left, …): every request still
  -- waiting fails with that cause, so that each source says it as its own
  while not ok and next(waiting) do
    local index = next(waiting)
    hear(index, { error = tostring(why) })
  end
end

return M
