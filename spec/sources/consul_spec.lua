-- Discovery's pure parts (docs/contract.md#fleet): Consul's address and health
-- answer, Nomad's service registrations, --targets.
local consul = require "gpuledger.sources.consul"
local nomad = require "gpuledger.sources.nomad"
local options = require "gpuledger.options"

describe("sources.consul", function()
  it("makes the agent's base URL: default, scheme added (https with CONSUL_HTTP_SSL), other schemes refused", function()
    assert.equal("http://127.0.0.1:8500", consul.base_url("", false))
    assert.equal("http://consul.service:8500", consul.base_url("consul.service:8500", false))
    assert.equal("https://consul.service:8501", consul.base_url("consul.service:8501", true))
    assert.equal("http://10.0.0.2:8500", consul.base_url("http://10.0.0.2:8500/", true))
    local none, why = consul.base_url("ftp://c:1", false)
    assert.is_nil(none)
    assert.truthy(why:find("want host:port", 1, true))
    assert.is_true(consul.is_true("true"))
    assert.is_true(consul.is_true("1"))
    assert.is_false(consul.is_true("yes"))
  end)

  it("takes passing entries' service address, else the node's, IPv6 in brackets, sorted by node", function()
    local targets = consul.targets {
      { Node = { Node = "gpu-b", Address = "10.0.0.2" }, Service = { Address = "", Port = 9877 } },
      { Node = { Node = "gpu-a", Address = "10.0.0.1" }, Service = { Address = "10.1.0.1", Port = 9877 } },
      { Node = { Node = "gpu-c", Address = "fd00::3" }, Service = { Port = 9877 } },
      { Node = { Node = "no-port", Address = "10.0.0.4" }, Service = { Address = "10.0.0.4" } },
    }
    assert.same({
      { node = "gpu-a", url = "http://10.1.0.1:9877" },
      { node = "gpu-b", url = "http://10.0.0.2:9877" },
      { node = "gpu-c", url = "http://[fd00::3]:9877" },
    }, targets)
    assert.same({}, consul.targets(nil))
  end)

  it("escapes a service name for the path", function()
    assert.equal("gpu%20ledger%2Fx", consul.path_escape("gpu ledger/x"))
  end)
end)

describe("sources.nomad service registrations", function()
  it("names each target by its address, sorted, IPv6 in brackets", function()
    assert.same({
      { node = "10.0.0.7", url = "http://10.0.0.7:9877" },
      { node = "fd00::1", url = "http://[fd00::1]:9877" },
    }, nomad.service_targets {
      { ServiceName = "gpuledger", Address = "fd00::1", Port = 9877, Tags = nil },
      { ServiceName = "gpuledger", Address = "10.0.0.7", Port = 9877 },
      { ServiceName = "gpuledger", Address = "", Port = 9877 },
    })
  end)
end)

describe("--targets", function()
  it("accepts host:port, http(s) URLs and bracketed IPv6, dropping paths", function()
    assert.same({
      { node = "gpud", url = "http://gpud:9877" },
      { node = "10.0.0.5", url = "http://10.0.0.5:9877" },
      { node = "fd00::1", url = "http://[fd00::1]:9877" },
      { node = "gpue", url = "https://gpue:443" },
    }, options.parse_targets("gpud:9877, http://10.0.0.5:9877/ ,[fd00::1]:9877,https://gpue:443/x"))
  end)

  it("refuses what is not host:port", function()
    for _, bad in ipairs { "", " , ", "gpud", "ftp://gpud:1", "http://gpud", "fd00::1:9877", "http://:80" } do
      assert.is_nil(options.parse_targets(bad), bad)
    end
  end)
end)
