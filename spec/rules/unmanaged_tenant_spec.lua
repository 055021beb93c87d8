-- rules/unmanaged_tenant.lua, as embedded in the core: each condition of its finding
-- and its boundary (docs/contract.md#codes).
local H = require "helper"

local gpu = H.gpu
local one, none, contains = H.rule_one, H.rule_none, H.contains

describe("unmanaged-tenant", function()
  it("a docker container is BAD, naming container, image, MiB and pids", function()
    local f = one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant { pids = { 5151, 5152 } } } } })
    assert.equal("BAD", f.level)
    assert.equal("container ffmpeg-manual (jrottenberg/ffmpeg:6.1) holds this GPU outside Nomad — 2048 MiB, pids [5151 5152]", f.message)
  end)

  it("a host process is BAD, naming the processes", function()
    local f = one("unmanaged-tenant", { gpu { tenants = { H.host_tenant { pids = { 7171, 8181 }, processes = { "python3", "gpu_burn" }, usedMemoryMiB = 360 } } } })
    assert.equal("BAD", f.level)
    assert.equal("host process [python3 gpu_burn] holds this GPU outside any container — 360 MiB, pids [7171 8181]", f.message)
  end)

  it("an uninspectable container is named by its id", function()
    local f = one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant { container = false, image = false } } } })
    contains("container bbbbbbbbbbbb (", f.message)
  end)

  it("is WARN with --allow-unmanaged", function()
    assert.equal("WARN", one("unmanaged-tenant", { gpu { tenants = { H.docker_tenant() } } }, { allow_unmanaged = true }).level)
  end)

  it("is WARN with allow_unmanaged in the thresholds", function()
    assert.equal("WARN", one("unmanaged-tenant", { gpu { tenants = { H.host_tenant() } } }, nil, { allow_unmanaged = true }).level)
  end)

  it("its level function answers BAD, or WARN under allow_unmanaged", function()
    local ruleset = require "gpuledger.ruleset"
    local rule = H.rule(H.rule_set(), "unmanaged-tenant")
    assert.equal("BAD", ruleset.level_of(rule, { allow_unmanaged = false }))
    assert.equal("WARN", ruleset.level_of(rule, { allow_unmanaged = true }))
  end)

  describe("a tenant that could not be identified is not called unmanaged", function()
    it("a container whose inspect failed", function()
      local found = H.run_rules(H.snapshot {
        apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") },
        containers = { { Id = H.cid("e"), Unreadable = "docker unix:///var/run/docker.sock: GET /containers/x/json: HTTP 500" } },
      })
      assert.same({}, H.with_code(found, "unmanaged-tenant"))
    end)

    it("a container id no engine knows", function()
      local found = H.run_rules(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, pids = { [4242] = H.cid("e") }, containers = {} })
      assert.same({}, H.with_code(found, "unmanaged-tenant"))
    end)

    it("processes while the proc source failed, or that it has no record of; but with --no-docker they are", function()
      local failed = H.run_rules(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) }, failed = { proc = "proc /proc: Permission denied" } })
      assert.same({}, H.with_code(failed, "unmanaged-tenant"))
      local unrecorded = H.run_rules(H.snapshot { apps = { H.app(H.UUID0, 4242, 100) } })
      assert.same({}, H.with_code(unrecorded, "unmanaged-tenant"))
      local snap = H.snapshot { apps = { H.app(H.UUID0, 4242, 100, "python3") } }
      snap.sources.proc = nil -- --no-docker: the operator chose not to resolve
      local f = H.with_code(H.run_rules(snap), "unmanaged-tenant")
      assert.equal(1, #f)
      assert.equal("host process [python3] holds this GPU outside any container — 100 MiB, pids [4242]", f[1].message)
    end)
  end)

  it("Nomad tasks are never unmanaged", function()
    none("unmanaged-tenant", { gpu { tenants = { H.nomad_tenant { reserved = false } } } })
  end)
end)
