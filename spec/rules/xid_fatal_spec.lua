-- rules/xid_fatal.lua, as embedded in the core: Xids of the catalogue's reset and reboot classes.
local H = require "helper"

local gpu = H.gpu
local none = H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"
local xid = H.xid

describe("xid-fatal", function()
  it("one finding per code of the reset or reboot class, saying what to do", function()
    local found = H.rule_judged("xid-fatal", { gpu { xids = {
      xid(119, "reset", { count = 3, last = "2026-11-29T07:00:12.5Z", processes = { "nvidia-smi" }, meaning = "GSP RPC timeout" }),
      xid(79, "reboot"), xid(94, "memory"), xid(45, "ignore"),
    } } })
    assert.equal(2, #found)
    assert.equal("Xid 119 (GSP RPC timeout) ×3 this boot, last 2026-11-29T07:00:12Z, process nvidia-smi — action 119" .. FREE, found[1].message)
    assert.equal("Xid 79 (meaning 79) this boot — action 79" .. FREE, found[2].message)
  end)

  it("no Xid this boot is nothing", function()
    none("xid-fatal", { gpu { xids = {} } })
  end)
end)
