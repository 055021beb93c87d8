-- Discovery's pure parts (docs/contract.md#fleet): Consul's address and health
-- answer, Nomad's service registrations, --targets.
local consul = require "gpuledger.sources.consul"
local json = require "gpuledger.json"
local nomad = require "gpuledger.sources.nomad"
local options = require "gpuledger.options"
local text = require "gpuledger.text"

local BASE = "http://127.0.0.1:8500"

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
    local targets = consul.targets(json.array {
      { Node = { Node = "gpu-b", Address = "10.0.0.2" }, Service = { Address = "", Port = 9877 } },
      { Node = { Node = "gpu-a", Address = "10.0.0.1" }, Service = { Address = "10.1.0.1", Port = 9877 } },
      { Node = { Node = "gpu-c", Address = "fd00::3" }, Service = { Port = 9877 } },
      { Node = { Node = "gpu-d", Address = "10.0.0.4" }, Service = { Address = "[fd00::4]", Port = 9877.0 } },
      { Node = { Node = "gpu-e", Address = "10.0.0.5" }, Service = { Address = "gpu-e.node.dc1.consul.", Port = 1 } },
    }, BASE)
    assert.same({
      { node = "gpu-a", url = "http://10.1.0.1:9877" },
      { node = "gpu-b", url = "http://10.0.0.2:9877" },
      { node = "gpu-c", url = "http://[fd00::3]:9877" },
      { node = "gpu-d", url = "http://[fd00::4]:9877" },
      { node = "gpu-e", url = "http://gpu-e.node.dc1.consul.:1" },
    }, targets)
    assert.same({}, consul.targets(json.array(), BASE))
    for _, wrong in ipairs { { "{}", "an object" }, { '"gpu-a"', "a string" }, { "42", "a number" }, { "true", "a boolean" } } do
      assert.same({ nil, "consul " .. BASE .. ": unexpected answer: the answer is " .. wrong[2] .. ", want a list" },
        { consul.targets(json.decode(wrong[1]), BASE) })
    end
    assert.same({ nil, "nomad http://127.0.0.1:4646: unexpected answer: the answer is an object, want a list" },
      { nomad.service_targets(json.decode('{"Services":[]}'), "http://127.0.0.1:4646") })
  end)

  it("takes only a host and a port from a registration: anything else is that entry's error", function()
    local function why(service)
      local targets = consul.targets(json.array { { Node = { Node = "gpu-x", Address = "10.0.0.9" }, Service = service } }, BASE)
      assert.same({ "gpu-x", BASE }, { targets[1].node, targets[1].url })
      return targets[1].error
    end
    local prefix = "consul " .. BASE .. ": unexpected answer: [1]."
    assert.equal(prefix .. 'Service.Address is "127.0.0.2/latest/meta-data/?", want a host name or an IP address',
      why { Address = "127.0.0.2/latest/meta-data/?", Port = 9877 })
    for _, bad in ipairs { "10.0.0.9:80", "user@10.0.0.9", "10.0.0.9#x", "fe80::1%eth0", "10.0.0.256", "a..b", "[10.0.0.9]",
      "x y", "host/", string.rep("a", 64) .. ".b" } do
      assert.truthy(why { Address = bad, Port = 9877 }, bad)
    end
    assert.equal(prefix .. "Service.Port is 0, want a port from 1 to 65535", why { Address = "10.0.0.9", Port = 0 })
    assert.equal(prefix .. "Service.Port is 65536, want a port from 1 to 65535", why { Address = "10.0.0.9", Port = 65536 })
    assert.equal(prefix .. "Service.Port is 9877.5, want a port from 1 to 65535", why { Address = "10.0.0.9", Port = 9877.5 })
    assert.equal(prefix .. "Service.Port is a string, want a port from 1 to 65535", why { Address = "10.0.0.9", Port = "9877" })
    assert.equal(prefix .. "Service.Port is missing, want a port from 1 to 65535", why { Address = "10.0.0.9" })
    local no_host = consul.targets(json.array { { Node = { Node = "gpu-y" }, Service = { Port = 9877 } } }, BASE)
    assert.equal(prefix .. "Node.Address is missing, want a host name or an IP address", no_host[1].error)
  end)

  it("cuts a node's name like every name", function()
    local targets = consul.targets(json.array { { Node = { Node = ("n"):rep(3 * 1024 * 1024) }, Service = { Address = "10.0.0.1", Port = 9877 } } }, BASE)
    assert.equal(text.NAME_MAX + #text.CUT_MARK, #targets[1].node)
  end)

  it("reads each node once, however many entries name it", function()
    local entries = {}
    for i = 1, 3000 do
      entries[i] = { Node = { Node = "gpu-a", Address = "10.0.0.1" }, Service = { Address = "10.0.0.1", Port = 9877 } }
    end
    entries[3001] = { Node = { Node = "gpu-a2", Address = "10.0.0.1" }, Service = { Address = "10.0.0.1", Port = 9877 } }
    entries[3002] = { Node = { Node = "gpu-b" }, Service = { Address = "x/y", Port = 9877 } }
    entries[3003] = { Node = { Node = "gpu-b" }, Service = { Address = "x/y", Port = 9877 } }
    local targets = consul.targets(json.array(entries), BASE)
    assert.same({ "gpu-a", "gpu-b" }, { targets[1].node, targets[2].node })
    assert.equal(2, #targets)
  end)

  it("escapes a service name for the path", function()
    assert.equal("gpu%20ledger%2Fx", consul.path_escape("gpu ledger/x"))
  end)
end)

describe("sources.nomad service registrations", function()
  local NOMAD = "http://127.0.0.1:4646"

  it("names each target by its address:port, sorted, IPv6 in brackets, each address once", function()
    assert.same({
      { node = "10.0.0.7:9877", url = "http://10.0.0.7:9877" },
      { node = "[fd00::1]:9877", url = "http://[fd00::1]:9877" },
    }, nomad.service_targets(json.array {
      { ServiceName = "gpuledger", Address = "fd00::1", Port = 9877, Tags = nil },
      { ServiceName = "gpuledger", Address = "10.0.0.7", Port = 9877 },
      { ServiceName = "gpuledger", Address = "10.0.0.7", Port = 9877 },
    }, NOMAD))
  end)

  it("takes only a host and a port from a registration: anything else is that entry's error", function()
    local targets = nomad.service_targets(json.array {
      { ServiceName = "gpuledger", Address = "127.0.0.2/latest/meta-data/?", Port = 9877 },
      { ServiceName = "gpuledger", Address = "", Port = 9877 },
      { ServiceName = "gpuledger", Address = "10.0.0.8", Port = -1 },
    }, NOMAD)
    local prefix = "nomad " .. NOMAD .. ": unexpected answer: "
    assert.same({
      { node = "10.0.0.8", url = NOMAD, error = prefix .. "[3].Port is -1, want a port from 1 to 65535" },
      { node = "127.0.0.2/latest/meta-data/?", url = NOMAD,
        error = prefix .. '[1].Address is "127.0.0.2/latest/meta-data/?", want a host name or an IP address' },
      { node = "nomad", url = NOMAD, error = prefix .. '[2].Address is "", want a host name or an IP address' },
    }, targets)
  end)
end)

describe("--targets", function()
  it("accepts host:port, http(s) URLs of the root and bracketed IPv6, each named host:port", function()
    assert.same({
      { node = "gpud:9877", url = "http://gpud:9877" },
      { node = "10.0.0.5:9877", url = "http://10.0.0.5:9877" },
      { node = "[fd00::1]:9877", url = "http://[fd00::1]:9877" },
      { node = "gpue:443", url = "https://gpue:443" },
    }, options.parse_targets("gpud:9877, http://10.0.0.5:9877/ ,[fd00::1]:9877,https://gpue:443"))
  end)

  it("refuses a path, as it refuses any other text after the port", function()
    assert.is_nil(options.parse_targets("https://gpue:443/x"))
  end)

  it("refuses what is not host:port", function()
    for _, bad in ipairs { "", " , ", "gpud", "ftp://gpud:1", "http://gpud", "fd00::1:9877", "http://:80" } do
      assert.is_nil(options.parse_targets(bad), bad)
    end
  end)
end)
