-- collect.nomad with a fake agent: its calls share one deadline, and a call
-- the deadline leaves no time for is not sent.
local collect_nomad = require "gpuledger.collect.nomad"
local json = require "gpuledger.json"
local nomad = require "gpuledger.sources.nomad"

-- A fake core whose agent answers agent/self, the allocations and the node
-- (`[]`, or bodies[path]); each request costs `step` ms of the clock.
local function agent_core(step, bodies)
  local fake = { asked = {}, now = 0 }
  function fake.monotonic_ms() return fake.now end
  function fake.getenv() return nil end
  function fake.env_is_set() return false end
  function fake.http_get(url, request)
    fake.now = fake.now + step
    fake.asked[#fake.asked + 1] = { path = url:match("^http://[^/]+(.*)$"), timeout_ms = request.timeout_ms }
    if url:find("/v1/agent/self", 1, true) then
      return 200, '{"stats": {"client": {"node_id": "n1"}}}', "application/json"
    end
    return 200, (bodies or {})[url:match("^http://[^/]+(.*)$")] or "[]", "application/json"
  end
  return fake
end

-- An allocation of job `job` holding GPU uuid, as Nomad answers it.
local function allocation(id, job, uuid)
  return string.format('{"ID": "%s", "JobID": "%s", "Namespace": "default", "TaskGroup": "g", "ClientStatus": "running",'
    .. ' "AllocatedResources": {"Tasks": {"t": {"Devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "L4",'
    .. ' "DeviceIDs": ["%s"]}]}}}}', id, job, uuid)
end

-- A node answer whose NodeResources.Devices is the JSON text devices.
local function node_with(devices)
  return '{"ID": "n1", "Name": "gpu-1", "NodeResources": {"Devices": ' .. devices .. '}}'
end

local CONFIG = { address = "http://127.0.0.1:4646", node_id = "", token_env = "NOMAD_TOKEN", client_cert = "", client_key = "" }

describe("gpuledger.collect.nomad", function()
  it("gives each call what is left of the one deadline", function()
    local fake = agent_core(1000)
    local source = collect_nomad.collect(fake, CONFIG, collect_nomad.DEADLINE_MS)
    assert.is_true(source.ok)
    assert.same({ "/v1/agent/self", "/v1/node/n1/allocations" }, { fake.asked[1].path, fake.asked[2].path })
    assert.same({ 5000, 4000 }, { fake.asked[1].timeout_ms, fake.asked[2].timeout_ms })
  end)

  it("does not send a call the deadline leaves no time for, and says which", function()
    local fake = agent_core(collect_nomad.DEADLINE_MS)
    local source = collect_nomad.collect(fake, CONFIG, collect_nomad.DEADLINE_MS)
    assert.equal(1, #fake.asked)
    assert.same({ ok = false, address = CONFIG.address,
      error = "nomad http://127.0.0.1:4646: GET /v1/node/n1/allocations: not asked: its deadline had passed" }, source)
  end)

  it("reads the allocations after a null or a wrong-typed one; the ledger names each bad one with the address", function()
    local body = "[" .. allocation("a1", "first", "GPU-1") .. ", null, 7, " .. allocation("a4", "after", "GPU-4") .. "]"
    local source = collect_nomad.collect(agent_core(1, { ["/v1/node/n1/allocations"] = body }), CONFIG, collect_nomad.DEADLINE_MS)
    assert.is_true(source.ok)
    for _, kept in ipairs { source, json.decode(json.encode(source)) } do -- as collected, and as a snapshot replays it
      local visible, reservations, err = nomad.read(kept)
      assert.same({ "first", "after" }, { reservations[1].jobId, reservations[2].jobId })
      assert.same({ "GPU-4" }, reservations[2].deviceIds)
      assert.truthy(visible.a4)
      assert.equal("nomad http://127.0.0.1:4646: unexpected answer: allocations[2] is null, want an object; "
        .. "allocations[3] is a number, want an object", err)
    end
  end)

  it("an object where the allocations' list belongs is the source's error naming the address", function()
    local body = '{"a1": ' .. allocation("a1", "first", "GPU-1") .. "}"
    local source = collect_nomad.collect(agent_core(1, { ["/v1/node/n1/allocations"] = body }), CONFIG, collect_nomad.DEADLINE_MS)
    assert.same({ ok = false, address = CONFIG.address, error = "nomad http://127.0.0.1:4646: GET /v1/node/n1/allocations: "
      .. "unexpected answer: the answer is an object, want a list" }, source)
  end)

  it("reads the device groups after a null one; an object where the device list belongs is the source's error", function()
    local group = '{"Vendor": "nvidia", "Type": "gpu", "Name": "L4", "Instances": [null, {"ID": "GPU-2", "Healthy": true}]}'
    local core = agent_core(1, { ["/v1/node/n1"] = node_with("[null, " .. group .. "]") })
    local source = collect_nomad.collect_devices(core, CONFIG, "n1", collect_nomad.DEADLINE_MS)
    assert.is_true(source.ok)
    local replayed = json.decode(json.encode(source.devices))
    assert.is_nil(replayed[1]) -- the null group and instance, kept in their places for the ledger to name
    assert.is_nil(replayed[2].Instances[1])
    assert.equal("GPU-2", replayed[2].Instances[2].ID)
    local object = agent_core(1, { ["/v1/node/n1"] = node_with('{"gpu": ' .. group .. "}") })
    assert.same({ ok = false, address = CONFIG.address, error = "nomad http://127.0.0.1:4646: GET /v1/node/n1: "
      .. "unexpected answer: NodeResources.Devices is an object, want a list" },
      collect_nomad.collect_devices(object, CONFIG, "n1", collect_nomad.DEADLINE_MS))
  end)
end)
