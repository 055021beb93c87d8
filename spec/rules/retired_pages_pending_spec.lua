-- rules/retired_pages_pending.lua, as embedded in the core: retired_pages.pending.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("retired-pages-pending", function()
  it("Yes fires, with the pages retired so far", function()
    assert.matches("^memory pages pending retirement %(2 single%-bit, 1 double%-bit pages retired so far%) — drain the node and reboot it",
      one("retired-pages-pending", { gpu { health = { retiredPagesPending = true, retiredPagesSbe = 2, retiredPagesDbe = 1 } } }).message)
  end)

  it("No does not", function()
    none("retired-pages-pending", { gpu { health = { retiredPagesPending = false } } })
  end)
end)
