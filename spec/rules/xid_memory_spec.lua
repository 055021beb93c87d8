-- rules/xid_memory.lua, as embedded in the core: Xids of the catalogue's memory class.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"
local xid = H.xid

describe("xid-memory", function()
  it("a memory Xid fires", function()
    assert.equal("Xid 94 (meaning 94) this boot — action 94" .. FREE, one("xid-memory", { gpu { xids = { xid(94, "memory"), xid(13, "app") } } }).message)
  end)

  it("other classes do not", function()
    none("xid-memory", { gpu { xids = { xid(48, "reset"), xid(45, "ignore") } } })
  end)
end)
