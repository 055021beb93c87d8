-- rules/contended.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none = H.rule_one, H.rule_none

describe("contended", function()
  it("more than one tenant: each named as ls names it (gl.who)", function()
    local f = one("contended", { gpu { tenants = {
      H.nomad_tenant { container = "restreamer" },
      H.docker_tenant { container = false },
      H.host_tenant(),
    } } })
    assert.equal("WARN", f.level)
    assert.equal("3 tenants share this GPU: [worker/worker bbbbbbbbbbbb python3]", f.message)
  end)

  it("processes /proc could not place are not a tenant of their own (they may be the other's); a container no engine could identify is", function()
    local unknown = H.docker_tenant { container = false, image = false, containerId = "eeeeeeeeeeee", unidentified = true }
    none("contended", { gpu { tenants = { H.docker_tenant(), H.host_tenant { unidentified = true } } } })
    local f = one("contended", { gpu { tenants = { H.docker_tenant(), unknown, H.host_tenant { unidentified = true } } } })
    assert.equal("2 tenants share this GPU: [ffmpeg-manual eeeeeeeeeeee]", f.message) -- named by its id, not "docker"
  end)

  it("one tenant is not contended", function()
    none("contended", { gpu { tenants = { H.nomad_tenant() } } })
  end)
end)
