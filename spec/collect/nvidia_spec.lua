-- nvidia-smi's queries, run through a fake core: what is asked, in which
-- rounds, and what reaches the snapshot (docs/sources.md#nvidia-smi).
local H = require "helper"
local collect = require "gpuledger.collect.nvidia"
local health = require "gpuledger.sources.health"
local json = require "gpuledger.json"
local nvidia = require "gpuledger.sources.nvidia"
local optional = require "gpuledger.sources.nvidia_optional"

local UUID_A = "GPU-aaaa1111-0000-4000-8000-000000000000"
local UUID_B = "GPU-bbbb2222-0000-4000-8000-000000000000"
local MAIN = "0, " .. UUID_A .. ", NVIDIA L4, 00000000:01:00.0, 2048, 23034, 41, 12, 61, 38.42, 3, 59.9\n"
  .. "1, " .. UUID_B .. ", Tesla T4, 00000000:02:00.0, 0, 15360, 0, 0, 31, 9.87, 0, 0\n"
local APPS = UUID_A .. ", 4242, 2048, /usr/bin/HandBrakeCLI -i secret.mkv\n"
  .. UUID_A .. ", 5151, 1024, ffmpeg -i /data/clients/acme/match.mp4\n"
  .. UUID_B .. ", 6060, 48, /usr/local/bin/python3\n"

-- Each optional field's cells, GPU 0's then GPU 1's: what this fake
-- driver knows beyond the main query and the process list.
local CELLS = {
  index = { "0", "1" }, uuid = { UUID_A, UUID_B }, ["pci.bus_id"] = { "00000000:01:00.0", "00000000:02:00.0" },
  driver_version = { "590.48.01", "590.48.01" }, persistence_mode = { "Enabled", "Disabled" },
  ["remapped_rows.pending"] = { "No", "Yes" }, ["temperature.gpu.tlimit"] = { "4", "[N/A]" },
  ["clocks_event_reasons.hw_thermal_slowdown"] = { "Not Active", "Not Active" },
  ["clocks_event_reasons.sw_thermal_slowdown"] = { "Active", "Not Active" },
  ["clocks_throttle_reasons.hw_thermal_slowdown"] = { "Active", "Not Active" },
  ["clocks_throttle_reasons.sw_thermal_slowdown"] = { "Not Active", "Not Active" },
  ["mig.mode.current"] = { "Disabled", "Disabled" },
}

-- The fields the optional query asks of a driver that knows every name of CELLS.
local OPTIONAL = "index,uuid,pci.bus_id,driver_version,persistence_mode,remapped_rows.pending,mig.mode.current,"
  .. "temperature.gpu.tlimit,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_thermal_slowdown"

-- The cells of the newest driver: those of CELLS, and [N/A] for every other
-- field it lists.
local NEWEST_CELLS = H.merge(CELLS, {})
for name in pairs(optional.NEWEST_KNOWN) do
  NEWEST_CELLS[name] = NEWEST_CELLS[name] or { "[N/A]", "[N/A]" }
end

-- The flags of the newest driver's optional query, with and without the health query.
local NEWEST = {}
for _, with_health in ipairs { true, false } do
  NEWEST["--query-gpu=" .. table.concat(optional.plan(optional.NEWEST_KNOWN, with_health).fields, ",")] = true
end

-- The key of a query by its argv (main, apps, help, version, remapped,
-- newest: the newest driver's optional query, optional: another, or the
-- flag itself).
local function key_of(argv)
  local flag = argv[2]
  if flag == "--help-query-gpu" then
    return "help"
  elseif flag == "--version" then
    return "version"
  elseif flag:find("^%-%-query%-compute%-apps") then
    return "apps"
  elseif flag:find("^%-%-query%-remapped%-rows") then
    return "remapped"
  elseif flag == "--query-gpu=" .. table.concat(nvidia.GPU_FIELDS, ",") then
    return "main"
  elseif NEWEST[flag] then
    return "newest"
  elseif flag:find("^%-%-query%-gpu=") then
    return "optional"
  end
  return flag
end

-- A fake nvidia-smi behind a fake core (H.fake_nvidia_core): the main
-- query and the process list from state.main and state.apps; the help
-- lists the names of state.cells (default CELLS) but those of state.hidden
-- and state.unlisted; any other --query-gpu answers their cells, or fails as
-- the real one when it names a field it does not know (known: listed, or
-- state.unlisted; or state.refuses); state.answers overrides an answer by
-- key (key_of: main, apps, help, version, newest, optional, remapped, -L,
-- -q); --version answers state.version, else the 590 driver's versions.
local function smi(state)
  local cells = state.cells or CELLS
  local unlisted = state.unlisted or {}
  local function listed(name)
    return cells[name] and not (state.hidden and state.hidden[name]) and not unlisted[name]
  end
  local function known(name)
    return listed(name) or unlisted[name]
  end
  local function help()
    local lines = {}
    for name in pairs(cells) do
      if listed(name) then
        lines[#lines + 1] = '"' .. name .. '"\nA field.\n'
      end
    end
    table.sort(lines)
    return table.concat(lines, "\n")
  end
  local function answer_gpu_query(argv)
    local names, rows = {}, { {}, {} }
    for name in argv[2]:match("=(.*)$"):gmatch("[^,]+") do
      if not known(name) or (state.refuses and state.refuses[name]) then
        return { 'Field "' .. name .. '" is not a valid field to query.\n\n', "", 2 }
      end
      names[#names + 1] = name
      for gpu = 1, 2 do
        rows[gpu][#names] = cells[name][gpu]
      end
    end
    return table.concat(rows[1], ", ") .. "\n" .. table.concat(rows[2], ", ") .. "\n"
  end
  local fake = H.fake_nvidia_core(key_of, state.answers or {})
  local given = fake.spawn
  local defaults = {
    main = function() return state.main or MAIN end,
    apps = function() return state.apps or APPS end,
    help = help,
    version = function() return state.version or "DRIVER version      : 590.48.01\nCUDA Version        : 13.1\n" end,
    newest = answer_gpu_query,
    optional = answer_gpu_query,
  }
  function fake.spawn(argv, opts)
    local key = key_of(argv)
    if (state.answers or {})[key] ~= nil or not defaults[key] then
      return given(argv, opts)
    end
    fake.deadlines[#fake.deadlines + 1] = opts.deadline_ms
    if key == "optional" or key == "newest" then
      fake.optional_argv = argv
    end
    local answer = defaults[key](argv)
    if type(answer) == "table" then
      return table.unpack(answer, 1, 3)
    end
    return answer, "", 0
  end
  return fake
end

-- What collect gives for binary, with the health query unless told
-- otherwise, by one deadline of collect.TIMEOUT_MS from now (as
-- collect/node.lua gives it).
local function collected(core, binary, with_health)
  return collect.collect(core, binary, with_health ~= false, core.monotonic_ms() + collect.TIMEOUT_MS)
end

-- The rounds a fake saw, each as the keys of its queries.
local function rounds(fake)
  local keyed = {}
  for r, round in ipairs(fake.rounds) do
    keyed[r] = {}
    for i, flag in ipairs(round) do
      keyed[r][i] = key_of { "nvidia-smi", flag }
    end
  end
  return keyed
end

describe("gpuledger.collect.nvidia (with a fake core)", function()
  it("keeps the driver's --version, asked with the field list: in the health source at every refresh", function()
    local fake = smi {}
    local first = collected(fake, "/opt/smi-version")
    local again = collected(fake, "/opt/smi-version")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional" }, { "main", "apps", "optional" } }, rounds(fake))
    assert.same({ text = "DRIVER version      : 590.48.01\nCUDA Version        : 13.1\n" }, first.health.version)
    assert.same(first.health.version, again.health.version)
    local old = collected(smi { answers = { version = { "ERROR: Option --version is not recognized. Please run 'nvidia-smi -h'.\n\n", "", 2 } } },
      "/opt/smi-no-version")
    assert.matches("^nvidia%-smi version: /opt/smi%-no%-version: exit status 2", old.health.version.error)
  end)

  it("asks a current driver in one round: the newest driver's optional query beside the field list", function()
    local fake = smi { cells = NEWEST_CELLS }
    local sources = collected(fake, "/opt/smi-one-round-first")
    assert.same({ { "main", "apps", "newest", "help", "version" } }, rounds(fake))
    local gpus, _, errors = nvidia.read(sources.nvidia)
    assert.same({}, errors)
    assert.same({ 4, nil }, { gpus[1].thermalMarginC, gpus[2].thermalMarginC })
    assert.same({ true, false }, { gpus[1].thermalSlowdown, gpus[2].thermalSlowdown })
    assert.same(health.plan(optional.NEWEST_KNOWN), sources.health.health.fields)
    assert.same({ ok = true, version = "590.48.01" }, { ok = sources.health.ok, version = sources.health.health.rows[1][4] })
    fake.rounds = {}
    collected(fake, "/opt/smi-one-round-first")
    assert.same({ { "main", "apps", "newest" } }, rounds(fake))
  end)

  it("asks a driver that refuses the newest driver's query its own in round two; the refusal is no error", function()
    local fake = smi {}
    local sources = collected(fake, "/opt/smi-two-rounds")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional" } }, rounds(fake))
    assert.equal("--query-gpu=" .. OPTIONAL, fake.optional_argv[2])
    assert.equal("--format=csv,noheader,nounits", fake.optional_argv[3])
    local gpus, processes, errors = nvidia.read(sources.nvidia)
    assert.same({}, errors)
    assert.same({ 4, nil }, { gpus[1].thermalMarginC, gpus[2].thermalMarginC })
    assert.same({ true, false }, { gpus[1].thermalSlowdown, gpus[2].thermalSlowdown })
    assert.same({ "HandBrakeCLI", "ffmpeg", "python3" }, { processes[1].process, processes[2].process, processes[3].process })
    assert.same({ "index", "temperature.gpu.tlimit" }, sources.nvidia.tlimit.fields)
    assert.same({ "index", "uuid", "pci.bus_id", "driver_version", "persistence_mode", "remapped_rows.pending", "mig.mode.current" },
      sources.health.health.fields)
    local records = health.read(sources.health.health, sources.health.remapped_rows)
    assert.same({ false, true }, { records[1].remappedRowsPending, records[2].remappedRowsPending })
    assert.is_nil(sources.mig) -- no GPU in MIG mode
    assert.is_true(sources.health.ok)
  end)

  it("asks its own optional query where the driver answers the newest driver's but lists other fields", function()
    local fake = smi { cells = NEWEST_CELLS, unlisted = { gpu_recovery_action = true } }
    local sources = collected(fake, "/opt/smi-unlisted")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional" } }, rounds(fake))
    assert.is_nil(fake.optional_argv[2]:find("gpu_recovery_action", 1, true))
    assert.same(#health.plan(optional.NEWEST_KNOWN) - 1, #sources.health.health.fields)
  end)

  it("a guess that failed is no error of its own when round two answers", function()
    local fake = smi { answers = { newest = { nil, "timed out after 9.99s: its deadline passed" } } }
    local sources = collected(fake, "/opt/smi-guess-hangs")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional" } }, rounds(fake))
    assert.same({}, select(3, nvidia.read(sources.nvidia)))
    assert.is_true(sources.health.ok)
  end)

  it("asks a known driver everything in one round, all by the one deadline", function()
    local fake = smi {}
    collected(fake, "/opt/smi-one-round")
    fake.rounds, fake.deadlines = {}, {}
    local sources = collected(fake, "/opt/smi-one-round")
    assert.same({ { "main", "apps", "optional" } }, rounds(fake))
    assert.same({ 15000, 15000, 15000 }, fake.deadlines)
    assert.is_true(sources.health.ok)
    assert.equal(true, nvidia.read(sources.nvidia)[1].thermalSlowdown)
  end)

  it("asks the field list again when the driver changed under it, or refuses a field", function()
    local cells = H.merge(CELLS, {})
    local fake = smi { cells = cells }
    collected(fake, "/opt/smi-changes")
    cells.driver_version = { "595.71.05", "595.71.05" }
    fake.rounds = {}
    local sources = collected(fake, "/opt/smi-changes")
    assert.same({ { "main", "apps", "optional" }, { "help", "version" } }, rounds(fake)) -- (the same list: its answer kept)
    assert.equal("595.71.05", sources.health.health.rows[1][4])
    local hidden = { ["temperature.gpu.tlimit"] = true }
    local older = smi { cells = cells, hidden = hidden }
    hidden["temperature.gpu.tlimit"] = nil
    collected(older, "/opt/smi-refuses")
    hidden["temperature.gpu.tlimit"] = true
    older.rounds = {}
    sources = collected(older, "/opt/smi-refuses")
    assert.same({ { "main", "apps", "optional" }, { "help", "version" }, { "optional" } }, rounds(older))
    assert.is_nil(sources.nvidia.tlimit)
    assert.is_true(sources.health.ok)
  end)

  it("asks again without a field the driver lists but refuses, keeping the rest", function()
    local fake = smi { refuses = { ["temperature.gpu.tlimit"] = true } }
    local sources = collected(fake, "/opt/smi-lists-more")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional" }, { "optional" } }, rounds(fake))
    assert.is_nil(fake.optional_argv[2]:find("tlimit", 1, true))
    assert.is_nil(sources.nvidia.tlimit)
    assert.is_true(sources.health.ok)
    assert.is_true(nvidia.read(sources.nvidia)[1].thermalSlowdown)
  end)

  it("takes the slowdown flags by the legacy name where the driver lists only that", function()
    local fake = smi { hidden = { ["clocks_event_reasons.hw_thermal_slowdown"] = true,
      ["clocks_event_reasons.sw_thermal_slowdown"] = true } }
    local sources = collected(fake, "/opt/smi-legacy")
    assert.matches("clocks_throttle_reasons.hw_thermal_slowdown,clocks_throttle_reasons.sw_thermal_slowdown$", fake.optional_argv[2])
    assert.same({ true, false }, { nvidia.read(sources.nvidia)[1].thermalSlowdown, nvidia.read(sources.nvidia)[2].thermalSlowdown })
  end)

  it("asks an older driver its remapped rows beside the optional query; one without that query has none", function()
    local old = { ["remapped_rows.pending"] = true }
    local fake = smi { hidden = old, answers = { remapped = "00000000:02:00.0, " .. UUID_B .. ", 0, 2, Yes, No\n" } }
    local sources = collected(fake, "/opt/smi-old")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "optional", "remapped" } }, rounds(fake))
    local records = health.read(sources.health.health, sources.health.remapped_rows)
    assert.same({ nil, true }, { records[1].remappedRowsPending, records[2].remappedRowsPending })
    local older = smi { hidden = old, answers = { remapped = { "ERROR: Option --query-remapped-rows is not recognized.\n", "", 2 } } }
    assert.is_nil(collected(older, "/opt/smi-older").health.remapped_rows)
  end)

  it("without the health query, asks only the thermal fields and the MIG mode", function()
    local fake = smi {}
    local sources = collected(fake, "/opt/smi-no-health", false)
    assert.equal("--query-gpu=index,temperature.gpu.tlimit,clocks_event_reasons.hw_thermal_slowdown,"
      .. "clocks_event_reasons.sw_thermal_slowdown,uuid,mig.mode.current,driver_version", fake.optional_argv[2])
    assert.is_nil(sources.health)
    assert.equal(4, nvidia.read(sources.nvidia)[1].thermalMarginC)
  end)

  it("asks -L and -q together, in a round of their own, where a GPU is in MIG mode", function()
    local fake = smi { cells = H.merge(NEWEST_CELLS, { ["mig.mode.current"] = { "Enabled", "Disabled" } }),
      answers = { ["-L"] = H.testdata("nvidia/h100-mig-590.48.01/list.txt"), ["-q"] = H.testdata("nvidia/h100-mig-590.48.01/query.txt") } }
    local sources = collected(fake, "/opt/smi-mig")
    assert.same({ { "main", "apps", "newest", "help", "version" }, { "-L", "-q" } }, rounds(fake))
    assert.same({ UUID_A }, sources.mig.enabled)
  end)

  it("names each part of a failed optional query as the query it stands for", function()
    local fake = smi { answers = { optional = { nil, "timed out after 9.99s: its deadline passed" } } }
    local sources = collected(fake, "nvidia-smi")
    local why = ": nvidia-smi: timed out after 9.99s: its deadline passed"
    assert.same({ ok = false, binary = "nvidia-smi", error = "nvidia-smi health" .. why }, sources.health)
    assert.equal("nvidia-smi tlimit" .. why, sources.nvidia.tlimit.error)
    assert.equal("nvidia-smi clocks_event_reasons" .. why, sources.nvidia.slowdown.error)
    assert.same({ ok = false, binary = "nvidia-smi", error = "nvidia-smi mig-mode" .. why }, sources.mig)
    local _, _, errors = nvidia.read(sources.nvidia)
    assert.same({ "nvidia-smi tlimit" .. why, "nvidia-smi clocks_event_reasons" .. why }, errors)
  end)

  it("a field list that cannot be had is the health and MIG sources' error; the guess's answer is not read", function()
    local fake = smi { cells = NEWEST_CELLS, answers = { help = { nil, "not found" } } }
    local sources = collected(fake, "/opt/smi-e")
    assert.same({ { "main", "apps", "newest", "help", "version" } }, rounds(fake))
    assert.same({ ok = false, binary = "/opt/smi-e", error = "nvidia-smi help-query-gpu: /opt/smi-e: not found" }, sources.health)
    assert.same({ ok = false, binary = "/opt/smi-e", error = "nvidia-smi help-query-gpu: /opt/smi-e: not found" }, sources.mig)
    assert.is_nil(sources.nvidia.tlimit)
    assert.is_nil(sources.nvidia.slowdown)
  end)

  it("a field list that lists no field is the health and MIG sources' error naming the binary; the GPUs and processes stay", function()
    local garbage = "<html><body>502 Bad Gateway</body></html>\n"
    local sources = collected(smi { cells = NEWEST_CELLS, answers = { help = { garbage, "", 0 } } }, "/opt/smi-g")
    local why = "nvidia-smi help-query-gpu: /opt/smi-g: answered " .. #garbage .. " bytes that list no field to query"
    assert.same({ ok = false, binary = "/opt/smi-g", error = why }, sources.health)
    assert.same({ ok = false, binary = "/opt/smi-g", error = why }, sources.mig)
    local gpus, processes, errors = nvidia.read(sources.nvidia)
    assert.same({ 2, 3 }, { #gpus, #processes })
    assert.same({}, errors)
    local again = smi { cells = NEWEST_CELLS }
    collected(again, "/opt/smi-g")
    assert.same({ "main", "apps", "newest", "help", "version" }, rounds(again)[1]) -- not remembered: asked again
  end)

  it("a field list that hangs is one error in the ledger, though the health and MIG sources share it", function()
    local sources = collected(smi { answers = { help = { nil, "timed out after 10s: its deadline passed" } } }, "/opt/smi-h")
    sources.proc = { ok = true, root = "/proc", pids = {} }
    local built = require("gpuledger.ledger").build { node = "n", at = "2026-11-29T08:00:00Z", sources = sources }
    assert.same({ "nvidia-smi help-query-gpu: /opt/smi-h: timed out after 10s: its deadline passed" }, built.errors)
    assert.same({ "failed", "failed" }, { built.sources.health, built.sources.mig })
    assert.equal(2, #built.entries)
  end)

  it("takes a bare name found nowhere in PATH for a node without a driver: no GPU, no error, nothing more", function()
    local absent = collected(smi { answers = { main = { nil, "not found" } } }, "nvidia-smi")
    assert.is_true(absent.nvidia.ok)
    assert.is_false(absent.nvidia.installed)
    assert.is_nil(absent.nvidia.error)
    assert.same({}, absent.nvidia.query_gpu.rows)
    assert.same({}, absent.nvidia.compute_apps.rows)
    assert.is_nil(absent.health)
    assert.is_nil(absent.mig)
  end)

  it("says where it looked when a named binary is not found", function()
    local in_path = collected(smi { answers = { main = { nil, "not found" }, apps = { nil, "not found" } } }, "/opt/bin/nvidia-smi")
    assert.equal("nvidia-smi query-gpu: /opt/bin/nvidia-smi: not found", in_path.nvidia.error)
  end)

  it("asks the main query for the 12 fields in their order", function()
    local fake = smi {}
    collected(fake, "/opt/smi-main")
    assert.equal("--query-gpu=index,uuid,name,pci.bus_id,memory.used,memory.total,utilization.gpu,"
      .. "utilization.memory,temperature.gpu,power.draw,encoder.stats.sessionCount,encoder.stats.averageFps", fake.rounds[1][1])
  end)

  it("a main failure is the only answer: an error naming query-gpu, no health, no MIG", function()
    local fake = smi { answers = { main = { "NVIDIA-SMI has failed because it couldn't communicate with the driver\nmore\n", "", 9 } } }
    local sources = collected(fake, "/opt/smi-fails")
    assert.same({ { "main", "apps", "newest", "help", "version" } }, rounds(fake))
    assert.is_false(sources.nvidia.ok)
    assert.equal("nvidia-smi query-gpu: /opt/smi-fails: exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the driver",
      sources.nvidia.error)
    assert.is_nil(sources.health)
    assert.is_nil(sources.mig)
  end)

  it("a short row reads as an error with no GPUs; no process list, no thermal fields", function()
    local sources = collected(smi { main = "0, GPU-a, L4\n" }, "/opt/smi-short")
    assert.is_nil(sources.nvidia.compute_apps)
    assert.is_nil(sources.nvidia.tlimit)
    local gpus, _, errors = nvidia.read(sources.nvidia)
    assert.same({}, gpus)
    assert.same({ "nvidia-smi query-gpu: /opt/smi-short: row 1 has 3 fields, want 12" }, errors)
  end)

  it("a compute-apps failure keeps the GPUs", function()
    local sources = collected(smi { answers = { apps = { nil, "timed out after 10s" } } }, "/opt/smi-apps")
    local gpus, processes, errors = nvidia.read(sources.nvidia)
    assert.equal(2, #gpus)
    assert.same({}, processes)
    assert.same({ "nvidia-smi query-compute-apps: /opt/smi-apps: timed out after 10s" }, errors)
  end)

  it("empty compute-apps is zero processes", function()
    local _, processes, errors = nvidia.read(collected(smi { apps = "" }, "/opt/smi-empty").nvidia)
    assert.same({}, processes)
    assert.same({}, errors)
  end)

  it("process arguments never reach the snapshot", function()
    local encoded = json.encode(collected(smi {}, "/opt/smi-args"))
    assert.is_nil(encoded:find("secret.mkv", 1, true))
    assert.is_nil(encoded:find("acme", 1, true))
    assert.is_nil(encoded:find("/usr/bin", 1, true))
    assert.truthy(encoded:find('"HandBrakeCLI"', 1, true))
  end)

  it("a CSV syntax error of the main query is an error", function()
    local sources = collected(smi { main = '0, "GPU-a\n' }, "/opt/smi-csv")
    assert.is_false(sources.nvidia.ok)
    assert.matches("^nvidia%-smi query%-gpu: /opt/smi%-csv: csv: ", sources.nvidia.error)
  end)
end)
