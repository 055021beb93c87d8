-- The fleet's JSON documents (docs/json.md): fleet ls --json, fleet check
-- --json and /fleet, with the contract's fields only.
local H = require "helper"
local fleet = require "gpuledger.fleet"
local json = require "gpuledger.json"
local render_json = require "gpuledger.render.json"

describe("render.json: the fleet's documents", function()
  it("writes the fleet's JSON documents with only the contract's fields", function()
    local summary, found = H.fleet_judged()
    local doc = json.decode(render_json.fleet(H.AT, summary, found, "ERROR"))
    assert.same({ "at", "findings", "schema", "summary", "worst" }, (function()
      local keys = {}
      for k in pairs(doc) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      return keys
    end)())
    assert.same({ node = "gpuz", schema = 0, gpus = 0, held = 0, reservedIdle = 0, unaccounted = 0, free = 0,
      memoryUsedMiB = 0, memoryTotalMiB = 0, unreachable = 1, error = "Connection refused" }, doc.summary.nodes[3])
    assert.is_nil(doc.summary.nodes[1].unreachable)
    assert.is_nil(doc.summary.nodes[1].url)
    assert.equal(1, doc.summary.total.unreachable)
    local ls = render_json.fleet_ls(H.AT, summary)
    assert.truthy(ls:find('"jobs":[{', 1, true))
    local empty = render_json.fleet_ls(H.AT, fleet.summarise {})
    assert.truthy(empty:find('"jobs":[]', 1, true))
    assert.truthy(empty:find('"nodes":[]', 1, true))
  end)
end)
