-- rules/retired_pages_high.lua, as embedded in the core: retired pages at or above retired_pages_max.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("retired-pages-high", function()
  it("60 pages (retired_pages_max) fires", function()
    assert.matches("^60 memory pages retired %(40 single%-bit, 20 double%-bit%), at or above 60",
      one("retired-pages-high", { gpu { health = { retiredPagesSbe = 40, retiredPagesDbe = 20 } } }).message)
  end)

  it("59 does not", function()
    none("retired-pages-high", { gpu { health = { retiredPagesSbe = 40, retiredPagesDbe = 19 } } })
  end)

  it("retired_pages_max moves the boundary", function()
    one("retired-pages-high", { gpu { health = { retiredPagesSbe = 3 } } }, nil, { retired_pages_max = 3 })
    none("retired-pages-high", { gpu { health = { retiredPagesSbe = 2 } } }, nil, { retired_pages_max = 3 })
  end)
end)
