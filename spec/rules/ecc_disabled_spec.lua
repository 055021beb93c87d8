-- rules/ecc_disabled.lua, as embedded in the core: ECC supported but off.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"

describe("ecc-disabled", function()
  it("Disabled fires, saying when it comes back on", function()
    assert.equal("ECC is disabled (it is enabled from the next reset on) — enable it (nvidia-smi -e 1), then reset the GPU or reboot the node" .. FREE,
      one("ecc-disabled", { gpu { health = { eccMode = false, eccModePending = true } } }).message)
  end)

  it("Enabled does not", function()
    none("ecc-disabled", { gpu { health = { eccMode = true } } })
  end)

  it("not supported ([N/A] on a GeForce) does not", function()
    none("ecc-disabled", { gpu { health = {} } })
  end)
end)
