-- collect() with a fake core: which collectors run, with what, and what
-- reaches the snapshot.
local H = require "helper"
local collect = require "gpuledger.collect.node"
local ledger = require "gpuledger.ledger"
local json = require "gpuledger.json"
local options = require "gpuledger.options"

local MAIN = "0, " .. H.UUID0 .. ", NVIDIA L4, 00000000:01:00.0, 2048, 23034, 41, 12, 61, 38.42, 3, 59.9\n"
local APPS = H.UUID0 .. ", 4242, 2048, /usr/bin/HandBrakeCLI -i secret.mkv\n" .. H.UUID0 .. ", 6060, 48, python3\n"

-- A fake core: nvidia-smi answers main and apps, lists no optional field,
-- every other query fails;
-- /proc knows pid 4242; every HTTP request is refused.
local function fake_core(overrides)
  local fake = { spawned = {}, cgroup_calls = {}, http = {} }
  function fake.now() return 1795939200 end
  function fake.monotonic_ms() return 5000 end
  function fake.spawn(argv)
    fake.spawned[#fake.spawned + 1] = argv[2]
    if argv[2]:find("compute-apps", 1, true) then
      return APPS, "", 0
    elseif argv[2] == "--help-query-gpu" then -- a driver that lists no optional field
      return '"index"\nZero based index of the GPU. Can change at each boot.\n', "", 0
    elseif argv[2]:find("uuid", 1, true) then
      return MAIN, "", 0
    end
    return "Field is not a valid field to query.\n", "", 2
  end
  fake.parse_csv = H.core.parse_csv
  function fake.proc_cgroups(root, pids)
    fake.cgroup_calls[#fake.cgroup_calls + 1] = { root = root, pids = pids }
    return { [4242] = { container_id = H.cid("a"), runtime = "docker" } }
  end
  function fake.http_get(url)
    fake.http[#fake.http + 1] = url
    return nil, "connection refused"
  end
  function fake.http_get_many(requests, opts)
    return H.http_get_many_over(fake)(requests, opts)
  end
  function fake.stat() return nil, "no such file" end
  function fake.getenv() return nil end
  function fake.env_is_set() return false end
  for k, v in pairs(overrides or {}) do
    fake[k] = v
  end
  fake.spawn_all = H.spawn_all_over(fake)
  return fake
end

-- The config of a command line (node gpud, no Podman, no health query, no
-- kernel log) with these flags, in an empty environment.
local function config(flags)
  local args = { "ls", "--node", "gpud", "--podman", "off", "--no-health", "--kernel-log", "off" }
  for _, flag in ipairs(flags) do
    args[#args + 1] = flag
  end
  local function no_env() return nil end
  return options.config(assert(options.parse(args, no_env)), no_env)
end

describe("gpuledger.collect.node", function()
  it("makes a snapshot of the node at core.now()", function()
    local snap = collect.collect(fake_core(), config { "--no-docker", "--no-nomad" })
    assert.equal("gpuledger-snapshot", snap.kind)
    assert.equal(1, snap.schema)
    assert.equal("gpud", snap.node)
    assert.equal(H.AT, snap.at)
  end)

  it("with --no-docker --no-nomad asks nvidia-smi only: no proc, docker, podman or nomad source", function()
    local fake = fake_core()
    local snap = collect.collect(fake, config { "--no-docker", "--no-nomad" })
    assert.is_true(snap.sources.nvidia.ok)
    assert.is_nil(snap.sources.proc)
    assert.is_nil(snap.sources.docker)
    assert.is_nil(snap.sources.podman)
    assert.is_nil(snap.sources.nomad)
    assert.same({}, fake.cgroup_calls)
    assert.same({}, fake.http)
  end)

  it("every GPU process is then a host tenant, and nothing is an error", function()
    local l = ledger.build(collect.collect(fake_core(), config { "--no-docker", "--no-nomad" }))
    assert.is_nil(l.errors)
    assert.is_false(l.nomadRead)
    local tenants = l.entries[1].tenants
    assert.equal(1, #tenants)
    assert.equal("host", tenants[1].kind)
    assert.same({ 4242, 6060 }, tenants[1].pids)
  end)

  it("asks /proc for the containers of the pids nvidia-smi reported, as integers", function()
    local fake = fake_core()
    local snap = collect.collect(fake, config { "--no-nomad", "--proc", "/host/proc" })
    assert.equal(1, #fake.cgroup_calls)
    assert.equal("/host/proc", fake.cgroup_calls[1].root)
    assert.same({ 4242, 6060 }, fake.cgroup_calls[1].pids)
    assert.is_true(snap.sources.proc.ok)
    assert.equal(H.cid("a"), snap.sources.proc.pids["4242"].container_id)
  end)

  it("keys each pid /proc answered by its decimal text, which the ledger joins on", function()
    local apps = ""
    local pids = { 1, 9, 10, 4242, 65535, 4194304 } -- one digit to the kernel's largest pid
    for _, pid in ipairs(pids) do
      apps = apps .. H.UUID0 .. ", " .. pid .. ", 16, python3\n"
    end
    local fake = fake_core {
      proc_cgroups = function(_, asked)
        local found = {}
        for _, pid in ipairs(asked) do
          found[pid] = { container_id = H.cid("a"), runtime = "docker", owner = "container" }
        end
        return found
      end,
    }
    local spawn = fake.spawn
    fake.spawn = function(argv)
      if argv[2]:find("compute-apps", 1, true) then
        return apps, "", 0
      end
      return spawn(argv)
    end
    fake.spawn_all = H.spawn_all_over(fake)
    local snap = collect.collect(fake, config { "--no-nomad" })
    for _, pid in ipairs(pids) do
      assert.equal(H.cid("a"), snap.sources.proc.pids[tostring(pid)].container_id)
    end
    local tenants = ledger.build(snap).entries[1].tenants
    assert.equal(1, #tenants) -- every pid found in the proc source: none is the tenant of unknown pids
    assert.equal(H.cid("a"):sub(1, 12), tenants[1].containerId)
    assert.same(pids, tenants[1].pids)
  end)

  it("then asks /proc for the main process of each container an engine answered, once", function()
    local answers = {
      ["http://localhost/containers/json"] = json.encode { { Id = H.cid("a") }, { Id = H.cid("b") } },
      ["http://localhost/containers/" .. H.cid("a") .. "/json"] = json.encode { Id = H.cid("a"), State = { Pid = 4242 } },
      ["http://localhost/containers/" .. H.cid("b") .. "/json"] = json.encode { Id = H.cid("b"), State = { Pid = 777 } },
    }
    local fake = fake_core {
      http_get = function(url) return 200, answers[url] or "{}", "application/json" end,
    }
    fake.http_get_many = function(requests, opts) return H.http_get_many_over(fake)(requests, opts) end
    local snap = collect.collect(fake, config { "--no-nomad" })
    assert.equal(2, #fake.cgroup_calls)
    assert.same({ 777 }, fake.cgroup_calls[2].pids) -- 4242 was asked already, as a GPU process
    assert.same({ Pid = 777 }, snap.sources.docker.containers[2].State)
  end)

  it("a /proc that cannot be read is the proc source's error", function()
    local fake = fake_core { proc_cgroups = function() return nil, "/nope: No such file or directory" end }
    local snap = collect.collect(fake, config { "--no-nomad", "--proc", "/nope" })
    assert.is_false(snap.sources.proc.ok)
    assert.matches("^proc /nope: ", snap.sources.proc.error)
  end)

  it("an unreachable Docker is the docker source's error, named docker", function()
    local snap = collect.collect(fake_core(), config { "--no-nomad" })
    assert.is_false(snap.sources.docker.ok)
    assert.matches("^docker", snap.sources.docker.error)
    assert.matches("connection refused", snap.sources.docker.error)
  end)

  it("an unreachable Nomad is the nomad source's error, named nomad", function()
    local snap = collect.collect(fake_core(), config { "--no-docker" })
    assert.is_false(snap.sources.nomad.ok)
    assert.matches("^nomad", snap.sources.nomad.error)
  end)

  it("a failed nvidia-smi asks nothing else of it", function()
    local fake = fake_core { spawn = function(_)
      return nil, "posix_spawn: No such file or directory"
    end }
    local snap = collect.collect(fake, config { "--no-docker", "--no-nomad" })
    assert.is_false(snap.sources.nvidia.ok)
    assert.matches("^nvidia%-smi query%-gpu", snap.sources.nvidia.error)
  end)

  it("process arguments never reach the snapshot", function()
    local snap = collect.collect(fake_core(), config { "--no-docker", "--no-nomad" })
    local encoded = json.encode(snap)
    assert.is_nil(encoded:find("secret.mkv", 1, true))
    assert.is_nil(encoded:find("/usr/bin", 1, true))
    assert.truthy(encoded:find("HandBrakeCLI", 1, true))
  end)

  describe("the health sources", function()
    -- nvidia-smi knows the health fields of HELP; the kernel log is a file;
    -- Nomad answers its agent, allocations and node.
    local HELP = '"index"\n"uuid"\n"pci.bus_id"\n"remapped_rows.pending"\n'
    local function health_core()
      return fake_core {
        spawn = function(argv)
          local fields = argv[2]:match("^%-%-query%-gpu=(.*)$")
          for name in (fields and not fields:find("encoder", 1, true) and fields or ""):gmatch("[^,]+") do
            if not HELP:find('"' .. name .. '"', 1, true) then -- (as the real one refuses a field it does not list)
              return 'Field "' .. name .. '" is not a valid field to query.\n\n', "", 2
            end
          end
          if argv[2] == "--help-query-gpu" then
            return HELP, "", 0
          elseif argv[2]:find("remapped_rows", 1, true) then
            return "0, " .. H.UUID0 .. ", 00000000:01:00.0, Yes\n", "", 0
          end
          return fake_core().spawn(argv)
        end,
        read_file = function(path)
          return nil, path .. ": No such file or directory"
        end,
        read_file_from = function(path, offset, max_bytes)
          if path == "/logs/kern.log" then
            local log = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
            return log:sub(offset + 1, offset + max_bytes), "8:1", #log
          end
          return nil, path .. ": No such file or directory"
        end,
        http_get = function(url)
          if url:find("/v1/agent/self", 1, true) then
            return 200, '{"stats": {"client": {"node_id": "n1"}}}', "application/json"
          elseif url:find("/v1/node/n1/allocations", 1, true) then
            return 200, "[]", "application/json"
          end
          return 200, '{"ID": "n1", "NodeResources": {"Devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "NVIDIA L4", "Instances": [{"ID": "'
            .. H.UUID0 .. '", "Healthy": true, "HealthDescription": "", "Locality": {"PciBusID": "00000000:01:00.0"}}]}]}}', "application/json"
        end,
      }
    end

    it("collects the health query, the kernel log FILE and Nomad's devices, each a source of its own", function()
      local snap = collect.collect(health_core(), options.config(assert(options.parse(
        { "ls", "--node", "gpud", "--no-docker", "--kernel-log", "/logs/kern.log" }, function() end)), function() end))
      local sources = snap.sources
      assert.same({ "index", "uuid", "pci.bus_id", "remapped_rows.pending" }, sources.health.health.fields)
      assert.same({ ok = true, via = "file", path = "/logs/kern.log",
        records = { { text = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus." } } }, sources.kernel_log)
      assert.same({ true, "n1", 1 }, { sources.nomad_devices.ok, sources.nomad_devices.node_id, #sources.nomad_devices.devices })
      local l = ledger.build(snap, { [79] = { class = "reboot", meaning = "fell off the bus", action = "reboot" } })
      assert.same({ remappedRowsPending = true }, l.entries[1].health)
      assert.equal(79, l.entries[1].xids[1].xid)
      assert.same({ healthy = true, healthDescription = "" }, l.entries[1].nomadDevice)
      assert.same({ "read", "read", "read" }, { l.sources.health, l.sources.kernel_log, l.sources.nomad_devices })
    end)

    it("asks an older nvidia-smi in two rounds: the main query, the process list, the newest driver's optional query, "
      .. "the field list and --version, then its own optional query", function()
      local fake = health_core()
      collect.collect(fake, options.config(assert(options.parse(
        { "ls", "--no-docker", "--no-nomad", "--kernel-log", "off", "--nvidia-smi", "/opt/smi-rounds" }, function() end)),
        function() end))
      assert.same({ 2, 5, "--version" }, { #fake.rounds, #fake.rounds[1], fake.rounds[1][5] })
      assert.matches("^%-%-query%-compute%-apps=", fake.rounds[1][2])
      assert.matches("^%-%-query%-gpu=index,uuid,pci.bus_id,driver_version,persistence_mode,", fake.rounds[1][3])
      assert.same({ "--help-query-gpu", "--query-gpu=index,uuid,pci.bus_id,remapped_rows.pending" },
        { fake.rounds[1][4], fake.rounds[2][1] })
    end)

    it("asks no health of an nvidia-smi whose main query failed, and no devices of a Nomad that failed", function()
      local fake = fake_core { spawn = function() return nil, "not found" end }
      local snap = collect.collect(fake, options.config(assert(options.parse({ "ls", "--no-docker", "--kernel-log", "off" }, function() end)), function() end))
      assert.is_nil(snap.sources.health)
      assert.is_nil(snap.sources.kernel_log)
      assert.is_false(snap.sources.nomad.ok)
      assert.is_nil(snap.sources.nomad_devices)
    end)
  end)

  describe("podman_endpoint", function()
    local function exists(answer)
      return function(path)
        assert.equal("/run/podman/podman.sock", path)
        return answer
      end
    end

    it("auto with the socket present is that socket", function()
      assert.equal("unix:///run/podman/podman.sock", collect.podman_endpoint("auto", exists(true)))
    end)

    it("auto without the socket is no Podman", function()
      assert.is_nil(collect.podman_endpoint("auto", exists(false)))
    end)

    it("off and \"\" are no Podman", function()
      assert.is_nil(collect.podman_endpoint("off", exists(true)))
      assert.is_nil(collect.podman_endpoint("", exists(true)))
    end)

    it("anything else is the endpoint, named explicitly", function()
      local endpoint, named = collect.podman_endpoint("unix:///tmp/p.sock", exists(false))
      assert.equal("unix:///tmp/p.sock", endpoint)
      assert.is_true(named)
      assert.equal("http://127.0.0.1:8888", collect.podman_endpoint("http://127.0.0.1:8888", exists(false)))
    end)
  end)

end)
