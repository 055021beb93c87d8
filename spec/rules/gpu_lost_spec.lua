-- rules/gpu_lost.lua, as embedded in the core: a GPU gone from nvidia-smi, or reading [GPU is lost].
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none
local FREE = " — not reserved: Nomad will place the next job here"

describe("gpu-lost", function()
  it("a GPU nvidia-smi no longer lists, named by Nomad and by an Xid 79, is lost", function()
    local f = one("gpu-lost", { gpu { index = -1, missing = true, uuid = "GPU-dead0000-0000-4000-8000-000000000000", busId = "00000000:AF:00.0", nomadDevice = { healthy = true, healthDescription = "" },
      xids = { { xid = 79, count = 1, class = "reboot", meaning = "m", action = "a", message = "m", processes = {}, last = "2026-11-29T07:41:00Z" } } } })
    assert.equal("BAD", f.level)
    assert.equal("gpu? GPU-dead0000", f.gpu)
    assert.equal("nvidia-smi no longer lists the GPU at 00000000:AF:00.0 (Nomad still lists it; Xid 79 this boot at 2026-11-29T07:41:00Z) — drain the node and reboot it; if it repeats, check the card's seating, riser and power" .. FREE, f.message)
  end)

  it("[GPU is lost] in the health query is lost", function()
    assert.matches("^the driver reports %[GPU is lost%]", one("gpu-lost", { gpu { health = { lost = true } } }).message)
  end)

  it("[GPU requires reset] alone is not lost", function()
    none("gpu-lost", { gpu { health = { requiresReset = true } } })
  end)
end)
