-- gather.run with a fake core: tasks written as plain calls take turns,
-- each resumed as its answers come, and a task's error is not swallowed.
local H = require "helper"
local gather = require "gpuledger.collect.gather"

-- A fake core that answers every GET with its url after the host, and
-- records the requests in the order the run got them.
local function fake_core()
  local fake = { asked = {} }
  function fake.http_get(url, request)
    fake.asked[#fake.asked + 1] = { url = url, timeout_ms = request.timeout_ms }
    if url:find("/refused", 1, true) then
      return nil, "Connection refused"
    end
    return 200, url:match("^http://[^/]+(.*)$"), "text/plain"
  end
  function fake.http_get_many(requests, opts)
    fake.runs = (fake.runs or 0) + 1
    return H.http_get_many_over(fake)(requests, opts)
  end
  function fake.monotonic_ms() return 1000 end
  return fake
end

local function urls(fake)
  local list = {}
  for i, asked in ipairs(fake.asked) do
    list[i] = asked.url
  end
  return list
end

describe("gpuledger.collect.gather", function()
  it("runs the tasks' calls in one run, each task's next call after its answer", function()
    local fake, heard = fake_core(), {}
    local function task(name)
      return function(core)
        local _, first = core.http_get("http://h/" .. name .. "/1", { timeout_ms = 500 })
        local _, second = core.http_get("http://h/" .. name .. "/2", { timeout_ms = 500 })
        heard[name] = { first, second }
      end
    end
    gather.run(fake, { task("a"), task("b") }, 6000)
    assert.equal(1, fake.runs)
    assert.same({ "http://h/a/1", "http://h/b/1", "http://h/a/2", "http://h/b/2" }, urls(fake))
    assert.same({ a = { "/a/1", "/a/2" }, b = { "/b/1", "/b/2" } }, heard)
  end)

  it("hands each answer to the task and slot that asked, in whatever order the answers come", function()
    local fake, heard = fake_core(), {}
    function fake.http_get_many(requests, opts) -- answers the newest request first
      local pending, count = {}, #requests
      for i, request in ipairs(requests) do
        pending[i] = { i, request }
      end
      while #pending > 0 do
        local index, request = table.unpack(table.remove(pending))
        local status, body = fake.http_get(request.url, request)
        for _, more in ipairs(opts.each(index, { status = status, body = body }) or {}) do
          count = count + 1
          pending[#pending + 1] = { count, more }
        end
      end
    end
    local function task(name)
      return function(core)
        local got = core.http_get_many({ { url = "http://h/" .. name .. "/x" }, { url = "http://h/" .. name .. "/y" } }, {})
        local _, again = core.http_get("http://h/" .. name .. "/z", {})
        heard[name] = { got[1].body, got[2].body, again }
      end
    end
    gather.run(fake, { task("a"), task("b") }, 6000)
    assert.same({ a = { "/a/x", "/a/y", "/a/z" }, b = { "/b/x", "/b/y", "/b/z" } }, heard)
  end)

  it("gives http_get's failure as nil and the cause, and core's other functions as they are", function()
    local fake, got = fake_core(), nil
    gather.run(fake, { function(core)
      got = { core.http_get("http://h/refused", {}) }
      got[3] = core.monotonic_ms()
    end }, 6000)
    assert.same({ nil, "Connection refused", 1000 }, got)
  end)

  it("answers a task's http_get_many in the order of its requests, capping timeouts at its deadline_ms", function()
    local fake, got = fake_core(), nil
    gather.run(fake, { function(core)
      got = core.http_get_many({ { url = "http://h/x", timeout_ms = 9000 }, { url = "http://h/y" } }, { deadline_ms = 700 })
    end }, 6000)
    assert.same({ "/x", "/y" }, { got[1].body, got[2].body })
    assert.same({ 700, 700 }, { fake.asked[1].timeout_ms, fake.asked[2].timeout_ms })
  end)

  it("starts no run when no task asks anything", function()
    local fake, ran = fake_core(), false
    gather.run(fake, { function() ran = true end }, 6000)
    assert.is_true(ran)
    assert.is_nil(fake.runs)
  end)

  it("with the real core: a request added from each is heard with the next index; one that is no table is named", function()
    local heard = {}
    H.core.http_get_many({ { url = "" } }, { deadline_ms = 1000, each = function(index, result)
      heard[#heard + 1] = { index, result.error }
      if index == 1 then
        return { { url = "", timeout_ms = 100 } }
      end
    end })
    assert.same({ { 1, "no URL" }, { 2, "no URL" } }, heard)
    local ok, err = pcall(H.core.http_get_many, { { url = "" } }, { each = function() return { 42 } end })
    assert.is_false(ok)
    assert.matches("http_get_many: an added request 1 is not a table", err, 1, true)
  end)

  it("a run that cannot start is the error of every request still waiting, and each task goes on", function()
    local fake, got = fake_core(), {}
    fake.http_get_many = function() error("http_get_many: Too many open files", 0) end
    local function task(name)
      return function(core)
        local first = { core.http_get("http://h/" .. name, {}) }
        local second = { core.http_get("http://h/" .. name .. "/again", {}) }
        got[name] = { first[2], second[2] }
      end
    end
    gather.run(fake, { task("a"), task("b") }, 6000)
    local cause = "http_get_many: Too many open files"
    assert.same({ a = { cause, cause }, b = { cause, cause } }, got)
  end)

  it("raises a task's error again", function()
    local fake = fake_core()
    assert.has_error(function()
      gather.run(fake, { function(core)
        core.http_get("http://h/a", {})
        error("collector bug", 0)
      end }, 6000)
    end, "collector bug")
  end)
end)
