-- collect.nomad with a fake agent: its calls share one deadline, and a call
-- the deadline leaves no time for is not sent.
local collect_nomad = require "gpuledger.collect.nomad"

-- A fake core whose agent answers agent/self, the allocations and the node;
-- each request costs `step` ms of the clock.
local function agent_core(step)
  local fake = { asked = {}, now = 0 }
  function fake.monotonic_ms() return fake.now end
  function fake.getenv() return nil end
  function fake.http_get(url, request)
    fake.now = fake.now + step
    fake.asked[#fake.asked + 1] = { path = url:match("^http://[^/]+(.*)$"), timeout_ms = request.timeout_ms }
    if url:find("/v1/agent/self", 1, true) then
      return 200, '{"stats": {"client": {"node_id": "n1"}}}', "application/json"
    end
    return 200, "[]", "application/json"
  end
  return fake
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
end)
