-- rules/hot.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none, contains = H.rule_one, H.rule_none, H.contains

describe("hot", function()
  it("thermal slowdown at 70 °C is hot, in slowdown words", function()
    local f = one("hot", { gpu { temperatureC = 70, powerW = 201.4, thermalSlowdown = true } })
    assert.equal("WARN", f.level)
    assert.equal("thermal slowdown active at 70 °C, 201 W — the card is clocking itself down", f.message)
    assert.equal("gpu0 GPU-fef8089b", f.gpu)
  end)

  it("slowdown wins over a wide margin", function()
    contains("thermal slowdown", one("hot", { gpu { temperatureC = 60, thermalSlowdown = true, thermalMarginC = 30 } }).message)
  end)

  it("a margin of 4 at 80 °C is hot, citing 4 °C", function()
    local f = one("hot", { gpu { temperatureC = 80, thermalMarginC = 4, powerW = 70 } })
    assert.equal("80 °C, 4 °C from the card's own slowdown temperature, 70 W", f.message)
  end)

  it("a margin of 5 is hot (at thermal_margin_min)", function()
    one("hot", { gpu { temperatureC = 80, thermalMarginC = 5 } })
  end)

  it("a margin of 6 is not hot", function()
    none("hot", { gpu { temperatureC = 80, thermalMarginC = 6 } })
  end)

  it("thermal_margin_min moves the boundary", function()
    one("hot", { gpu { temperatureC = 70, thermalMarginC = 8 } }, nil, { thermal_margin_min = 8 })
    none("hot", { gpu { temperatureC = 70, thermalMarginC = 9 } }, nil, { thermal_margin_min = 8 })
    none("hot", { gpu { temperatureC = 70, thermalMarginC = 3 } }, nil, { thermal_margin_min = 2 })
  end)

  it("a margin of 20 with slowdown false at 90 °C is not hot (--temp-max ignored)", function()
    none("hot", { gpu { temperatureC = 90, thermalMarginC = 20, thermalSlowdown = false } })
  end)

  it("a margin of 20 alone at 90 °C is not hot", function()
    none("hot", { gpu { temperatureC = 90, thermalMarginC = 20 } })
  end)

  it("slowdown false without a margin at 95 °C is not hot", function()
    none("hot", { gpu { temperatureC = 95, thermalSlowdown = false } })
  end)

  it("neither reported at 90 °C is hot, citing --temp-max", function()
    local f = one("hot", { gpu { temperatureC = 90, powerW = 250 } })
    assert.equal("90 °C (--temp-max 85; the driver reports no thermal margin), 250 W", f.message)
  end)

  it("at --temp-max 85: 85 °C is hot, 84 °C is not", function()
    one("hot", { gpu { temperatureC = 85 } })
    none("hot", { gpu { temperatureC = 84 } })
  end)

  it("--temp-max 70 is cited", function()
    contains("--temp-max 70", one("hot", { gpu { temperatureC = 75 } }, { temp_max = 70 }).message)
  end)

  it("--temp-max 0 never finds the fallback", function()
    none("hot", { gpu { temperatureC = 120 } }, { temp_max = 0 })
  end)

  it("--temp-max 0 leaves the driver's verdicts alone", function()
    one("hot", { gpu { temperatureC = 70, thermalSlowdown = true } }, { temp_max = 0 })
  end)
end)
