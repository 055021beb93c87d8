local grafana = require "gpuledger.grafana"

describe("gpuledger.grafana", function()
  it("base: empty (no links) or an http(s) URL without trailing slashes", function()
    assert.equal("", grafana.base(""))
    assert.equal("https://grafana.test", grafana.base("https://grafana.test/"))
    assert.equal("http://10.0.0.9:3000/grafana", grafana.base("http://10.0.0.9:3000/grafana"))
    for _, bad in ipairs { "javascript:alert(1)", "grafana.test", "ftp://grafana.test", 'https://x"><b>', "https://" } do
      local base, why = grafana.base(bad)
      assert.is_nil(base)
      assert.truthy(why:find("--grafana-url", 1, true))
    end
  end)

  it("link: the dashboard with the node, and the GPU when given; nil without a base", function()
    assert.equal("https://g.test/d/gpuledger/gpuledger?var-node=gpu%20a", grafana.link("https://g.test", "gpu a"))
    assert.equal("https://g.test/d/gpuledger/gpuledger?var-node=gpud&var-gpu=3", grafana.link("https://g.test", "gpud", 3))
    assert.is_nil(grafana.link("", "gpud", 0))
    assert.is_nil(grafana.link(nil, "gpud"))
  end)
end)
