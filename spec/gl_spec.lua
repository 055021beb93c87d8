local H = require "helper"
local gl = require "gpuledger.gl"
local cards = require "gpuledger.cards"

describe("gpuledger.gl", function()
  it("labels a GPU by index and the first 12 characters of its uuid", function()
    assert.equal("gpu0 GPU-fef8089b", gl.label(H.gpu { index = 0 }))
    assert.equal("gpu3 GPU-61d0e8b3", gl.label(H.gpu { index = 3 }))
  end)

  it("cuts an alloc id to 8 characters", function()
    assert.equal("4d1e6a9b", gl.alloc8("4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e"))
    assert.equal("", gl.alloc8(nil))
  end)

  it("writes lists the way Go does", function()
    assert.equal("[4242]", gl.list({ 4242 }))
    assert.equal("[a b]", gl.list({ "a", "b" }))
    assert.equal("[]", gl.list({}))
  end)

  it("says how long a GPU has been in its state", function()
    local ledger = H.ledger {}
    assert.equal(", for 6h12m", gl.since_suffix(ledger, { stateSince = H.ago(6 * 3600 + 12 * 60) }))
    assert.equal(", for 2d2h", gl.since_suffix(ledger, { stateSince = H.ago(50 * 3600) }))
    assert.equal(", for <1m", gl.since_suffix(ledger, { stateSince = H.ago(30) }))
    assert.equal("", gl.since_suffix(ledger, {}))
    assert.equal("", gl.since_suffix(ledger, { stateSince = "not a time" }))
    assert.equal(90 * 60, gl.state_seconds(ledger, { stateSince = H.ago(90 * 60) }))
  end)

  it("never says a negative time (a since after the ledger's time is 0)", function()
    assert.equal(", for <1m", gl.since_suffix(H.ledger {}, { stateSince = H.ago(-3600) }))
  end)

  it("names a tenant one way, whom to talk to: job/task, its container, else its short id or processes", function()
    assert.equal("worker/worker", gl.who(H.nomad_tenant()))
    assert.equal("ffmpeg-manual", gl.who(H.docker_tenant()))
    assert.equal("c", gl.who(H.nomad_tenant { jobName = false, container = "c" }))
    assert.equal("bbbbbbbbbbbb", gl.who(H.docker_tenant { container = false }))
    assert.equal("bbbbbbbbbbbb", gl.who(H.docker_tenant { container = "" }))
    assert.equal("python3,gpu_burn", gl.who(H.host_tenant { processes = { "python3", "gpu_burn" } }))
  end)

  it("writes job/task of a tenant or a reservation", function()
    assert.equal("worker/worker", gl.job_task(H.nomad_tenant()))
    assert.equal("worker/w", gl.job_task(H.reservation()))
    assert.equal("/enc", gl.job_task({ taskName = "enc" }))
  end)

  it("quotes a namespace, or says its namespace when empty", function()
    assert.equal('"video"', gl.quoted_namespace("video"))
    assert.equal("its namespace", gl.quoted_namespace(""))
    assert.equal("its namespace", gl.quoted_namespace(nil))
  end)
  it("tenant_verdict says what may be said of a tenant", function()
    local l = H.ledger {}
    assert.equal("unmanaged", gl.tenant_verdict(l, H.docker_tenant {}))
    assert.equal("unmanaged", gl.tenant_verdict(l, H.host_tenant {}))
    assert.is_nil(gl.tenant_verdict(l, H.nomad_tenant { reserved = true }))
    assert.equal("unreserved", gl.tenant_verdict(l, H.nomad_tenant { reserved = false, allocVisible = true }))
    assert.equal("hidden", gl.tenant_verdict(l, H.nomad_tenant { reserved = false, allocVisible = false }))
    assert.equal("unknown", gl.tenant_verdict(H.ledger({}, { nomadRead = false }), H.nomad_tenant { reserved = false }))
  end)
end)

describe("gpuledger.cards", function()
  for _, name in ipairs { "Quadro RTX 4000", "NVIDIA L4", "Tesla T4", "NVIDIA T4", "NVIDIA A10" } do
    it(name .. " is known and unrestricted", function()
      local card = cards.lookup(name)
      assert.is_true(card.known)
      assert.is_nil(card.encoder_cap)
      assert.is_number(card.nvenc)
    end)
  end

  it("carries NVENC count and generation", function()
    assert.same({ known = true, nvenc = 2, generation = "8th (Ada)" }, cards.lookup("NVIDIA L4"))
    assert.equal("7th (Turing)", cards.lookup("Quadro RTX 4000").generation)
    assert.equal("7th (Ampere)", cards.lookup("NVIDIA A10").generation)
  end)

  it("any GeForce is capped at 12 sessions", function()
    assert.equal(12, cards.lookup("NVIDIA GeForce RTX 4090").encoder_cap)
    assert.equal(12, cards.lookup("GeForce GTX 1080").encoder_cap)
  end)

  for _, name in ipairs { "NVIDIA A100-SXM4-80GB", "NVIDIA A10G", "Quadro RTX 4000 Ada", "", "nvidia l4" } do
    it(string.format("%q is unknown", name), function()
      assert.is_false(cards.lookup(name).known)
    end)
  end

  it("nil is unknown", function()
    assert.is_false(cards.lookup(nil).known)
  end)
  describe("tenancy, the end of every health message", function()
    it("reserved, with its tenant count", function()
      local g = H.gpu { tenants = { H.nomad_tenant(), H.host_tenant() },
        reservations = { H.reservation { jobId = "train", task = "trainer", allocId = "1f2e3d4c-0000-4000-8000-000000000000" } } }
      assert.equal(" — reserved by train/trainer (alloc 1f2e3d4c), 2 tenants", gl.tenancy(g))
    end)

    it("reserved twice, nothing on it", function()
      local g = H.gpu { reservations = { H.reservation(), H.reservation { allocId = "9" } } }
      assert.equal(" — reserved by worker/w (alloc 4d1e6a9b) and 1 more, no tenant", gl.tenancy(g))
    end)

    it("free", function()
      assert.equal(" — not reserved: Nomad will place the next job here", gl.tenancy(H.gpu {}))
    end)

    it("not reserved but held", function()
      local g = H.gpu { tenants = { H.docker_tenant(), H.host_tenant() } }
      assert.equal(" — not reserved, held by [ffmpeg-manual python3]: Nomad may place the next job here", gl.tenancy(g))
    end)
  end)

  it("labels a GPU nvidia-smi no longer lists by its uuid, else its bus id", function()
    assert.equal("gpu? GPU-dead0000", gl.label(H.gpu { index = -1, uuid = "GPU-dead0000-0000-4000-8000-000000000000" }))
    assert.equal("gpu? 00000000:AF:00.0", gl.label(H.gpu { index = -1, uuid = "", busId = "00000000:AF:00.0" }))
  end)
end)

describe("gl.tenancy of a GPU in MIG mode", function()
  it("names every slice's tenancy, for a health finding on the physical GPU", function()
    local json = require "gpuledger.json"
    local gpu = H.gpu { migDevices = {
      { uuid = "MIG-a", index = 0, profile = "3g.40gb", state = "held",
        reservations = json.array { H.reservation { jobId = "train", task = "trainer", allocId = "aaaaaaaa-1" } },
        tenants = json.array { H.nomad_tenant() } },
      { uuid = "MIG-b", index = 1, profile = "2g.20gb", state = "free", reservations = json.array(), tenants = json.array() },
    } }
    assert.equal(" — mig0 3g.40gb reserved by train/trainer (alloc aaaaaaaa), 1 tenant; "
      .. "mig1 2g.20gb not reserved: Nomad will place the next job here", gl.tenancy(gpu))
  end)
end)
