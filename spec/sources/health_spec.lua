local H = require "helper"
local health = require "gpuledger.sources.health"

local function fixture(path)
  return H.testdata("nvidia/" .. path)
end

-- The answer nvidia-smi gives to the planned query, from a fixture's table
-- of every field (header of names, then rows), as the fake picks it.
local function answer(dir, names)
  local lines = {}
  for line in fixture(dir .. "/query-gpu-table.csv"):gmatch("[^\n]+") do
    local cells = {}
    for cell in (line .. ", "):gmatch("(.-), ") do
      cells[#cells + 1] = cell
    end
    lines[#lines + 1] = cells
  end
  local column = {}
  for i, name in ipairs(lines[1]) do
    column[name] = i
  end
  local rows = {}
  for i = 2, #lines do
    local row = {}
    for j, name in ipairs(names) do
      row[j] = lines[i][column[name]]
    end
    rows[#rows + 1] = row
  end
  return { fields = names, rows = rows }
end

describe("health.known_fields", function()
  it("lists every name of a driver's help, aliases included", function()
    local known = health.known_fields(fixture("h100-80gb-hbm3-590.48.01/help-query-gpu.txt"))
    assert.is_true(known["remapped_rows.pending"])
    assert.is_true(known["remapped_rows.sbe"]) -- the alias on the same line
    assert.is_true(known["gpu_recovery_action"])
    assert.is_nil(known["List of valid properties to query for the switch"])
  end)
end)

describe("health.plan", function()
  it("asks an R590 driver for every health field, by the current names", function()
    local names, fallback = health.plan(health.known_fields(fixture("h100-80gb-hbm3-590.48.01/help-query-gpu.txt")))
    assert.equal(#health.FIELDS, #names)
    assert.is_false(fallback)
    assert.equal("clocks_event_reasons.hw_slowdown", names[19])
    assert.equal("pcie.link.gen.gpucurrent", names[22])
  end)

  it("leaves out what an older driver does not know and takes the old names", function()
    local names, fallback = health.plan(health.known_fields(fixture("bad/old-driver/help-query-gpu.txt")))
    assert.is_true(fallback)
    local asked = table.concat(names, ",")
    assert.not_matches("remapped_rows", asked)
    assert.not_matches("gpu_recovery_action", asked)
    assert.matches("clocks_throttle_reasons.hw_slowdown", asked, 1, true)
    assert.matches("pcie.link.gen.current", asked, 1, true)
  end)
end)

describe("health.cell_kind", function()
  it("tells unsupported from findings and from unreadable", function()
    for _, raw in ipairs { "[N/A]", "N/A", "[Not Supported]", "", " [N/A] ", "[Requested functionality has been deprecated]" } do
      assert.equal("unsupported", health.cell_kind(raw), raw)
    end
    assert.equal("requires-reset", health.cell_kind("[GPU requires reset]"))
    assert.equal("lost", health.cell_kind("[GPU is lost]"))
    assert.equal("unreadable", health.cell_kind("[Unknown Error]"))
    assert.equal("unreadable", health.cell_kind("[Insufficient Permissions]"))
    assert.equal("value", health.cell_kind("Enabled"))
    assert.equal("value", health.cell_kind("0"))
  end)
end)

describe("health.read", function()
  it("reads a data-centre card: ECC on, no errors, rows not remapped, persistence on", function()
    local dir = "h100-80gb-hbm3-590.48.01"
    local names = health.plan(health.known_fields(fixture(dir .. "/help-query-gpu.txt")))
    local records, errors = health.read(answer(dir, names))
    assert.same({}, errors)
    local r = records[1]
    assert.same({ 0, "0000:00:09", "590.48.01" }, { r.index, r.busKey, r.driverVersion })
    assert.same({ true, true, true }, { r.eccMode, r.eccModePending, r.persistenceMode })
    assert.same({ 0, 0, 0, 0 }, { r.eccCorrectedVolatile, r.eccUncorrectedVolatile, r.eccCorrectedAggregate, r.eccUncorrectedAggregate })
    assert.same({ 0, 0, false, false }, { r.remappedRowsCorrectable, r.remappedRowsUncorrectable, r.remappedRowsPending, r.remappedRowsFailure })
    assert.is_nil(r.retiredPagesPending) -- [N/A] on Hopper
    assert.same({ 5, 5, 16, 16 }, { r.pcieGenCurrent, r.pcieGenMax, r.pcieWidthCurrent, r.pcieWidthMax })
    assert.same({ false, false }, { r.migMode, r.migModePending })
    assert.equal("None", r.recoveryAction)
    assert.is_nil(r.requiresReset)
    assert.same({}, r.unreadable)
  end)

  it("reads a GeForce: ECC, retired pages and remapped rows unsupported, persistence off", function()
    local dir = "geforce-rtx-2080-super-595.71.05"
    local names = health.plan(health.known_fields(fixture(dir .. "/help-query-gpu.txt")))
    local r = health.read(answer(dir, names))[1]
    assert.is_nil(r.eccMode)
    assert.is_nil(r.remappedRowsPending)
    assert.is_nil(r.retiredPagesPending)
    assert.is_false(r.persistenceMode)
    assert.same({ 250.0, 250.0 }, { r.powerLimitEnforcedW, r.powerLimitDefaultW })
    assert.same({}, r.unreadable)
  end)

  it("turns [GPU requires reset] and [GPU is lost] into findings, other brackets into unreadable fields", function()
    local fields = { "index", "uuid", "pci.bus_id", "ecc.mode.current", "remapped_rows.pending", "persistence_mode" }
    local records = health.read { fields = fields, rows = {
      { "0", "GPU-a", "00000000:3B:00.0", "[GPU requires reset]", "[GPU requires reset]", "Enabled" },
      { "1", "GPU-b", "00000000:5E:00.0", "[GPU is lost]", "[GPU is lost]", "[GPU is lost]" },
      { "2", "GPU-c", "00000000:86:00.0", "[Unknown Error]", "Maybe", "Enabled" },
    } }
    assert.is_true(records[1].requiresReset)
    assert.is_true(records[1].persistenceMode)
    assert.is_true(records[2].lost)
    assert.same({ "ecc.mode.current: [Unknown Error]", "remapped_rows.pending: Maybe" }, records[3].unreadable)
  end)

  it("joins the remapped rows of an older driver's --query-remapped-rows by bus id", function()
    local records = health.read(
      { fields = { "index", "uuid", "pci.bus_id" }, rows = { { "0", "GPU-a", "00000000:3B:00.0" }, { "1", "GPU-b", "00000000:5E:00.0" } } },
      { fields = health.REMAPPED_ROWS_FIELDS, rows = { { "00000000:5E:00.0", "GPU-b", "0", "2", "Yes", "No" } } })
    assert.is_nil(records[1].remappedRowsPending)
    assert.same({ 0, 2, true, false }, { records[2].remappedRowsCorrectable, records[2].remappedRowsUncorrectable,
      records[2].remappedRowsPending, records[2].remappedRowsFailure })
  end)

  it("passes on the errors of the queries and of short rows, naming the binary", function()
    local records, errors = health.read({ error = "nvidia-smi health: nvidia-smi: exit status 2: Field \"x\" is not a valid field to query." })
    assert.same({}, records)
    assert.same({ "nvidia-smi health: nvidia-smi: exit status 2: Field \"x\" is not a valid field to query." }, errors)
    records, errors = health.read({ fields = { "index", "uuid", "pci.bus_id" }, rows = { { "0", "GPU-a" } } }, { error = "remapped: failed" },
      "/usr/bin/nvidia-smi")
    assert.same({}, records)
    assert.same({ "nvidia-smi health: /usr/bin/nvidia-smi: expected 3 fields, got 2", "remapped: failed" }, errors)
    records, errors = health.read({ fields = { "index", "uuid", "pci.bus_id" }, rows = { { "0", "GPU-a", "00000000:3B:00.0" } } },
      { fields = health.REMAPPED_ROWS_FIELDS, rows = { { "00000000:3B:00.0", "GPU-a", "0" } } }, "/usr/bin/nvidia-smi")
    assert.is_nil(records[1].remappedRowsCorrectable)
    assert.same({ "nvidia-smi remapped-rows: /usr/bin/nvidia-smi: expected 6 fields, got 3" }, errors) -- not dropped silently
  end)
end)
