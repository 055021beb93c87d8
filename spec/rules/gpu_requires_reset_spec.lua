-- rules/gpu_requires_reset.lua, as embedded in the core: the driver's [GPU requires reset].
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("gpu-requires-reset", function()
  it("[GPU requires reset] fires", function()
    assert.matches("^the driver reports %[GPU requires reset%] — stop its allocations", one("gpu-requires-reset", { gpu { health = { requiresReset = true } } }).message)
  end)

  it("[GPU is lost] is another finding", function()
    none("gpu-requires-reset", { gpu { health = { lost = true } } })
  end)
end)
