local nomad_node = require "gpuledger.sources.nomad_node"
local json = require "gpuledger.json"

-- A node answer as Nomad gives it: NUL-padded bus ids, attribute
-- values with nulls, a group of another vendor.
local NODE = json.decode([[{
  "ID": "f7476465-4d6e-c0de-26d0-e383c49be941", "Name": "gpu-node-07", "SecretID": "",
  "NodeResources": {"Devices": [
    {"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA H100 80GB HBM3",
     "Attributes": {"memory": {"Float": null, "Int": 81559, "String": null, "Bool": null, "Unit": "MiB"}},
     "Instances": [
       {"ID": "GPU-2c91d7e0-66a3-4f1b-8d2e-19b7c0a4e5f6", "Healthy": true, "HealthDescription": "",
        "Locality": {"PciBusID": "00000000:3B:00.0\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000"}},
       {"ID": "GPU-8e4c2f1a-3b7d-9c06-51e2-a4d9f0b3c7e1", "Healthy": false, "HealthDescription": "device not found", "Locality": null}]},
    {"Vendor": "xilinx", "Type": "fpga", "Name": "U250", "Instances": [{"ID": "fpga-0", "Healthy": true}]}
  ]}
}]])

describe("sources.nomad_node", function()
  it("keeps only the NVIDIA GPU instances, their health and bus id without its NUL padding", function()
    local reduced = nomad_node.reduce(NODE)
    assert.same({ {
      Name = "NVIDIA H100 80GB HBM3",
      Instances = {
        { ID = "GPU-2c91d7e0-66a3-4f1b-8d2e-19b7c0a4e5f6", Healthy = true, HealthDescription = "", PciBusID = "00000000:3B:00.0" },
        { ID = "GPU-8e4c2f1a-3b7d-9c06-51e2-a4d9f0b3c7e1", Healthy = false, HealthDescription = "device not found" },
      },
    } }, reduced)
    assert.equal("[]", json.encode(nomad_node.reduce(json.decode('{"NodeResources": {"Devices": []}}'))))
  end)

  it("lists the devices with the key their bus id matches nvidia-smi's by", function()
    local devices = nomad_node.devices(nomad_node.reduce(NODE))
    assert.same({ id = "GPU-2c91d7e0-66a3-4f1b-8d2e-19b7c0a4e5f6", name = "NVIDIA H100 80GB HBM3", healthy = true,
      healthDescription = "", busId = "00000000:3B:00.0", busKey = "0000:3b:00" }, devices[1])
    assert.is_nil(devices[2].busKey)
  end)

  it("keeps a field of the wrong type as it came, for the ledger to report", function()
    local reduced = nomad_node.reduce(json.decode([[{"NodeResources": {"Devices": [
      {"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA L4", "Instances": [
        {"ID": 5, "Healthy": "true", "Locality": {"PciBusID": 3}}, "GPU-x", {"ID": "GPU-z", "Locality": 7}]},
      {"Vendor": "nvidia", "Type": "gpu", "Name": 4, "Instances": {"ID": "GPU-y"}}
    ]}}]]))
    assert.same({
      { Name = "NVIDIA L4", Instances = { { ID = 5, Healthy = "true", PciBusID = 3 }, "GPU-x", { ID = "GPU-z", PciBusID = 7 } } },
      { Name = 4, Instances = { ID = "GPU-y" } },
    }, reduced)
  end)

  it("reads a node without devices (null), or not a node at all, as none", function()
    assert.same({}, nomad_node.reduce(json.decode('{"NodeResources": {"Devices": null}}')))
    assert.same({}, nomad_node.reduce("Permission denied"))
    assert.same({}, nomad_node.devices(nil))
  end)

  it("keeps which node it is: its id, name, class, pool and datacenter, each only as text", function()
    local node = json.decode('{"ID": "f7476465-4d6e-c0de-26d0-e383c49be941", "Name": "gpu-node-07", "Datacenter": "dc1",'
      .. ' "NodeClass": "", "NodePool": 7, "Status": "ready", "Attributes": {"os.name": "ubuntu"}}')
    assert.same({ ID = "f7476465-4d6e-c0de-26d0-e383c49be941", Name = "gpu-node-07", Datacenter = "dc1", NodeClass = "" },
      nomad_node.identity(node))
    assert.same({}, nomad_node.identity("node not found"))
  end)
end)
