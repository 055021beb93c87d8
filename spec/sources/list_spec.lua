-- The one list of sources: every source a snapshot may have, once, with its
-- shape; the ledger's source states, `ls` and the metrics follow it.
local H = require "helper"
local ledger_mod = require "gpuledger.ledger"
local snapshot = require "gpuledger.snapshot"
local source_list = require "gpuledger.sources.list"

describe("gpuledger.sources.list", function()
  it("names each source once, each with a shape that wants ok", function()
    local seen = {}
    for i, source in ipairs(source_list.SOURCES) do
      assert.is_nil(seen[source.name], source.name)
      seen[source.name] = true
      assert.equal(source.name, source_list.NAMES[i])
      assert.equal(source.shape, source_list.SHAPES[source.name])
      assert.is_not_nil(source.shape.ok, source.name)
    end
  end)

  it("names who answered each source, as its errors begin; or that the snapshot names no one", function()
    local named = {
      nvidia = { { binary = "/usr/bin/nvidia-smi" }, "nvidia-smi query-gpu: /usr/bin/nvidia-smi" },
      health = { { binary = "/usr/bin/nvidia-smi" }, "nvidia-smi health: /usr/bin/nvidia-smi" },
      mig = { { binary = "/usr/bin/nvidia-smi" }, "nvidia-smi mig: /usr/bin/nvidia-smi" },
      kernel_log = { { via = "kmsg" }, "kernel_log /dev/kmsg" },
      proc = { { root = "/host/proc" }, "proc /host/proc" },
      docker = { { endpoint = "unix:///run/docker.sock" }, "docker unix:///run/docker.sock" },
      podman = { { endpoint = "unix:///run/podman/podman.sock" }, "podman unix:///run/podman/podman.sock" },
      nomad = { { address = "http://127.0.0.1:4646" }, "nomad http://127.0.0.1:4646" },
      nomad_devices = { { address = "https://nomad:4646" }, "nomad https://nomad:4646" },
    }
    local unnamed = {
      nvidia = "nvidia-smi query-gpu: (the snapshot names no binary)",
      health = "nvidia-smi health: (the snapshot names no binary)", mig = "nvidia-smi mig: (the snapshot names no binary)",
      kernel_log = "kernel_log (the snapshot names no log)", proc = "proc (the snapshot names no root)",
      docker = "docker (the snapshot names no endpoint)", podman = "podman (the snapshot names no endpoint)",
      nomad = "nomad (the snapshot names no address)", nomad_devices = "nomad (the snapshot names no address)",
    }
    for _, name in ipairs(source_list.NAMES) do
      assert.equal(named[name][2], source_list.asked(name, named[name][1]), name)
      assert.equal(unnamed[name], source_list.asked(name, {}), name)
      assert.equal(unnamed[name], source_list.asked(name, 5), name) -- a source that is no object
    end
    assert.equal("gpu_fans", source_list.asked("gpu_fans", {}))
  end)

  it("holds every source of the demo snapshot", function()
    for name in pairs(snapshot.demo(H.core).sources) do
      assert.is_not_nil(source_list.SHAPES[name], name)
    end
  end)

  it("is what the ledger says the state of", function()
    local ledger = ledger_mod.build(snapshot.demo(H.core))
    local names = {}
    for name in pairs(ledger.sources) do
      names[#names + 1] = name
    end
    table.sort(names)
    local want = { table.unpack(source_list.NAMES) }
    table.sort(want)
    assert.same(want, names)
  end)
end)
