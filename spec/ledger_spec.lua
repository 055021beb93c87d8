local H = require "helper"
local ledger = require "gpuledger.ledger"
local text_mod = require "gpuledger.text"
local json = require "gpuledger.json"
local fleet = require "gpuledger.fleet"
local render_json = require "gpuledger.render.json"

local A_RESTREAMER = "2b7f3c8e-5d21-4a0e-9c4b-0e6f9a1d7c33"
local A_WORKER = "4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e"
local A_ENC = "9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3"

-- The fixture node: gpu0 has a docker container (2048
-- MiB), a reserved Nomad task (1024 MiB) and a host python3 (48 MiB); gpu1 is
-- reserved for a worker and holds nothing.
local function fixture()
  return H.snapshot {
    gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
    apps = {
      H.app(H.UUID0, 4242, 2048, "ffmpeg"),
      H.app(H.UUID0, 5151, 1024, "ffmpeg"),
      H.app(H.UUID0, 6060, 48, "python3"),
    },
    pids = { [4242] = H.cid("d"), [5151] = H.cid("a") },
    containers = {
      H.container { id = H.cid("d"), name = "gpu-d-new-c0", image = "busybox", env = { "NVIDIA_VISIBLE_DEVICES=" .. H.UUID0 } },
      H.container { id = H.cid("a"), name = "restreamer-" .. A_RESTREAMER, image = "restreamer:2",
        labels = H.nomad_labels(A_RESTREAMER, "gpu-gpud-restreamer", "restreamer", "default"),
        env = { "NVIDIA_VISIBLE_DEVICES=" .. H.UUID0 } },
    },
    allocations = {
      H.alloc { id = A_RESTREAMER, job = "gpu-gpud-restreamer", namespace = "default", tasks = { restreamer = { H.UUID0 } } },
      H.alloc { id = A_WORKER, job = "worker", namespace = "video", tasks = { w = { H.UUID1 } } },
    },
  }
end

local function kinds(entry)
  local out = {}
  for i, t in ipairs(entry.tenants) do
    out[i] = t.kind .. ":" .. (t.container or t.containerId or table.concat(t.processes, ","))
  end
  return out
end

describe("gpuledger.ledger", function()
  describe("gpu_names and named (device ids)", function()
    local gpu0, gpu1 = { index = 0, uuid = H.UUID0 }, { index = 1, uuid = H.UUID1 }
    local names = ledger.gpu_names { gpu0, gpu1 }

    for _, ids in ipairs {
      { H.UUID1 },
      { "GPU-ac81e44d" },
      { "GPU-ac81" },
      { H.UUID1:sub(5) },
      { "1" },
      { " 1 " },
      { "all" },
      { H.UUID0, H.UUID1 },
      { "0", "all" },
    } do
      it("{" .. table.concat(ids, ",") .. "} names GPU 1", function()
        assert.is_true(ledger.named(names, ids)[gpu1])
      end)
    end

    for _, ids in ipairs {
      { H.UUID0 },
      { "0" },
      { "GPU-" },
      { "" },
      {},
      { "GPU-ac8" },
      { "ac81e44d" },
      { "11" },
    } do
      it("{" .. table.concat(ids, ",") .. "} does not name GPU 1", function()
        assert.is_nil(ledger.named(names, ids)[gpu1])
      end)
    end

    it("nil is no match", function()
      assert.same({}, ledger.named(names, nil))
    end)

    it("all names every GPU, an index only its own", function()
      assert.same({ [gpu0] = true, [gpu1] = true }, ledger.named(names, { "all" }))
      assert.same({ [gpu0] = true }, ledger.named(names, { "0" }))
    end)
  end)

  describe("classify", function()
    local reserved = H.nomad_tenant { reserved = true }
    local unreserved = H.nomad_tenant { reserved = false }
    local cases = {
      { "no tenants, no reservations", {}, {}, "free" },
      { "no tenants, a reservation", {}, { H.reservation() }, "reserved-idle" },
      { "a reserved Nomad task", { reserved }, { H.reservation() }, "held" },
      { "two reserved Nomad tasks", { reserved, H.nomad_tenant { container = "b" } }, { H.reservation() }, "held" },
      { "an unreserved Nomad task", { unreserved }, {}, "unaccounted" },
      { "a reserved task and a host process", { reserved, H.host_tenant() }, { H.reservation() }, "unaccounted" },
      { "a docker container", { H.docker_tenant() }, {}, "unaccounted" },
      { "a docker container on a reserved GPU", { H.docker_tenant() }, { H.reservation() }, "unaccounted" },
    }
    for _, case in ipairs(cases) do
      it(case[1] .. " is " .. case[4], function()
        assert.equal(case[4], ledger.classify({ tenants = case[2], reservations = case[3] }))
      end)
    end

    it("missing lists count as empty", function()
      assert.equal("free", ledger.classify({}))
    end)
  end)

  describe("build", function()
    it("cuts names past NAME_MAX bytes and marks them, and the node's name too", function()
      local long = ("x"):rep(1024 * 1024)
      local snap = H.snapshot {
        gpus = { H.smi_row() },
        apps = { H.app(H.UUID0, 4242, 100) },
        pids = { [4242] = H.cid("d") },
        containers = { H.container { id = H.cid("d"), name = "evil" .. long, image = long } },
      }
      snap.node = long
      local l = ledger.build(snap)
      local tenant = l.entries[1].tenants[1]
      assert.equal(text_mod.NAME_MAX + #text_mod.CUT_MARK, #tenant.container)
      assert.equal("evil", tenant.container:sub(1, 4))
      assert.equal(text_mod.CUT_MARK, tenant.image:sub(-#text_mod.CUT_MARK))
      assert.equal(text_mod.NAME_MAX + #text_mod.CUT_MARK, #l.node)
    end)

    it("joins the fixture: gpu0 docker > nomad (reserved) > host; gpu1 reserved with no tenants", function()
      local l = ledger.build(fixture())
      assert.equal(2, #l.entries)
      local gpu0, gpu1 = l.entries[1], l.entries[2]
      assert.same({ "docker:gpu-d-new-c0", "nomad:restreamer-" .. A_RESTREAMER, "host:python3" }, kinds(gpu0))
      local docker_t, nomad_t, host_t = gpu0.tenants[1], gpu0.tenants[2], gpu0.tenants[3]
      assert.equal(2048, docker_t.usedMemoryMiB)
      assert.equal(H.cid("d"):sub(1, 12), docker_t.containerId)
      assert.equal("busybox", docker_t.image)
      assert.is_false(docker_t.reserved)
      assert.is_true(nomad_t.reserved)
      assert.is_true(nomad_t.allocVisible)
      assert.equal(A_RESTREAMER, nomad_t.allocId)
      assert.equal("gpu-gpud-restreamer", nomad_t.jobName)
      assert.equal("restreamer", nomad_t.taskName)
      assert.equal("default", nomad_t.namespace)
      assert.same({ 5151 }, nomad_t.pids)
      assert.same({ 6060 }, host_t.pids)
      assert.same({ "python3" }, host_t.processes)
      assert.equal(48, host_t.usedMemoryMiB)
      assert.equal("unaccounted", gpu0.state)
      assert.same({}, gpu1.tenants)
      assert.equal(1, #gpu1.reservations)
      assert.equal("worker", gpu1.reservations[1].jobId)
      assert.equal("reserved-idle", gpu1.state)
      assert.is_true(l.nomadRead)
      assert.is_nil(l.errors)
      assert.equal("gpud", l.node)
      assert.equal(H.AT, l.at)
      assert.equal(1, l.schema)
    end)

    it("sorts GPUs by index", function()
      local l = ledger.build(H.snapshot { gpus = { H.smi_row { index = 2 }, H.smi_row { index = 0 }, H.smi_row { index = 1 } } })
      assert.same({ 0, 1, 2 }, { l.entries[1].index, l.entries[2].index, l.entries[3].index })
    end)

    it("aggregates every host process of a GPU into one host tenant", function()
      local l = ledger.build(H.snapshot {
        apps = { H.app(H.UUID0, 7171, 4096, "python3"), H.app(H.UUID0, 8181, 312, "/usr/bin/python3 train.py") },
      })
      local tenants = l.entries[1].tenants
      assert.equal(1, #tenants)
      assert.equal("host", tenants[1].kind)
      assert.same({ 7171, 8181 }, tenants[1].pids)
      assert.same({ "python3", "python3" }, tenants[1].processes)
      assert.equal(4408, tenants[1].usedMemoryMiB)
    end)

    it("a Nomad task without a container (exec, raw_exec, java, exec2) is joined to its allocation", function()
      local l = ledger.build(H.snapshot {
        gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
        apps = {
          H.app(H.UUID0, 3131, 300, "python3"), H.app(H.UUID0, 3132, 200, "python3"),
          H.app(H.UUID1, 3232, 100, "python3"), H.app(H.UUID1, 3333, 50, "ffmpeg"),
        },
        pids = {
          [3131] = { owner = "nomad", alloc_id = A_RESTREAMER, task = "worker", uid = 0 },
          [3132] = { owner = "nomad", alloc_id = A_RESTREAMER, task = "worker", uid = 0 },
          [3232] = { owner = "nomad", alloc_id = A_WORKER, task = "trainer", uid = 0 },
          [3333] = { owner = "nomad", alloc_id = A_ENC, task = "encode", uid = 0 },
        },
        allocations = {
          H.alloc { id = A_RESTREAMER, job = "train", namespace = "ml", tasks = { worker = { H.UUID0 } } },
          H.alloc { id = A_WORKER, job = "tune", namespace = "ml", tasks = { trainer = {} } },
        },
      })
      local held = l.entries[1]
      assert.equal(1, #held.tenants)
      local t = held.tenants[1]
      assert.same({ "nomad", A_RESTREAMER, "train", "worker", "ml", true }, { t.kind, t.allocId, t.jobName, t.taskName, t.namespace, t.reserved })
      assert.same({ 3131, 3132 }, t.pids)
      assert.is_nil(t.container)
      assert.is_nil(t.containerId)
      assert.equal("held", held.state)
      assert.is_nil(t.verdict)
      local other = l.entries[2].tenants
      assert.same({ A_WORKER, "unreserved" }, { other[1].allocId, other[1].verdict })
      assert.same({ A_ENC, "encode", "hidden" }, { other[2].allocId, other[2].taskName, other[2].verdict })
      assert.is_nil(other[2].jobName)
    end)

    it("splits host processes by service, user session and process, named from /proc", function()
      local l = ledger.build(H.snapshot {
        apps = {
          H.app(H.UUID0, 2121, 60, "ollama"), H.app(H.UUID0, 2122, 50, "ollama"),
          H.app(H.UUID0, 6060, 40, "python3"), H.app(H.UUID0, 6061, 30, "jupyter"),
          H.app(H.UUID0, 2424, 20, "a.out"), H.app(H.UUID0, 9090, 10, "gone"),
        },
        pids = {
          [2121] = { owner = "service", unit = "ollama.service", uid = 998, user = "ollama" },
          [2122] = { owner = "service", unit = "ollama.service", uid = 998, user = "ollama" },
          [6060] = { owner = "session", session_uid = 1000, session_user = "alice", uid = 1000, user = "alice" },
          [6061] = { owner = "session", session_uid = 1000, session_user = "alice", uid = 0, user = "root" },
          [2424] = { owner = "process", uid = 4321 },
        },
      })
      local tenants = l.entries[1].tenants
      assert.equal(4, #tenants)
      assert.same({ "service", "ollama.service", { 2121, 2122 }, 110 }, { tenants[1].owner, tenants[1].service, tenants[1].pids, tenants[1].usedMemoryMiB })
      assert.same({ "user", "alice", 1000, { 6060, 6061 } }, { tenants[2].owner, tenants[2].user, tenants[2].uid, tenants[2].pids })
      assert.same({ "process", 4321, { 2424 } }, { tenants[3].owner, tenants[3].uid, tenants[3].pids })
      assert.is_nil(tenants[3].user)
      assert.same({ "host", { 9090 }, "unidentified" }, { tenants[4].kind, tenants[4].pids, tenants[4].verdict })
      assert.is_nil(tenants[4].owner)
      for i = 1, 3 do
        assert.equal("host", tenants[i].kind)
        assert.equal("unmanaged", tenants[i].verdict)
      end
    end)

    describe("a process whose cgroup names a container", function()
      local ID = H.cid("a")
      local REAL = "0::/system.slice/docker-" .. ID .. ".scope"
      local labels = H.nomad_labels(A_RESTREAMER, "restreamer", "restreamer", "video")
      -- The ledger of GPU 0 with the container of ID (its main process main
      -- or 500, in REAL; user `user`) and the GPU processes `records` (pid →
      -- record).
      local function tenants_of(records, user, main)
        local apps, pids = {}, { [500] = { owner = "container", container_id = ID, runtime = "docker", container_cgroup = REAL, uid = 0 } }
        for pid, record in pairs(records) do
          apps[#apps + 1] = H.app(H.UUID0, pid, 100, "python3")
          pids[pid] = record
        end
        table.sort(apps, function(a, b) return a[2] < b[2] end)
        local container = H.container { id = ID, name = "restreamer", labels = labels }
        container.State, container.Config.User = { Pid = main or 500 }, user
        local l = ledger.build(H.snapshot {
          apps = apps, pids = pids, containers = { container },
          allocations = { H.alloc { id = A_RESTREAMER, job = "restreamer", tasks = { restreamer = { H.UUID0 } } } },
        })
        return l.entries[1].tenants, l.entries[1].state
      end
      local function claim(cgroup, uid)
        return { owner = "container", container_id = ID, runtime = "docker", container_cgroup = cgroup, uid = uid, user = "u" .. uid }
      end

      it("is the container's when it is the main process, in the engine's cgroup for it, or of its user", function()
        for _, case in ipairs {
          { 500, claim(REAL, 0), "" }, { 501, claim(REAL, 1000), "" }, -- REAL: what C gives for REAL and below it
          { 503, claim("0::/system.slice/ci.service/docker-" .. ID .. ".scope", 1000), "1000" },
        } do
          local tenants, state = tenants_of({ [case[1]] = case[2] }, case[3])
          assert.same({ 1, "nomad", "held" }, { #tenants, tenants[1].kind, state }, tostring(case[1]))
        end
      end)

      it("is its own tenant, by uid, when it is in a look-alike cgroup and of another user: never held", function()
        local tenants, state = tenants_of({
          [501] = claim("0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" .. ID .. ".scope", 1000),
          [502] = claim("0::/system.slice/ci.service/docker-" .. ID .. ".scope", 1000),
        }, "")
        assert.equal(1, #tenants)
        local t = tenants[1]
        assert.same({ "host", "process", 1000, "u1000", { 501, 502 }, "unmanaged" },
          { t.kind, t.owner, t.uid, t.user, t.pids, t.verdict })
        assert.is_nil(t.containerId)
        assert.equal("unaccounted", state)
      end)

      it("a container with no main process (State.Pid 0) and a user named by its name proves none", function()
        local tenants = tenants_of({ [501] = claim(REAL, 1000) }, "appuser", 0)
        assert.same({ "host", "unmanaged" }, { tenants[1].kind, tenants[1].verdict })
      end)
    end)

    it("only takes processes whose gpu_uuid is the GPU's uuid exactly", function()
      local l = ledger.build(H.snapshot {
        gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
        apps = { H.app(H.UUID1, 7171, 10, "a"), H.app(H.UUID0:sub(1, 12), 8181, 10, "b") },
      })
      assert.same({}, l.entries[1].tenants)
      assert.equal(1, #l.entries[2].tenants)
    end)

    it("a container no engine could inspect is a docker tenant with its 12-character id", function()
      local l = ledger.build(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") }, containers = {} })
      local t = l.entries[1].tenants[1]
      assert.equal("docker", t.kind)
      assert.equal(H.cid("e"):sub(1, 12), t.containerId)
      assert.is_nil(t.container)
      assert.is_nil(t.image)
      assert.is_nil(t.allocId)
    end)

    describe("a tenant that could not be identified", function()
      -- The one tenant of GPU 0 in the ledger of snap, and that ledger.
      local function only_tenant(snap)
        local l = ledger.build(snap)
        assert.equal(1, #l.entries[1].tenants)
        return l.entries[1].tenants[1], l
      end

      it("a container id no engine knows: unidentified, not unmanaged, kind docker and its 12-character id; the GPU unaccounted", function()
        local t, l = only_tenant(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") }, containers = {} })
        assert.same({ "docker", H.cid("e"):sub(1, 12), true, "unidentified" }, { t.kind, t.containerId, t.unidentified, t.verdict })
        assert.equal("unaccounted", l.entries[1].state) -- not a reserved Nomad task
      end)

      it("a container whose inspect failed ({Id, Unreadable}): unidentified, the cause among the errors", function()
        local cause = "docker unix:///var/run/docker.sock: GET /containers/" .. H.cid("e") .. "/json: HTTP 500 (boom)"
        local t, l = only_tenant(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") },
          containers = { { Id = H.cid("e"), Unreadable = cause } },
        })
        assert.same({ "docker", "unidentified" }, { t.kind, t.verdict })
        assert.truthy(l.errors[1]:find(cause, 1, true))
      end)

      it("an inspect that failed at one engine for a container the other knows: known, and no error", function()
        local cause = "podman unix:///run/podman/podman.sock: GET /containers/" .. H.cid("a") .. "/json: Timeout was reached"
        local t, l = only_tenant(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = { H.container { id = H.cid("a"), name = "worker" } },
          podman = { { Id = H.cid("a"), Error = cause } },
        })
        assert.same({ "worker", "unmanaged" }, { t.container, t.verdict })
        assert.is_nil(l.errors)
      end)

      it("a container while the engine failed its list: unidentified", function()
        local t = only_tenant(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") },
          failed = { docker = "docker unix:///var/run/docker.sock: GET /containers/json: timed out" },
        })
        assert.equal("unidentified", t.verdict)
      end)

      it("processes while the proc source failed: one host tenant, unidentified; with --no-docker (no proc source) unmanaged as before", function()
        local t = only_tenant(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100, "ffmpeg"), H.app(H.UUID0, 5151, 20, "python3") },
          failed = { proc = "proc /proc: Permission denied" },
        })
        assert.same({ "host", { 4242, 5151 }, 120, true, "unidentified" }, { t.kind, t.pids, t.usedMemoryMiB, t.unidentified, t.verdict })
        local snap = H.snapshot { apps = { H.app(H.UUID0, 4242, 100, "ffmpeg") } }
        snap.sources.proc = nil
        local chosen = only_tenant(snap)
        assert.same({ "host", "unmanaged" }, { chosen.kind, chosen.verdict })
        assert.is_nil(chosen.unidentified)
      end)

      it("a process /proc has no record of, apart from the host process /proc named", function()
        local l = ledger.build(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100, "ffmpeg"), H.app(H.UUID0, 6060, 20, "python3") },
          pids = { [6060] = { owner = "process" } },
        })
        local tenants = l.entries[1].tenants
        assert.same({ { 4242 }, "unidentified" }, { tenants[1].pids, tenants[1].verdict })
        assert.same({ { 6060 }, "unmanaged" }, { tenants[2].pids, tenants[2].verdict })
        assert.is_nil(tenants[2].unidentified)
      end)

      it("is in the ledger's JSON only when true, and a ledger read back (fleet) gives the verdict again", function()
        local l = ledger.build(H.snapshot {
          gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
          apps = { H.app(H.UUID0, 4242, 100), H.app(H.UUID1, 6060, 20, "python3") },
          pids = { [4242] = H.cid("e"), [6060] = { owner = "process" } },
          containers = {},
        })
        local doc = assert(json.decode(render_json.ledger(l)))
        assert.is_true(doc.entries[1].tenants[1].unidentified)
        assert.is_nil(doc.entries[1].tenants[1].verdict)
        assert.is_nil(doc.entries[2].tenants[1].unidentified)
        local back = assert(fleet.readable(doc, "http://test:9877/ledger"))
        ledger.give_verdicts(back)
        assert.equal("unidentified", back.entries[1].tenants[1].verdict)
        assert.equal("unmanaged", back.entries[2].tenants[1].verdict)
      end)
    end)

    it("a container holding a GPU without a process is a tenant with 0 pids ([] not null)", function()
      local l = ledger.build(H.snapshot {
        containers = { H.container { id = H.cid("c"), name = "idle-holder", env = { "NVIDIA_VISIBLE_DEVICES=" .. H.UUID0 } } },
      })
      local t = l.entries[1].tenants[1]
      assert.equal("idle-holder", t.container)
      assert.equal(0, t.usedMemoryMiB)
      assert.same({}, t.pids)
      assert.same({}, t.processes)
      local encoded = json.encode(t)
      assert.truthy(encoded:find('"pids":[]', 1, true), encoded)
      assert.truthy(encoded:find('"processes":[]', 1, true), encoded)
    end)

    it("a process-less Nomad container is reserved when its alloc reserved the GPU", function()
      local l = ledger.build(H.snapshot {
        containers = { H.container { id = H.cid("c"), name = "w", labels = H.nomad_labels(A_WORKER, "worker", "w", "video"),
          env = { "NVIDIA_VISIBLE_DEVICES=" .. H.UUID0 } } },
        allocations = { H.alloc { id = A_WORKER, tasks = { w = { H.UUID0 } } } },
      })
      local t = l.entries[1].tenants[1]
      assert.equal("nomad", t.kind)
      assert.is_true(t.reserved)
      assert.equal("held", l.entries[1].state)
    end)

    it("a container given all GPUs ([\"all\"], --gpus all) is a tenant of every GPU", function()
      local l = ledger.build(H.snapshot {
        gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
        containers = { H.container { id = H.cid("c"), name = "greedy", requests = { { Count = -1 } } } },
      })
      assert.same({ "docker:greedy" }, kinds(l.entries[1]))
      assert.same({ "docker:greedy" }, kinds(l.entries[2]))
    end)

    it("a container with a process on a GPU is not listed twice there", function()
      local l = ledger.build(H.snapshot {
        apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("c") },
        containers = { H.container { id = H.cid("c"), name = "x", env = { "NVIDIA_VISIBLE_DEVICES=all" } } },
      })
      assert.equal(1, #l.entries[1].tenants)
      assert.same({ 4242 }, l.entries[1].tenants[1].pids)
    end)

    it("a container whose GPU list does not name the GPU is not its tenant", function()
      local l = ledger.build(H.snapshot {
        gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
        containers = { H.container { id = H.cid("c"), name = "one", env = { "NVIDIA_VISIBLE_DEVICES=1" } },
          H.container { id = H.cid("f"), name = "none" } },
      })
      assert.same({}, l.entries[1].tenants)
      assert.same({ "docker:one" }, kinds(l.entries[2]))
    end)

    it("orders tenants by memory, then container name, then container id", function()
      local l = ledger.build(H.snapshot {
        apps = { H.app(H.UUID0, 1, 10), H.app(H.UUID0, 2, 500), H.app(H.UUID0, 3, 10) },
        pids = { [1] = H.cid("b"), [2] = H.cid("c"), [3] = H.cid("a") },
        containers = {
          H.container { id = H.cid("a"), name = "zeta" },
          H.container { id = H.cid("b"), name = "alpha" },
          H.container { id = H.cid("c"), name = "mid" },
          H.container { id = H.cid("d"), name = "same", env = { "NVIDIA_VISIBLE_DEVICES=0" } },
          H.container { id = H.cid("e"), name = "same", env = { "NVIDIA_VISIBLE_DEVICES=0" } },
        },
      })
      assert.same({ "docker:mid", "docker:alpha", "docker:zeta", "docker:same", "docker:same" }, kinds(l.entries[1]))
      assert.equal(H.cid("d"):sub(1, 12), l.entries[1].tenants[4].containerId)
      assert.equal(H.cid("e"):sub(1, 12), l.entries[1].tenants[5].containerId)
    end)

    it("the host tenant sorts first among equal memory (empty name)", function()
      local l = ledger.build(H.snapshot {
        apps = { H.app(H.UUID0, 1, 10), H.app(H.UUID0, 2, 10) },
        pids = { [1] = H.cid("a") },
        containers = { H.container { id = H.cid("a"), name = "aaa" } },
      })
      assert.same({ "host:ffmpeg", "docker:aaa" }, kinds(l.entries[1]))
    end)

    it("tenants without processes come out name-sorted whatever the input order (20 runs)", function()
      local names = { "delta", "alpha", "echo", "charlie", "bravo", "foxtrot" }
      local expected = { "docker:alpha", "docker:bravo", "docker:charlie", "docker:delta", "docker:echo", "docker:foxtrot" }
      for run = 1, 20 do
        local containers = {}
        for i, name in ipairs(names) do
          containers[i] = H.container { id = H.cid(string.char(96 + i)), name = name, env = { "NVIDIA_VISIBLE_DEVICES=all" } }
        end
        H.shuffle(containers, run)
        local l = ledger.build(H.snapshot { containers = containers })
        assert.same(expected, kinds(l.entries[1]), "run " .. run)
      end
    end)

    it("Podman containers are known too, and are docker tenants when not Nomad's", function()
      local l = ledger.build(H.snapshot {
        apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("p") },
        containers = {}, podman = { H.container { id = H.cid("p"), name = "podman-thing" } },
      })
      assert.same({ "docker:podman-thing" }, kinds(l.entries[1]))
    end)

    describe("Nomad", function()
      it("without Nomad (--no-nomad) nomadRead is false and nothing is reserved", function()
        local l = ledger.build(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = { H.container { id = H.cid("a"), name = "w", labels = H.nomad_labels(A_WORKER, "worker", "w", "video") } },
        })
        assert.is_false(l.nomadRead)
        local t = l.entries[1].tenants[1]
        assert.equal("nomad", t.kind)
        assert.is_false(t.reserved)
        assert.is_false(t.allocVisible)
        assert.same({}, l.entries[1].reservations)
        assert.equal("unaccounted", l.entries[1].state)
      end)

      it("an allocation Nomad did not return is not visible and not reserved", function()
        local l = ledger.build(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = { H.container { id = H.cid("a"), name = "w", labels = H.nomad_labels(A_WORKER, "worker", "w", "video") } },
          allocations = { H.alloc { id = A_RESTREAMER, tasks = { r = { H.UUID1 } } } },
        })
        assert.is_true(l.nomadRead)
        local t = l.entries[1].tenants[1]
        assert.is_false(t.allocVisible)
        assert.is_false(t.reserved)
      end)

      it("a visible allocation that did not reserve this GPU: visible, not reserved", function()
        local l = ledger.build(H.snapshot {
          gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = { H.container { id = H.cid("a"), name = "w", labels = H.nomad_labels(A_WORKER, "worker", "w", "video") } },
          allocations = { H.alloc { id = A_WORKER, tasks = { w = { H.UUID1 } } } },
        })
        local t = l.entries[1].tenants[1]
        assert.is_true(t.allocVisible)
        assert.is_false(t.reserved)
        assert.equal("reserved-idle", l.entries[2].state)
      end)

      it("a name-derived alloc returned by Nomad is nomad, reserved and allocFromName", function()
        local l = ledger.build(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = {}, podman = { H.container { id = H.cid("a"), name = "enc-" .. A_ENC } },
          allocations = { H.alloc { id = A_ENC, job = "encode", tasks = { enc = { "0" } } } },
        })
        local t = l.entries[1].tenants[1]
        assert.equal("nomad", t.kind)
        assert.is_true(t.reserved)
        assert.is_true(t.allocVisible)
        assert.is_true(t.allocFromName)
        assert.equal("enc", t.taskName)
        assert.equal("held", l.entries[1].state)
      end)

      it("a name-derived alloc not returned stays nomad with allocVisible false", function()
        local l = ledger.build(H.snapshot {
          apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("a") },
          containers = { H.container { id = H.cid("a"), name = "enc-" .. A_ENC } },
          allocations = {},
        })
        local t = l.entries[1].tenants[1]
        assert.equal("nomad", t.kind)
        assert.is_false(t.allocVisible)
        assert.is_false(t.reserved)
        assert.is_true(t.allocFromName)
      end)

      it("allocFromName is omitted (not false) for label-derived allocs", function()
        local l = ledger.build(fixture())
        assert.is_nil(l.entries[1].tenants[2].allocFromName)
      end)

      it("a reservation by index or short uuid reserves the GPU", function()
        local l = ledger.build(H.snapshot {
          gpus = { H.smi_row { index = 0 }, H.smi_row { index = 1 } },
          allocations = { H.alloc { id = A_WORKER, tasks = { w = { "GPU-ac81e44d" } } },
            H.alloc { id = A_ENC, tasks = { e = { "0" } } } },
        })
        assert.equal(A_ENC, l.entries[1].reservations[1].allocId)
        assert.equal(A_WORKER, l.entries[2].reservations[1].allocId)
      end)
    end)

    describe("errors", function()
      it("come in the order nvidia, proc, docker, podman, nomad, then the snapshot's own", function()
        local l = ledger.build(H.snapshot {
          apps_error = "nvidia-smi query-compute-apps: exit status 9",
          failed = {
            nomad = "nomad: connection refused",
            podman = "podman: no socket",
            proc = "proc /proc: No such file",
            docker = "docker: connection refused",
          },
          errors = { "history: corrupt" },
        })
        assert.same({
          "nvidia-smi query-compute-apps: exit status 9",
          "proc /proc: No such file",
          "docker: connection refused",
          "podman: no socket",
          "nomad: connection refused",
          "history: corrupt",
        }, l.errors)
        assert.is_false(l.nomadRead)
      end)

      it("a failed nvidia-smi is an error and no GPUs, entries []", function()
        local snap = H.snapshot {}
        snap.sources.nvidia = { ok = false, error = "nvidia-smi query-gpu: nvidia-smi: No such file or directory" }
        local l = ledger.build(snap)
        assert.same({}, l.entries)
        assert.same({ "nvidia-smi query-gpu: nvidia-smi: No such file or directory" }, l.errors)
        assert.truthy(render_json.ledger(l):find('"entries":[]', 1, true))
      end)

      it("names in each source error what was asked: the engine's endpoint, Nomad's address, the binary", function()
        local snap = H.snapshot {}
        snap.sources.nvidia = { ok = false, binary = "/usr/bin/nvidia-smi", error = "nvidia-smi: exited 9" }
        snap.sources.docker = { ok = false, endpoint = "unix:///run/docker.sock", error = "docker: refused" }
        snap.sources.nomad = { ok = false, address = "http://127.0.0.1:4646", error = "nomad: refused" }
        local asked = {}
        for _, err in ipairs(ledger.build(snap).sourceErrors) do
          asked[err.source] = err.asked
        end
        assert.same({ nvidia = "/usr/bin/nvidia-smi", docker = "unix:///run/docker.sock", nomad = "http://127.0.0.1:4646" },
          asked)
      end)

      it("keeps what was asked in the error of a replayed source of the wrong shape, or failed without its error", function()
        local snap = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
        snap.sources.docker.ok = nil
        snap.sources.nomad_devices.ok = false
        snap.sources.mig.enabled = 5
        snap.sources.kernel_log = { ok = true, via = "file", path = "/var/log/gpu.log", records = {}, dropped = "x" }
        snap.sources.proc = { ok = true, root = 7, pids = {} }
        local asked = {}
        for _, err in ipairs(ledger.build(snap).sourceErrors) do
          asked[err.source] = { err.asked or "(none)", err.message }
        end
        assert.same({
          docker = { "unix:///var/run/docker.sock",
            "docker unix:///var/run/docker.sock: unexpected answer: docker.ok is missing, want a boolean" },
          nomad_devices = { "http://127.0.0.1:4646",
            "nomad http://127.0.0.1:4646: nomad_devices failed, and the snapshot does not say why" },
          mig = { "nvidia-smi", "nvidia-smi mig: nvidia-smi: unexpected answer: mig.enabled is a number, want a list" },
          kernel_log = { "/var/log/gpu.log",
            "kernel_log /var/log/gpu.log: unexpected answer: kernel_log.dropped is a string, want a number" },
          proc = { "(none)", "proc (the snapshot names no root): unexpected answer: proc.root is a number, want a string" },
        }, asked)
      end)

      it("leaves out a source it does not know, whatever it holds (a later version's, replayed)", function()
        local plain = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
        local later = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
        later.sources.rdma = 5
        later.sources.nvlink = { ok = false }
        later.sources.fans = json.null
        assert.same(render_json.ledger(ledger.build(plain)), render_json.ledger(ledger.build(later)))
      end)

      it("no errors is no errors field", function()
        assert.is_nil(ledger.build(fixture()).errors)
        assert.is_nil(render_json.ledger(ledger.build(fixture())):find('"errors"', 1, true))
      end)
    end)

    describe("the health sources' wrong types", function()
      -- The demo snapshot as a replayed JSON text, after change(text).
      local function demo_ledger(change)
        local text = change(json.encode(require("gpuledger.snapshot").demo(H.core)))
        return ledger.build(json.decode(text))
      end

      it("a null health cell is an error naming the query, binary, row and cell; every GPU and the other rows stay", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"Enabled","Enabled","Enabled","0","0","12"', '"Enabled",null,"Enabled","0","0","12"', 1))
        end)
        assert.same({ "nvidia-smi health: nvidia-smi: unexpected answer: health.rows[2][6] is null, want a string" }, l.errors)
        assert.equal(5, #l.entries)
        assert.is_nil(l.entries[2].health)
        assert.truthy(l.entries[1].health)
        assert.equal("read", l.sources.health)
      end)

      it("a kernel log record without its text is an error naming it; the other records' Xids stay", function()
        local l = demo_ledger(function(text)
          return (text:gsub('{"at":"2026%-11%-29T07:41:05.118204Z","text":"[^"]*"}', '{"at":"2026-11-29T07:41:05.118204Z"}', 1))
        end)
        assert.same({ "kernel_log journalctl -k: unexpected answer: records[2].text is missing, want a string" }, l.errors)
        assert.same({}, l.entries[2].xids)
        assert.equal(48, l.entries[4].xids[1].xid)
      end)

      it("a kernel log record that is null or no object is an error naming it; the records after it count", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"records":%[{"at":"2026%-11%-29T06:12:40.402117Z","text":"[^"]*"}', '"records":[null,5', 1))
        end)
        assert.same({ "kernel_log journalctl -k: unexpected answer: records[1] is null, want an object",
          "kernel_log journalctl -k: unexpected answer: records[2] is a number, want an object" }, l.errors)
        assert.equal("read", l.sources.kernel_log)
        assert.same({}, l.entries[4].xids)
        assert.equal(63, l.entries[2].xids[1].xid)
        assert.equal(13, l.entries[3].xids[1].xid)
      end)

      it("a /proc record's uid that is no whole number is an error naming it; every GPU stays", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"8181":{"owner":"process"}', '"8181":{"owner":"process","uid":1000.5}', 1))
        end)
        assert.same({ "proc /proc: unexpected answer: proc.pids.8181.uid is 1000.5, want a whole number from 0 to 9007199254740992" },
          l.errors)
        assert.equal("failed", l.sources.proc)
        assert.equal(5, #l.entries)
      end)

      it("a Nomad device that is no object is an error naming it and the agent; every other GPU keeps its nomadDevice", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"Instances":%[{"HealthDescription":"","Healthy":true,"ID":"GPU%-3f8a[^}]*}', '"Instances":[1', 1))
        end)
        assert.same({ "nomad http://127.0.0.1:4646: unexpected answer: devices[1].Instances[1] is a number, want an object" },
          l.errors)
        assert.equal("read", l.sources.nomad_devices)
        assert.is_nil(l.entries[1].nomadDevice)
        for i = 2, 4 do
          assert.same({ healthy = true, healthDescription = "" }, l.entries[i].nomadDevice)
        end
        for _, slice in ipairs(l.entries[5].migDevices) do -- the GPU in MIG mode: Nomad lists its slices
          assert.same({ healthy = true, healthDescription = "" }, slice.nomadDevice)
        end
      end)

      it("a source without its ok is an error naming who answered it and the field", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"nomad_devices":{"address":"([^"]*)","devices":(.-),"node_id":"([^"]*)","ok":true}',
            '"nomad_devices":{"address":"%1","devices":%2,"node_id":"%3"}', 1))
        end)
        assert.same({ "nomad http://127.0.0.1:4646: unexpected answer: nomad_devices.ok is missing, want a boolean" }, l.errors)
        assert.equal(5, #l.entries)
        assert.equal("failed", l.sources.nomad_devices)
      end)

      it("a failed source without its error says so, naming who answered it, rather than nothing", function()
        local l = demo_ledger(function(text)
          return (text:gsub('"nomad_devices":{"address":"([^"]*)","devices":(.-),"node_id":"([^"]*)","ok":true}',
            '"nomad_devices":{"address":"%1","devices":%2,"node_id":"%3","ok":false}', 1))
        end)
        assert.same({ "nomad http://127.0.0.1:4646: nomad_devices failed, and the snapshot does not say why" }, l.errors)
        assert.equal(5, #l.entries)
      end)

      it("a source of a snapshot that keeps no address or binary says the snapshot names none, never an empty field", function()
        local snap = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
        snap.sources.nomad_devices = { ok = false }
        snap.sources.nomad.address = nil
        snap.sources.nomad.allocations[2] = 7
        snap.sources.mig = { ok = false, binary = "/opt/nvidia/bin/nvidia-smi" }
        snap.sources.docker = { endpoint = "unix:///run/docker.sock", containers = {} }
        snap.sources.kernel_log.via = nil
        snap.sources.kernel_log.records[1].text = nil
        local l = ledger.build(snap)
        table.sort(l.errors)
        assert.same({
          "docker unix:///run/docker.sock: unexpected answer: docker.ok is missing, want a boolean",
          "kernel_log (the snapshot names no log): unexpected answer: records[1].text is missing, want a string",
          "nomad (the snapshot names no address): nomad_devices failed, and the snapshot does not say why",
          "nomad (the snapshot names no address): unexpected answer: allocations[2] is a number, want an object",
          "nvidia-smi mig: /opt/nvidia/bin/nvidia-smi: mig failed, and the snapshot does not say why",
        }, l.errors)
      end)
    end)

    describe("an engine's containers and Nomad's allocations", function()
      it("a container or allocation that is null or no object is an error naming it; the others stay", function()
        local snap = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
        snap.sources.docker.containers[1] = nil -- a JSON null among the containers
        snap.sources.docker.containers[3] = "x"
        snap.sources.nomad.allocations[2] = 7
        local l = ledger.build(snap)
        assert.same({
          "nomad http://127.0.0.1:4646: unexpected answer: allocations[2] is a number, want an object",
          "docker unix:///var/run/docker.sock: unexpected answer: containers[1] is null, want an object",
          "docker unix:///var/run/docker.sock: unexpected answer: containers[3] is a string, want an object",
        }, l.errors)
        assert.same({ "read", "read" }, { l.sources.docker, l.sources.nomad })
        assert.equal("restreamer", l.entries[1].reservations[1].jobId)
        local named = {}
        for _, tenant in ipairs(l.entries[3].tenants) do
          named[#named + 1] = tenant.container or "?"
        end
        assert.same({ "trainer-5c7d1e2f-8a9b-4c3d-9e1f-2a3b4c5d6e7f", "encode-9eab414d-13fc-1cbe-c7ac-e9e1498a3fb3", "?", "?" }, named)
      end)
    end)

    it("says which sources were read, failed or off", function()
      local l = ledger.build(H.snapshot { containers = {}, failed = { nomad = "nomad: x" } })
      assert.same({ nvidia = "read", health = "off", mig = "off", kernel_log = "off", proc = "read", docker = "read",
        podman = "off", nomad = "failed", nomad_devices = "off" }, l.sources)
    end)
  end)

  describe("ls --json (render.json.ledger)", function()
    local doc
    before_each(function()
      local text = render_json.ledger(ledger.build(fixture()))
      assert.equal("\n", text:sub(-1))
      doc = assert(json.decode(text))
    end)

    it("an empty tenants list is []", function()
      local text = render_json.ledger(ledger.build(fixture()))
      assert.truthy(text:find('"tenants":[]', 1, true))
      assert.is_nil(text:find("null", 1, true))
    end)

    it("carries the ledger document's fields", function()
      assert.equal(1, doc.schema)
      assert.equal("gpud", doc.node)
      assert.equal(H.AT, doc.at)
      assert.is_true(doc.nomadRead)
      local e = doc.entries[1]
      for _, key in ipairs { "index", "uuid", "model", "busId", "memoryUsedMiB", "memoryTotalMiB", "utilizationPct",
        "memoryUtilizationPct", "temperatureC", "powerW", "encoderSessions", "encoderAverageFps", "reservations",
        "tenants", "state" } do
        assert.is_not_nil(e[key], key)
      end
      local t = e.tenants[2]
      for _, key in ipairs { "kind", "container", "containerId", "image", "allocId", "jobName", "taskName", "namespace",
        "pids", "processes", "usedMemoryMiB", "reserved", "allocVisible" } do
        assert.is_not_nil(t[key], key)
      end
      local r = doc.entries[2].reservations[1]
      for _, key in ipairs { "allocId", "jobId", "taskGroup", "task", "namespace", "clientStatus", "deviceIds" } do
        assert.is_not_nil(r[key], key)
      end
    end)

    it("omits thermal fields the driver did not report", function()
      assert.is_nil(doc.entries[1].thermalMarginC)
      assert.is_nil(doc.entries[1].thermalSlowdown)
    end)

    it("omits empty optional tenant fields (host tenant)", function()
      local host = doc.entries[1].tenants[3]
      assert.equal("host", host.kind)
      assert.is_nil(host.container)
      assert.is_nil(host.containerId)
      assert.is_nil(host.allocId)
    end)
  end)
end)
