-- rules/source_unavailable.lua, as embedded in the core: each condition of its finding
-- and its boundary (SPEC §3.3–3.4).
local H = require "helper"

local gpu, ledger = H.gpu, H.ledger

describe("source-unavailable (ledger errors)", function()
  it("one node-level ERROR per ledger error, the error's text, in order, no gpu", function()
    local found = H.run_rules(ledger({ gpu {} }, { errors = { "docker: connection refused", "nomad: HTTP 403" } }))
    local f = H.with_code(found, "source-unavailable")
    assert.equal(2, #f)
    assert.equal("docker: connection refused", f[1].message)
    assert.equal("nomad: HTTP 403", f[2].message)
    for _, x in ipairs(f) do
      assert.equal("ERROR", x.level)
      assert.is_nil(x.gpu)
      assert.equal("gpud", x.node)
    end
  end)

  it("a node whose nvidia-smi failed still reports its error", function()
    local found, worst = H.run_rules(ledger({}, { errors = { "nvidia-smi query-gpu: nvidia-smi: not found" } }))
    assert.equal(1, #found)
    assert.equal("ERROR", worst)
  end)
end)
