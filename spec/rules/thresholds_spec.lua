-- rules/thresholds.lua, as embedded in the core: the policy, its thresholds
-- with the choices given over them.
local H = require "helper"

local gpu, ledger = H.gpu, H.ledger

describe("a relaxed policy", function()
  it("(encoder -1, temp 0, allow-unmanaged) gives no BAD, no hot, no encoder", function()
    local found, worst = H.run_rules(ledger { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 20, temperatureC = 99,
      tenants = { H.docker_tenant() } } }, { encoder_max = -1, temp_max = 0, allow_unmanaged = true })
    assert.same({ "WARN unmanaged-tenant gpu0 GPU-fef8089b" }, H.summary(found))
    assert.equal("WARN", worst)
  end)
end)
