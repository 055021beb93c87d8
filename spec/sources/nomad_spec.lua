local H = require "helper"
local nomad = require "gpuledger.sources.nomad"
local json = require "gpuledger.json"

local A1 = "2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33"
local A2 = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e"

local function read(allocations)
  return nomad.read({ ok = true, allocations = allocations })
end

describe("gpuledger.sources.nomad", function()
  describe("read", function()
    it("without a source (--no-nomad): nothing visible (nil), no reservations, no error", function()
      local visible, reservations, err = nomad.read(nil)
      assert.is_nil(visible)
      assert.same({}, reservations)
      assert.is_nil(err)
    end)

    it("a failed read: nil visible, no reservations, its error", function()
      local visible, reservations, err = nomad.read({ ok = false, error = "nomad: connection refused" })
      assert.is_nil(visible)
      assert.same({}, reservations)
      assert.equal("nomad: connection refused", err)
    end)

    it("an empty answer: an empty visible map (Nomad was read)", function()
      local visible, reservations = read({})
      assert.same({}, visible)
      assert.same({}, reservations)
    end)

    it("one reservation per nvidia gpu device of a running task", function()
      local _, reservations = read({ H.alloc { id = A1, job = "restreamer", namespace = "video", group = "rs",
        tasks = { restreamer = { H.UUID0 } } } })
      assert.same({ {
        allocId = A1, jobId = "restreamer", taskGroup = "rs", task = "restreamer",
        namespace = "video", clientStatus = "running", deviceIds = { H.UUID0 },
      } }, reservations)
      assert.is_true(json.is_array(reservations[1].deviceIds))
    end)

    it("pending allocations reserve too", function()
      local _, reservations = read({ H.alloc { id = A1, status = "pending", tasks = { w = { H.UUID0 } } } })
      assert.equal(1, #reservations)
      assert.equal("pending", reservations[1].clientStatus)
    end)

    for _, status in ipairs { "complete", "failed", "lost", "unknown" } do
      it(status .. " allocations reserve nothing but are visible", function()
        local visible, reservations = read({ H.alloc { id = A1, status = status, tasks = { w = { H.UUID0 } } } })
        assert.same({}, reservations)
        assert.equal("video", visible[A1].namespace)
      end)
    end

    it("Type must be exactly gpu", function()
      local _, reservations = read({ H.alloc { id = A1, type = "GPU", tasks = { w = { H.UUID0 } } } })
      assert.same({}, reservations)
    end)

    it("Vendor is nvidia in any case", function()
      local _, reservations = read({ H.alloc { id = A1, vendor = "NVIDIA", tasks = { w = { H.UUID0 } } } })
      assert.equal(1, #reservations)
    end)

    it("other vendors are skipped", function()
      local _, reservations = read({ H.alloc { id = A1, vendor = "amd", tasks = { w = { H.UUID0 } } } })
      assert.same({}, reservations)
    end)

    it("null AllocatedResources is skipped but visible", function()
      local visible, reservations = read({ H.alloc { id = A1, no_resources = true } })
      assert.same({}, reservations)
      assert.equal("video", visible[A1].namespace)
    end)

    it("a task with null Devices is skipped", function()
      local alloc = H.alloc { id = A1, tasks = { a = { H.UUID0 } } }
      alloc.AllocatedResources.Tasks.b = {}
      local _, reservations = read({ alloc })
      assert.equal(1, #reservations)
      assert.equal("a", reservations[1].task)
    end)

    it("tasks come out sorted by name", function()
      local _, reservations = read({ H.alloc { id = A1, tasks = { zeta = { "0" }, alpha = { "1" }, mid = { "2" } } } })
      assert.same({ "alpha", "mid", "zeta" }, { reservations[1].task, reservations[2].task, reservations[3].task })
    end)

    it("every returned allocation is visible, any status; empty namespace reads as default", function()
      local visible = read({
        H.alloc { id = A1, namespace = "video", status = "complete" },
        H.alloc { id = A2, namespace = "" },
      })
      assert.equal("video", visible[A1].namespace)
      assert.equal("default", visible[A2].namespace)
    end)

    it("a visible allocation carries its job, for the tasks that run without a container", function()
      local visible = read({ H.alloc { id = A1, job = "train" }, H.alloc { id = A2, job = "" } })
      assert.equal("train", visible[A1].jobId)
      assert.equal("", visible[A2].jobId)
    end)

    it("the reservation keeps the raw empty namespace", function()
      local _, reservations = read({ H.alloc { id = A2, namespace = "", tasks = { w = { H.UUID0 } } } })
      assert.equal("", reservations[1].namespace)
    end)
  end)

  describe("asked", function()
    it("names the agent by its address, or says the snapshot names none (never \"nomad : \")", function()
      assert.equal("nomad http://127.0.0.1:4646", nomad.asked { address = "http://127.0.0.1:4646" })
      assert.equal("nomad (the snapshot names no address)", nomad.asked {})
      assert.equal("nomad (the snapshot names no address)", nomad.asked { address = "" })
    end)

    it("names a replayed allocation of the wrong shape by the snapshot when it keeps no address", function()
      local _, _, err = nomad.read { ok = true, allocations = { 7 } }
      assert.equal("nomad (the snapshot names no address): unexpected answer: allocations[1] is a number, want an object", err)
    end)
  end)

  describe("reduce", function()
    it("keeps the fields gpuledger reads and drops the job spec", function()
      local alloc = H.alloc { id = A1, tasks = { w = { H.UUID0 } } }
      alloc.Job = { Meta = { secret = "s3cr3t" }, TaskGroups = {} }
      alloc.AllocatedResources.Shared = { Networks = {} }
      local reduced = nomad.reduce(alloc)
      assert.is_nil(reduced.Job)
      assert.is_nil(json.encode(reduced):find("s3cr3t", 1, true))
      local _, reservations = read({ reduced })
      assert.equal(1, #reservations)
      assert.same({ H.UUID0 }, reservations[1].deviceIds)
    end)

    it("keeps a null AllocatedResources null", function()
      assert.is_nil(nomad.reduce(H.alloc { id = A1, no_resources = true }).AllocatedResources)
    end)
  end)
end)
