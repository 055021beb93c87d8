local H = require "helper"
local snapshot = require "gpuledger.snapshot"
local ledger = require "gpuledger.ledger"
local json = require "gpuledger.json"

-- What the demo node shows: every tenancy code, and health findings of
-- both levels on reserved, held and free GPUs.
local DEMO_CODES = {
  "contended", "encoder-saturated", "held", "hot", "hw-slowdown", "idle", "nomad-schedules-failing-gpu",
  "persistence-off", "reserved-idle", "retired-pages-pending", "row-remap-pending", "source-unavailable",
  "unmanaged-tenant", "unreserved-tenant", "xid-app", "xid-fatal", "xid-memory",
}

describe("gpuledger.snapshot", function()
  describe("validate", function()
    it("accepts a snapshot and defaults its node to \"\"", function()
      local doc = assert(snapshot.validate({ schema = 1, kind = "gpuledger-snapshot", at = H.AT, sources = {} }, "x.json"))
      assert.equal("", doc.node)
    end)

    it("refuses another kind of document, naming where it came from", function()
      local doc, err = snapshot.validate({ schema = 1, kind = "ledger", at = H.AT, sources = {} }, "x.json")
      assert.is_nil(doc)
      assert.matches("^x%.json: not a gpuledger snapshot", err)
      assert.is_nil((snapshot.validate("text", "x.json")))
      assert.is_nil((snapshot.validate({ schema = 1, at = H.AT, sources = {} }, "x.json")))
    end)

    it("refuses schema 2", function()
      local doc, err = snapshot.validate({ schema = 2, kind = "gpuledger-snapshot", at = H.AT, sources = {} }, "x.json")
      assert.is_nil(doc)
      assert.matches("schema 2", err)
    end)

    it("refuses a snapshot without at or sources", function()
      local doc, err = snapshot.validate({ schema = 1, kind = "gpuledger-snapshot", sources = {} }, "x.json")
      assert.is_nil(doc)
      assert.matches('"at"', err)
      assert.is_nil((snapshot.validate({ schema = 1, kind = "gpuledger-snapshot", at = H.AT }, "x.json")))
    end)
  end)

  describe("new", function()
    it("carries schema, kind, node, at and sources", function()
      assert.same({ schema = 1, kind = "gpuledger-snapshot", node = "n", at = H.AT, sources = { a = 1 } },
        snapshot.new("n", H.AT, { a = 1 }))
    end)
  end)

  describe("load", function()
    local dir
    before_each(function() dir = H.tempdir() end)
    after_each(function() H.remove(dir) end)

    it("reads back what json.encode wrote", function()
      local snap = H.snapshot { gpus = { H.smi_row {} }, allocations = {} }
      H.write(dir .. "/s.json", json.encode(snap, "  "))
      local loaded = assert(snapshot.load(H.core, dir .. "/s.json"))
      assert.same(ledger.build(snap).entries, ledger.build(loaded).entries)
    end)

    it("writes every empty array it read back as [] (Docker's empty DeviceRequests and Env too)", function()
      local text = assert(H.core.embedded_text("lua/gpuledger/demo/snapshot.json"))
      H.write(dir .. "/s.json", text)
      local written = json.encode(assert(snapshot.load(H.core, dir .. "/s.json")))
      local _, empty_arrays = text:gsub("%[%s*%]", "")
      local _, written_empty = written:gsub("%[%]", "")
      assert.is_true(empty_arrays > 0)
      assert.equal(empty_arrays, written_empty)
      assert.truthy(written:find('"DeviceRequests":[]', 1, true))
      assert.is_nil(written:find('"DeviceRequests":{}', 1, true))
    end)

    it("says which file is not JSON", function()
      H.write(dir .. "/bad.json", "{not json")
      local doc, err = snapshot.load(H.core, dir .. "/bad.json")
      assert.is_nil(doc)
      assert.matches("bad%.json: ", err)
    end)

    it("says a file is missing", function()
      local doc, err = snapshot.load(H.core, dir .. "/none.json")
      assert.is_nil(doc)
      assert.matches("none%.json", err)
    end)
  end)

  describe("the embedded demo", function()
    local demo = snapshot.demo(H.core)

    it("loads", function()
      assert.equal("gpuledger-snapshot", demo.kind)
      assert.equal("gpu-demo-01", demo.node)
    end)

    it("is a 5-GPU node without errors, the fifth in MIG mode with a held and a free slice", function()
      local l = ledger.build(demo)
      assert.equal(5, #l.entries)
      assert.is_nil(l.errors)
      assert.is_true(l.nomadRead)
      assert.same({ "held", "reserved-idle", "unaccounted", "free", "held" },
        { l.entries[1].state, l.entries[2].state, l.entries[3].state, l.entries[4].state, l.entries[5].state })
      local slices = l.entries[5].migDevices
      assert.same({ { "3g.40gb", "held", "llm-serve" }, { "2g.20gb", "free" } },
        { { slices[1].profile, slices[1].state, slices[1].tenants[1].jobName }, { slices[2].profile, slices[2].state } })
      assert.is_nil(l.entries[1].migDevices)
    end)

    it("has the MIG slices the collector reads from the node's nvidia-smi -L and -q (testdata/nvidia/demo-mig)", function()
      local answers = { ["-L"] = H.testdata("nvidia/demo-mig/list.txt"), ["-q"] = H.testdata("nvidia/demo-mig/query.txt") }
      local core = H.fake_nvidia_core(function(argv) return argv[2] end, answers)
      local collected = require("gpuledger.collect.mig").collect(core, "nvidia-smi", demo.sources.health.health, 10000)
      assert.same({ "-L", "-q" }, core.calls)
      assert.same(json.decode(json.encode(collected)), json.decode(json.encode(demo.sources.mig)))
    end)

    it("gives every tenancy code and health findings when judged", function()
      local found, worst = H.run_rules(snapshot.demo(H.core))
      local seen = {}
      for _, f in ipairs(found) do
        seen[f.code] = true
      end
      local got = {}
      for code in pairs(seen) do
        got[#got + 1] = code
      end
      table.sort(got)
      assert.same(DEMO_CODES, got)
      assert.equal("ERROR", worst)
    end)

    it("keeps no process argument", function()
      local encoded = json.encode(snapshot.demo(H.core))
      for _, arg in ipairs { " -i ", ".mkv", ".mp4" } do
        assert.is_nil(encoded:find(arg, 1, true), arg)
      end
    end)
  end)
end)
