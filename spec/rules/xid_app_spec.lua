-- rules/xid_app.lua, as embedded in the core: Xids of the catalogue's app class (and codes it does not list).
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"
local xid = H.xid

describe("xid-app", function()
  it("an app Xid fires", function()
    assert.equal("Xid 13 (meaning 13) this boot — action 13" .. FREE, one("xid-app", { gpu { xids = { xid(13, "app"), xid(94, "memory") } } }).message)
  end)

  it("an ignored one does not", function()
    none("xid-app", { gpu { xids = { xid(45, "ignore") } } })
  end)
end)
