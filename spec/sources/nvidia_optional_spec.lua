-- The optional query: which fields one --query-gpu asks a driver, from its
-- field list, and how its answer splits back into the answers it stands for.
local optional = require "gpuledger.sources.nvidia_optional"

-- A set of the names given.
local function set(names)
  local known = {}
  for _, name in ipairs(names) do
    known[name] = true
  end
  return known
end

local NEW = set { "index", "uuid", "pci.bus_id", "driver_version", "remapped_rows.pending", "temperature.gpu.tlimit",
  "clocks_event_reasons.hw_thermal_slowdown", "clocks_event_reasons.sw_thermal_slowdown",
  "clocks_throttle_reasons.hw_thermal_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown", "mig.mode.current" }

-- The parts of plan, each as "key kind".
local function parts_of(plan)
  local parts = {}
  for i, part in ipairs(plan.parts) do
    parts[i] = part.key .. " " .. part.kind
  end
  return parts
end

describe("gpuledger.sources.nvidia_optional", function()
  it("asks every part's fields once, the health query's first, driver_version among them", function()
    local plan = optional.plan(NEW, true)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "remapped_rows.pending", "mig.mode.current",
      "temperature.gpu.tlimit", "clocks_event_reasons.hw_thermal_slowdown", "clocks_event_reasons.sw_thermal_slowdown" },
      plan.fields)
    assert.same({ "health health", "tlimit tlimit", "slowdown clocks_event_reasons", "mig_mode mig-mode" }, parts_of(plan))
    assert.is_false(plan.remapped_rows)
  end)

  it("leaves out a part whose fields the driver does not list, and takes the legacy slowdown name", function()
    local old = set { "index", "uuid", "clocks_throttle_reasons.hw_thermal_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown" }
    local plan = optional.plan(old, false)
    assert.same({ "index", "clocks_throttle_reasons.hw_thermal_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown" }, plan.fields)
    assert.equal(1, #plan.parts)
    assert.is_true(optional.plan(old, true).remapped_rows)
    assert.same({}, optional.plan({}, false).fields)
  end)

  it("asks the newest driver every part, each field by its newest name, the remapped rows among them", function()
    local plan = optional.plan(optional.NEWEST_KNOWN, true)
    assert.same({ "health health", "tlimit tlimit", "slowdown clocks_event_reasons", "mig_mode mig-mode" }, parts_of(plan))
    assert.is_false(plan.remapped_rows)
    local asked = table.concat(plan.fields, ",")
    assert.truthy(asked:find("remapped_rows.correctable,", 1, true))
    assert.truthy(asked:find(",pcie.link.gen.gpucurrent,", 1, true))
    assert.is_nil(asked:find("clocks_throttle_reasons", 1, true))
    assert.is_nil(asked:find("pcie.link.gen.current", 1, true))
  end)

  it("tells plans that ask the same from plans that do not", function()
    assert.is_true(optional.same(optional.plan(NEW, true), optional.plan(NEW, true)))
    assert.is_false(optional.same(optional.plan(NEW, true), optional.plan(NEW, false)))
    assert.is_false(optional.same(optional.plan(NEW, true), optional.plan(optional.NEWEST_KNOWN, true)))
    local old = set { "index", "uuid", "pci.bus_id" }
    assert.is_false(optional.same(optional.plan(old, true), { fields = optional.plan(old, true).fields, remapped_rows = false }))
  end)

  it("splits the answer into each part's columns, in the part's order", function()
    local plan = optional.plan(NEW, false)
    local rows = { { "0", "4", "Not Active", "Active", "GPU-a", "Enabled", "590.48.01" } }
    assert.same({ "index", "temperature.gpu.tlimit", "clocks_event_reasons.hw_thermal_slowdown",
      "clocks_event_reasons.sw_thermal_slowdown", "uuid", "mig.mode.current", "driver_version" }, plan.fields)
    local answers = optional.split(plan, rows)
    assert.same({ { "0", "4" } }, answers.tlimit.rows)
    assert.same({ { "0", "Not Active", "Active" } }, answers.slowdown.rows)
    assert.same({ fields = { "uuid", "mig.mode.current" }, rows = { { "GPU-a", "Enabled" } } }, answers.mig_mode)
    assert.equal("590.48.01", optional.driver(plan, rows))
  end)

  it("keeps a row of the wrong length whole in every part, for its reader to find malformed", function()
    local plan = optional.plan(NEW, false)
    local answers = optional.split(plan, { { "0", "4" } })
    assert.same({ { "0", "4" } }, answers.slowdown.rows)
    assert.same({ { "0", "4" } }, answers.mig_mode.rows)
  end)
end)
