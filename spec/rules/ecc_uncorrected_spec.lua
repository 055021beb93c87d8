-- rules/ecc_uncorrected.lua, as embedded in the core: uncorrected ECC errors since the driver loaded.
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("ecc-uncorrected", function()
  it("one error fires", function()
    assert.matches("^1 uncorrected ECC error%(s%) since the driver loaded — drain the GPU and reset it",
      one("ecc-uncorrected", { gpu { health = { eccUncorrectedVolatile = 1 } } }).message)
  end)

  it("none since the driver loaded does not, whatever the lifetime count", function()
    none("ecc-uncorrected", { gpu { health = { eccUncorrectedVolatile = 0, eccUncorrectedAggregate = 4 } } })
  end)

  it("ecc_uncorrected_max moves the boundary", function()
    none("ecc-uncorrected", { gpu { health = { eccUncorrectedVolatile = 2 } } }, nil, { ecc_uncorrected_max = 2 })
    one("ecc-uncorrected", { gpu { health = { eccUncorrectedVolatile = 3 } } }, nil, { ecc_uncorrected_max = 2 })
  end)
end)
