-- collect.docker with a fake engine: the list and the inspects within one
-- deadline, the inspects together, and an inspect that failed kept as such.
local H = require "helper"
local collect_docker = require "gpuledger.collect.docker"
local json = require "gpuledger.json"

-- A fake core whose engine lists ids and answers each inspect as inspects
-- says: a status and body, or a transport error ({error=}). The clock
-- advances 1 s on every request.
local function engine_core(listed, inspects)
  local fake = { asked = {}, batches = {}, now = 0 }
  function fake.monotonic_ms() return fake.now end
  function fake.http_get(url, request)
    fake.now = fake.now + 1000
    fake.asked[#fake.asked + 1] = { path = url:match("^http://localhost(.*)$"), timeout_ms = request.timeout_ms }
    if url:find("/containers/json", 1, true) and type(listed) == "string" then -- the list's body as it is
      return 200, listed, "application/json"
    elseif url:find("/containers/json", 1, true) then
      local list = {}
      for i, id in ipairs(listed) do
        list[i] = { Id = id }
      end
      return 200, json.encode(list), "application/json"
    end
    local answer = inspects[url:match("/containers/(%w+)/json")] or { 404, '{"message":"No such container"}' }
    if answer.error then
      return nil, answer.error
    end
    return answer[1], answer[2], "application/json"
  end
  function fake.http_get_many(requests, opts)
    fake.batches[#fake.batches + 1] = #requests
    return H.http_get_many_over(fake)(requests, opts)
  end
  return fake
end

local function inspect_of(id, name)
  return { 200, json.encode { Id = id, Name = "/" .. name, Config = { Image = "cuda:12", Labels = {}, Env = {} } } }
end

describe("gpuledger.collect.docker", function()
  local A, B, C = H.cid("a"), H.cid("b"), H.cid("c")

  it("inspects every listed container and every wanted one it did not list, together", function()
    local fake = engine_core({ A, B }, { [A] = inspect_of(A, "a"), [B] = inspect_of(B, "b"), [C] = inspect_of(C, "c") })
    local source = collect_docker.collect(fake, "docker", "unix:///run/docker.sock", { B, C })
    assert.is_true(source.ok)
    assert.same({ A, B, C }, { source.containers[1].Id, source.containers[2].Id, source.containers[3].Id })
    assert.same({ 3 }, fake.batches)
  end)

  it("asks everything within one deadline: each request gets only what is left of it", function()
    local fake = engine_core({ A }, { [A] = inspect_of(A, "a") })
    collect_docker.collect(fake, "docker", "unix:///run/docker.sock", {})
    assert.same({ collect_docker.DEADLINE_MS, collect_docker.DEADLINE_MS - 1000 }, { fake.asked[1].timeout_ms, fake.asked[2].timeout_ms })
  end)

  it("leaves out a container the engine does not know (404), and keeps an inspect that failed as an error naming the request", function()
    local fake = engine_core({ A, B, C }, {
      [A] = { error = "Timeout was reached (Operation timed out after 4000 milliseconds with 3 bytes received)" },
      [B] = { 500, '{"message":"layer does not exist"}' },
    })
    local source = collect_docker.collect(fake, "docker", "unix:///run/docker.sock", {})
    assert.equal(2, #source.containers)
    assert.same({ A, B }, { source.containers[1].Id, source.containers[2].Id })
    assert.equal("docker unix:///run/docker.sock: GET /containers/" .. A
      .. "/json: Timeout was reached (Operation timed out after 4000 milliseconds with 3 bytes received)", source.containers[1].Error)
    assert.equal("docker unix:///run/docker.sock: GET /containers/" .. B .. "/json: HTTP 500 (layer does not exist)",
      source.containers[2].Error)
  end)

  it("sends no inspect once the deadline has passed: each says it was not asked", function()
    local fake = engine_core({ A }, { [A] = inspect_of(A, "a") })
    local get = fake.http_get
    fake.http_get = function(url, request)
      fake.now = fake.now + collect_docker.DEADLINE_MS -- the list took all of it
      return get(url, request)
    end
    local source = collect_docker.collect(fake, "docker", "unix:///run/docker.sock", {})
    assert.same({}, fake.batches)
    assert.equal("docker unix:///run/docker.sock: GET /containers/" .. A .. "/json: not asked: its deadline had passed",
      source.containers[1].Error)
  end)

  it("inspects the containers listed after a null or a wrong-typed item, and names each such item", function()
    local fake = engine_core('[{"Id": "' .. A .. '"}, null, 5, {"Id": "' .. B .. '"}]', { [A] = inspect_of(A, "a"), [B] = inspect_of(B, "b") })
    local source = collect_docker.collect(fake, "docker", "unix:///run/docker.sock", {})
    assert.is_true(source.ok)
    assert.same({ A, B }, { source.containers[1].Id, source.containers[2].Id })
    assert.same({ "docker unix:///run/docker.sock: GET /containers/json: unexpected answer: [2] is null, want an object",
      "docker unix:///run/docker.sock: GET /containers/json: unexpected answer: [3] is a number, want an object" },
      { source.containers[3].Error, source.containers[4].Error })
  end)

  it("an object where the list belongs is the source's error naming the engine's address; nothing is inspected", function()
    local fake = engine_core('{"Id": "' .. A .. '"}', { [A] = inspect_of(A, "a") })
    local source = collect_docker.collect(fake, "docker", "unix:///run/docker.sock", { A })
    assert.same({ ok = false, endpoint = "unix:///run/docker.sock", error = "docker unix:///run/docker.sock: "
      .. "GET /containers/json: unexpected answer: the answer is an object, want a list" }, source)
    assert.equal(1, #fake.asked)
  end)

  it("a list that failed is the source's error, and nothing is inspected", function()
    local fake = engine_core({}, {})
    fake.http_get = function() return nil, "Couldn't connect to server" end
    local source = collect_docker.collect(fake, "podman", "unix:///run/podman/podman.sock", { A })
    assert.same({ ok = false, endpoint = "unix:///run/podman/podman.sock",
      error = "podman unix:///run/podman/podman.sock: GET /containers/json: Couldn't connect to server" }, source)
  end)
end)
