-- rules/source_unavailable.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"
local ledger_mod = require "gpuledger.ledger"

local gpu, ledger = H.gpu, H.ledger

describe("source-unavailable (ledger errors)", function()
  it("one node-level ERROR per ledger error, the error's text, in order, no gpu", function()
    local found = H.run_rules(ledger({ gpu {} }, { errors = { "docker: connection refused", "nomad: HTTP 403" } }))
    local f = H.with_code(found, "source-unavailable")
    assert.equal(2, #f)
    assert.equal("docker: connection refused", f[1].message)
    assert.equal("nomad: HTTP 403", f[2].message)
    for _, x in ipairs(f) do
      assert.equal("ERROR", x.level)
      assert.is_nil(x.gpu)
      assert.equal("gpud", x.node)
    end
  end)

  it("a node whose nvidia-smi failed still reports its error", function()
    local found, worst = H.run_rules(ledger({}, { errors = { "nvidia-smi query-gpu: nvidia-smi: not found" } }))
    assert.equal(1, #found)
    assert.equal("ERROR", worst)
  end)
end)

describe("source-unavailable (a tenant that could not be identified)", function()
  local SOCK = "unix:///var/run/docker.sock"

  -- The source-unavailable findings about GPU 0 when judging snap.
  local function on_gpu(snap)
    local out = {}
    for _, f in ipairs(H.with_code(H.run_rules(snap), "source-unavailable")) do
      if f.gpu then
        out[#out + 1] = f
      end
    end
    return out
  end

  it("a container whose inspect failed: an ERROR on its GPU naming the container and the inspect's cause", function()
    local cause = string.format("docker %s: GET /containers/%s/json: HTTP 500 (boom)", SOCK, H.cid("e"))
    local f = on_gpu(H.snapshot {
      apps = { H.app(H.UUID0, 4242, 100), H.app(H.UUID0, 4243, 50) }, pids = { [4242] = H.cid("e"), [4243] = H.cid("e") },
      containers = { { Id = H.cid("e"), Unreadable = cause } },
    })
    assert.equal(1, #f)
    assert.equal("ERROR", f[1].level)
    assert.equal("gpu0 " .. H.UUID0:sub(1, 12), f[1].gpu)
    H.contains("container eeeeeeeeeeee holds this GPU (pids [4242 4243], 150 MiB), but no engine could identify it (", f[1].message)
    H.contains(cause, f[1].message)
    H.contains(") — whether Nomad manages it cannot be told", f[1].message)
  end)

  it("finds an error by its fields, never by its text: the container it concerns, the source it is of", function()
    -- an inspect error whose text does not name the container, and one that names it but concerns another
    local snap = H.snapshot {
      apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") },
      containers = { { Id = H.cid("e"), Error = "the engine said no" }, { Id = H.cid("f"), Error = "eeeeeeeeeeee is not this one" } },
    }
    local built = ledger_mod.build(snap)
    assert.same({ source = "docker", asked = SOCK, containerId = "eeeeeeeeeeee", message = "the engine said no" }, built.sourceErrors[1])
    local f = H.with_code(H.run_rules(built), "source-unavailable")
    H.contains("container eeeeeeeeeeee holds this GPU (pids [4242], 100 MiB), but no engine could identify it (the engine said no)", f[#f].message)
    -- a failed source's cause is its own error, whatever another's text starts with
    local failed = ledger_mod.build(H.snapshot { apps = { H.app(H.UUID0, 4242, 100, "ffmpeg") }, failed = { proc = "proc /proc: Permission denied" } })
    table.insert(failed.errors, 1, "proc: a docker error")
    table.insert(failed.sourceErrors, 1, { source = "docker", message = "proc: a docker error" })
    f = H.with_code(H.run_rules(failed), "source-unavailable")
    H.contains("hold this GPU, but /proc could not tell whose they are (proc /proc: Permission denied)", f[#f].message)
  end)

  it("a container while Docker failed its list: the engine's failure is the cause", function()
    local f = on_gpu(H.snapshot {
      apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") },
      failed = { docker = "docker " .. SOCK .. ": GET /containers/json: timed out after 5000 ms" },
    })
    assert.equal(1, #f)
    assert.equal("container eeeeeeeeeeee holds this GPU (pids [4242], 100 MiB), but no engine could identify it (docker "
      .. SOCK .. ": GET /containers/json: timed out after 5000 ms) — whether Nomad manages it cannot be told", f[1].message)
  end)

  it("a container every engine answered for and none knows: says which engines do not know it", function()
    local f = on_gpu(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") }, containers = {}, podman = {} })
    assert.equal(1, #f)
    H.contains("no engine could identify it (not known to docker or podman)", f[1].message)
  end)

  it("a container of a runtime gpuledger does not ask (containerd, or Podman while --podman is off): says so, rather than blame Docker", function()
    for runtime, cause in pairs {
      containerd = "its cgroup names containerd, and gpuledger asks only Docker and Podman",
      libpod = "its cgroup names Podman, which was not asked (--podman)",
    } do
      local snap = H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") }, containers = {} }
      snap.sources.proc.pids["4242"].runtime = runtime
      local f = on_gpu(snap)
      assert.equal(1, #f)
      H.contains("no engine could identify it (" .. cause .. ")", f[1].message)
    end
  end)

  it("processes while the proc source failed: an ERROR naming them and proc's error; none with --no-docker", function()
    local f = on_gpu(H.snapshot {
      apps = { H.app(H.UUID0, 4242, 100, "ffmpeg"), H.app(H.UUID0, 5151, 20, "python3") },
      failed = { proc = "proc /proc: Permission denied" },
    })
    assert.equal(1, #f)
    assert.equal("processes [ffmpeg python3] (pids [4242 5151], 120 MiB) hold this GPU, but /proc could not tell whose they are "
      .. "(proc /proc: Permission denied) — whether Nomad manages them cannot be told", f[1].message)
    local snap = H.snapshot { apps = { H.app(H.UUID0, 4242, 100, "ffmpeg") } }
    snap.sources.proc = nil -- --no-docker: the operator chose not to resolve
    assert.same({}, on_gpu(snap))
  end)

  it("a process /proc has no record of: says so", function()
    local f = on_gpu(H.snapshot { apps = { H.app(H.UUID0, 4242, 100, "ffmpeg") } })
    assert.equal(1, #f)
    H.contains("processes [ffmpeg] (pids [4242], 100 MiB) hold this GPU, but /proc could not tell whose they are (no record", f[1].message)
  end)
end)
