-- rules/encoder_saturated.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none, contains = H.rule_one, H.rule_none, H.contains

describe("encoder-saturated", function()
  it("a GeForce 4090 at 12 sessions is saturated, citing 12 and GeForce", function()
    local f = one("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 12, encoderAverageFps = 58.7 } })
    assert.equal("WARN", f.level)
    assert.equal("12 encoder sessions, at the limit of 12 (the GeForce driver's cap, NVIDIA's support matrix), 59 fps average", f.message)
  end)

  it("a GeForce at 11 sessions is not", function()
    none("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 11 } })
  end)

  it("--encoder-max 8 on a Quadro RTX 4000 at 8 sessions cites the site's limit of 8", function()
    local f = one("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 8 } }, { encoder_max = 8 })
    contains("at the limit of 8 (the site's encoder_max: --encoder-max or thresholds.lua)", f.message)
  end)

  it("--encoder-max 8 at 7 sessions is not", function()
    none("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 7 } }, { encoder_max = 8 })
  end)

  it("--encoder-max -1 never finds", function()
    none("encoder-saturated", { gpu { model = "NVIDIA GeForce RTX 4090", encoderSessions = 40 } }, { encoder_max = -1 })
  end)

  it("an unknown card at 50 sessions is not judged", function()
    none("encoder-saturated", { gpu { model = "NVIDIA A100-SXM4-80GB", encoderSessions = 50 } })
    none("encoder-saturated", { gpu { model = "Quadro RTX 4000 Ada", encoderSessions = 50 } })
    none("encoder-saturated", { gpu { model = "", encoderSessions = 50 } })
  end)

  it("an unrestricted card (Quadro RTX 4000 at 40) is not", function()
    none("encoder-saturated", { gpu { model = "Quadro RTX 4000", encoderSessions = 40 } })
    none("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 40 } })
    none("encoder-saturated", { gpu { model = "Tesla T4", encoderSessions = 40 } })
  end)

  it("a site encoder_max threshold applies; the flag wins over it", function()
    local f = one("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 4 } }, nil, { encoder_max = 4 })
    contains("at the limit of 4 (the site's encoder_max", f.message) -- no flag named that was not given
    none("encoder-saturated", { gpu { model = "NVIDIA L4", encoderSessions = 4 } }, { encoder_max = 0 }, { encoder_max = 4 })
  end)
end)
