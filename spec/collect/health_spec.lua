-- The health query's collector with a fake core: planned from
-- --help-query-gpu, once per driver version.
local H = require "helper"
local collect_health = require "gpuledger.collect.health"

-- A fake nvidia-smi: its help lists `help`'s fields; the health query
-- answers one row with each asked field's name as its value (driver_version
-- reads `driver`), or fails as the real one when a field is unknown.
local function smi_core(state)
  local fake = { calls = {} }
  function fake.monotonic_ms() return 0 end
  function fake.spawn(argv)
    local flag = argv[2]
    fake.calls[#fake.calls + 1] = flag:match("^[^=]+")
    if flag == "--help-query-gpu" then
      return state.help, "", 0
    end
    local fields = flag:match("=(.*)$")
    local cells = {}
    for name in fields:gmatch("[^,]+") do
      if not state.help:find('"' .. name .. '"', 1, true) and flag:find("^%-%-query%-gpu") then
        return 'Field "' .. name .. '" is not a valid field to query.\n\n', "", 2
      end
      cells[#cells + 1] = name == "driver_version" and state.driver or (name == "pci.bus_id" and "00000000:3B:00.0" or "0")
    end
    if flag:find("^%-%-query%-remapped%-rows") then
      return state.remapped or "ERROR: Option --query-remapped-rows is not recognized.\n", "", state.remapped and 0 or 2
    end
    return table.concat(cells, ", ") .. "\n", "", 0
  end
  fake.parse_csv = H.core.parse_csv
  return fake
end

local DEADLINE_MS = 10000 -- the deadline the node gives nvidia-smi's queries (the fake clock is at 0)
local NEW_HELP = '"index"\n"uuid"\n"pci.bus_id"\n"driver_version"\n"remapped_rows.pending"\n"gpu_recovery_action"\n'
local OLD_HELP = '"index"\n"uuid"\n"pci.bus_id"\n"driver_version"\n"retired_pages.pending"\n'

describe("collect.health", function()
  it("asks the help once, then only the health query while the driver stays the same", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    local source = collect_health.collect(fake, "smi-a", DEADLINE_MS)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "remapped_rows.pending", "gpu_recovery_action" }, source.health.fields)
    source = collect_health.collect(fake, "smi-a", DEADLINE_MS)
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu" }, fake.calls)
    assert.is_nil(source.remapped_rows)
  end)

  it("asks the help again when the driver changed under it", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    collect_health.collect(fake, "smi-b", DEADLINE_MS)
    state.driver = "595.71.05"
    local source = collect_health.collect(fake, "smi-b", DEADLINE_MS)
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu", "--help-query-gpu", "--query-gpu" }, fake.calls)
    assert.equal("595.71.05", source.health.rows[1][4])
  end)

  it("asks the help again when an older driver refuses a field, then leaves it out", function()
    local state = { help = NEW_HELP, driver = "590.48.01" }
    local fake = smi_core(state)
    collect_health.collect(fake, "smi-c", DEADLINE_MS)
    state.help, state.driver = OLD_HELP, "470.256.02"
    state.remapped = "00000000:3B:00.0, GPU-a, [N/A], [N/A], [N/A], [N/A]\n"
    local source = collect_health.collect(fake, "smi-c", DEADLINE_MS)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "retired_pages.pending" }, source.health.fields)
    assert.same({ { "00000000:3B:00.0", "GPU-a", "[N/A]", "[N/A]", "[N/A]", "[N/A]" } }, source.remapped_rows.rows)
    assert.same({ "--help-query-gpu", "--query-gpu", "--query-gpu", "--help-query-gpu", "--query-gpu", "--query-remapped-rows" }, fake.calls)
  end)

  it("reads nothing of the remapped rows from a driver without that query either", function()
    local source = collect_health.collect(smi_core { help = OLD_HELP, driver = "418.0" }, "smi-d", DEADLINE_MS)
    assert.is_nil(source.remapped_rows)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "retired_pages.pending" }, source.health.fields)
  end)

  it("a help that fails is the source's error, naming the binary", function()
    local fake = { spawn = function() return nil, "not found" end, parse_csv = H.core.parse_csv, monotonic_ms = function() return 0 end }
    local source = collect_health.collect(fake, "/opt/smi-e", DEADLINE_MS)
    assert.same({ ok = false, binary = "/opt/smi-e", error = "nvidia-smi help-query-gpu: /opt/smi-e: not found" }, source)
  end)
end)
