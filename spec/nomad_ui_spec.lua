-- Links to Nomad's web UI (--nomad-ui-url), and the command without one.
local nomad_ui = require "gpuledger.nomad_ui"

describe("nomad_ui", function()
  it("checks the URL as --grafana-url is checked, naming the flag", function()
    assert.equal("https://nomad.test:4646", nomad_ui.base("https://nomad.test:4646/"))
    assert.equal("", nomad_ui.base(""))
    local base, why = nomad_ui.base("javascript:alert(1)")
    assert.is_nil(base)
    assert.truthy(why:find("--nomad-ui-url", 1, true))
  end)

  it("links an allocation, a job by name@namespace, and a client node; nothing without a base", function()
    local base = "https://nomad.test"
    assert.equal("https://nomad.test/ui/allocations/4d1e6a9b-2c3f", nomad_ui.alloc(base, "4d1e6a9b-2c3f"))
    assert.equal("https://nomad.test/ui/jobs/train%20x@ml", nomad_ui.job(base, "ml", "train x"))
    assert.equal("https://nomad.test/ui/jobs/worker@default", nomad_ui.job(base, "", "worker"))
    assert.equal("https://nomad.test/ui/clients/f7476465", nomad_ui.client(base, "f7476465"))
    assert.is_nil(nomad_ui.alloc("", "a"))
    assert.is_nil(nomad_ui.job("", "ml", "train"))
  end)

  it("says the command that shows an allocation, its namespace when not the default", function()
    assert.equal("nomad alloc status -namespace=ml 4d1e6a9b", nomad_ui.alloc_command("ml", "4d1e6a9b"))
    assert.equal("nomad alloc status 4d1e6a9b", nomad_ui.alloc_command("default", "4d1e6a9b"))
  end)
end)
