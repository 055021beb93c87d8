local H = require "helper"
local gl = require "gpuledger.gl"
local render = require "gpuledger.render.table"
local findings = require "gpuledger.findings"
local fleet = require "gpuledger.fleet"
local judge = require "gpuledger.judge"
local json = require "gpuledger.json"
local text_width = require("gpuledger.text").width

local function lines(s)
  local out = {}
  for line in s:gmatch("([^\n]*)\n") do
    out[#out + 1] = line
  end
  return out
end

local function contains(needle, haystack)
  assert.truthy(haystack:find(needle, 1, true), string.format("%q not in %q", needle, haystack))
end

-- The end-to-end node: gpu0 shared, gpu1 reserved and idle for 1h30m.
local function node(fields)
  return H.ledger({
    H.gpu { index = 0, model = "NVIDIA L4", utilizationPct = 72, memoryUsedMiB = 2048, memoryTotalMiB = 8192, temperatureC = 66,
      encoderSessions = 3, reservations = { H.reservation { jobId = "gpu-gpud-restreamer", task = "restreamer" } },
      tenants = {
        H.docker_tenant { container = "gpu-d-new-c0", usedMemoryMiB = 2048 },
        H.nomad_tenant { jobName = "gpu-gpud-restreamer", taskName = "restreamer", usedMemoryMiB = 1024 },
        H.host_tenant { usedMemoryMiB = 48 },
      } },
    H.gpu { index = 1, reservations = { H.reservation { jobId = "worker", task = "w", deviceIds = { H.UUID1 } } },
      stateSince = H.ago(90 * 60) },
  }, H.merge({ sources = { nvidia = "read", proc = "read", docker = "read", podman = "off", nomad = "read" } }, fields))
end

describe("gpuledger.render.table", function()
  describe("draw", function()
    it("shows a list cell one item per line, each line with the row's first cell (its GPU)", function()
      local out = render.draw({ "gpu", "tenants" }, { { "0", { "a", "bb" } } })
      assert.same({ "│ gpu │ tenants │", "├─────┼─────────┤", "│ 0   │ a       │", "│ 0   │ bb      │" }, lines(out))
    end)

    it("pads cells by characters under a ├─┼─┤ rule", function()
      local out = render.draw({ "a", "temp" }, { { "long cell", "61 °C" }, { "x", "—" } })
      assert.same({
        "│ a         │ temp  │",
        "├───────────┼───────┤",
        "│ long cell │ 61 °C │",
        "│ x         │ —     │",
      }, lines(out))
    end)
  end)

  describe("ls", function()
    it("has the header with node, GPU count and UTC time", function()
      local out = lines(render.ls(node()))
      assert.equal("gpuledger · gpud · 2 GPU(s) · 2026-11-29 08:00:00Z", out[1])
    end)

    it("adds the source errors count to the header", function()
      local out = lines(render.ls(node { errors = { "docker: refused", "nomad: 403" } }))
      assert.equal("gpuledger · gpud · 2 GPU(s) · 2026-11-29 08:00:00Z · 2 source error(s)", out[1])
    end)

    it("adds the driver's and CUDA's versions and Nomad's node to the header, wrapped on a narrow terminal", function()
      local ledger = node { driverVersion = "590.48.01", cudaVersion = "13.1",
        nomadNode = { id = "n", name = "gpud", class = "gpu", pool = "default", datacenter = "dc1" } }
      assert.equal("gpuledger · gpud · 2 GPU(s) · 2026-11-29 08:00:00Z · driver 590.48.01 · CUDA 13.1 · nomad dc1"
        .. " · pool default · class gpu", lines(render.ls(ledger))[1])
      local narrow = lines(render.ls(ledger, { columns = 80 }))
      assert.equal("gpuledger · gpud · 2 GPU(s) · 2026-11-29 08:00:00Z · driver 590.48.01 ·", narrow[1])
      assert.equal("CUDA 13.1 · nomad dc1 · pool default · class gpu", narrow[2])
      ledger.nomadNode = { id = "n", name = "gpu-node-07", class = "", datacenter = "dc1" }
      assert.equal("gpuledger · gpud · 2 GPU(s) · 2026-11-29 08:00:00Z · driver 590.48.01 · CUDA 13.1"
        .. " · nomad node gpu-node-07 · nomad dc1", lines(render.ls(ledger))[1], "Nomad's name where it differs; no empty class")
    end)

    it("has the column headers", function()
      local header = lines(render.ls(node()))[2]
      for _, column in ipairs { "gpu", "model", "util", "memory", "temp", "enc", "state", "reserved by (nomad)", "tenants" } do
        contains(column, header)
      end
    end)

    it("shows util, memory, temperature and encoder cells", function()
      local row = lines(render.ls(node()))[4]
      contains("│ 72% ", row)
      contains("│ 2048/8192 MiB ", row)
      contains("│ 66 °C ", row)
      contains("│ 3 ", row)
    end)

    it("marks tenants, one per line: !unmanaged for non-Nomad, nothing for a reserved task", function()
      local out = lines(render.ls(node()))
      contains("│ docker:gpu-d-new-c0 (2048 MiB) !unmanaged ", out[4])
      contains("│ nomad:gpu-gpud-restreamer/restreamer (1024 MiB) ", out[5])
      assert.matches("^│ 0 +│ +│", out[5])
      contains("│ host:python3 (48 MiB) !unmanaged ", out[6])
    end)

    it("marks a task Nomad hid from the token, and says so when Nomad was not read", function()
      local hidden = H.nomad_tenant { jobName = "train", taskName = "t", reserved = false, allocVisible = false }
      contains("nomad:train/t (1024 MiB) ?alloc hidden from the token", render.ls(H.ledger { H.gpu { tenants = { hidden } } }))
      local unread = H.ledger({ H.gpu { tenants = { hidden } } }, { nomadRead = false })
      contains("nomad:train/t (1024 MiB) ?nomad not read", render.ls(unread))
    end)

    it("marks a tenant that could not be identified ?not identified, not !unmanaged", function()
      local unknown = H.docker_tenant { container = false, image = false, containerId = "eeeeeeeeeeee", unidentified = true }
      local out = render.ls(H.ledger { H.gpu { tenants = { unknown, H.host_tenant { unidentified = true } } } })
      contains("docker:eeeeeeeeeeee (2048 MiB) ?not identified", out)
      contains("host:python3 (48 MiB) ?not identified", out)
      assert.is_nil(out:find("!unmanaged", 1, true))
    end)

    it("marks an unreserved Nomad task !unreserved", function()
      local l = H.ledger { H.gpu { tenants = { H.nomad_tenant { jobName = "worker", taskName = "w", reserved = false } } } }
      contains("nomad:worker/w (1024 MiB) !unreserved", render.ls(l))
    end)

    it("names each tenant as the findings do (gl.who)", function()
      local tenants = { H.nomad_tenant { taskName = "w" }, H.nomad_tenant { jobName = false, container = "c" },
        H.docker_tenant { container = false }, H.host_tenant { processes = { "python3", "gpu_burn" } } }
      local out = render.ls(H.ledger { H.gpu { tenants = tenants } })
      for _, tenant in ipairs(tenants) do
        contains(gl.who(tenant) .. " (", out)
      end
      local contended = H.with_code(H.run_rules(H.ledger { H.gpu { tenants = tenants } }), "contended")[1]
      assert.matches("[worker/w c bbbbbbbbbbbb python3,gpu_burn]", contended.message, 1, true)
    end)

    it("shows reservations as job/task, a dash when none", function()
      local out = lines(render.ls(node()))
      contains("│ gpu-gpud-restreamer/restreamer ", out[4])
      contains("│ worker/w ", out[7])
      local free = lines(render.ls(H.ledger { H.gpu {} }))[4]
      contains("│ - ", free)
      assert.matches("│ %- +│$", free)
    end)

    it("the state cell carries the time in the state when known", function()
      local out = lines(render.ls(node()))
      contains("│ reserved-idle 1h30m ", out[7])
      contains("│ unaccounted ", out[4])
    end)

    it("ends with which sources were read, failed or off", function()
      local out = lines(render.ls(node()))
      assert.equal("sources: nvidia read · proc read · docker read · podman off · nomad read", out[#out])
    end)

    it("an empty ledger is the header and the column headers", function()
      local out = lines(render.ls(H.ledger({}, {})))
      assert.equal("gpuledger · gpud · 0 GPU(s) · 2026-11-29 08:00:00Z", out[1])
      assert.equal(3, #out)
    end)

    it("control characters in a container name do not reach the output", function()
      local hostile = "evil\27[2J\27]0;pwned\7\nname\r\u{9B}31m"
      local l = H.ledger({ H.gpu { tenants = { H.docker_tenant { container = hostile, image = "x\27[31m" } } } }, { node = "gpud\27[1m" })
      local out = render.ls(l)
      assert.is_nil(out:find("\27", 1, true))
      assert.is_nil(out:find("\7", 1, true))
      assert.is_nil(out:find("\r", 1, true))
      assert.is_nil(out:find("\u{9B}", 1, true))
      assert.equal(4, #lines(out))
      local found = H.run_rules(l)
      local text = render.check { findings = found, counts = findings.counts(found) }
      assert.is_nil(text:find("\27", 1, true))
      assert.is_nil(text:find("\r", 1, true))
      assert.equal(#found + 2, #lines(text))
    end)

    it("invalid UTF-8 in a name becomes U+FFFD", function()
      contains("bad\u{FFFD}name", render.ls(H.ledger { H.gpu { tenants = { H.docker_tenant { container = "bad\xffname" } } } }))
    end)
  end)

  describe("narrow terminals", function()
    it("wrap breaks between words and moves a mark to its own line whole, never cut", function()
      assert.same({ "nomad:train/trainer (4096 MiB)", "?alloc hidden from the token" },
        render.wrap("nomad:train/trainer (4096 MiB) ?alloc hidden from the token", 40))
      assert.same({ "docker:x (1 MiB) !unmanaged" }, render.wrap("docker:x (1 MiB) !unmanaged", 40))
      assert.same({ "a", "?alloc hidden from the token" }, render.wrap("a ?alloc hidden from the token", 10))
      assert.same({ "docker:ve…", "(1 MiB)", "!unmanaged" }, render.wrap("docker:verylongname (1 MiB) !unmanaged", 10))
    end)

    it("abbreviate cuts by characters and says so with …", function()
      assert.equal("NVIDIA L4", render.abbreviate("NVIDIA L4", 9))
      assert.equal("NVIDIA G…", render.abbreviate("NVIDIA GeForce", 9))
      assert.equal("été…", render.abbreviate("étéétéété", 4))
    end)

    it("ls fits output.columns, every line under the header starting with its GPU's index", function()
      local text = require "gpuledger.text"
      local out = lines(render.ls(node(), { columns = 80 }))
      for i, line in ipairs(out) do
        assert.is_true(text.width(line) <= 80, line)
        if i > 2 and not line:find("^sources") then
          assert.matches("^[01] ", line)
        end
      end
      assert.same(lines(render.ls(node())), lines(render.ls(node(), { columns = 500 })))
    end)
  end)

  describe("MIG slices", function()
    -- An H100 in MIG mode: train/trainer holds its 3g.40gb slice, infer/server reserved the 2g.20gb.
    local function mig_node()
      local trainer = H.nomad_tenant { jobName = "train", taskName = "trainer", container = "trainer-1", usedMemoryMiB = 11052 }
      local ledger = H.ledger({ H.gpu { model = "NVIDIA H100 80GB HBM3", memoryUsedMiB = 11125,
        memoryTotalMiB = 81559, state = "held", migDevices = {
          { uuid = "MIG-00000000-0000-0000-0000-000000000000", index = 0, profile = "3g.40gb", memoryUsedMiB = 11091,
            memoryTotalMiB = 40448, state = "held", reservations = json.array { H.reservation { jobId = "train", task = "trainer" } },
            tenants = json.array { trainer } },
          { uuid = "MIG-00000001-0000-0000-0000-000000000001", index = 1, profile = "2g.20gb", memoryUsedMiB = 17,
            memoryTotalMiB = 20096, state = "reserved-idle", reservations = json.array { H.reservation { jobId = "infer", task = "server" } },
            tenants = json.array() },
        } } })
      ledger.entries[1].utilizationPct = nil -- [N/A] under MIG
      return ledger
    end

    it("ls shows a line per slice under its GPU, with its memory, state, reservations and tenants", function()
      local out = render.ls(mig_node())
      assert.matches("\n│ 0      │ NVIDIA H100 80GB HBM3 │ n/a  │ 11125/81559 MiB │", out)
      assert.matches("\n│ 0/mig0 │ MIG 3g.40gb           │      │ 11091/40448 MiB │ +│ +│ held +│ +│ train/trainer +│ nomad:train/trainer %(11052 MiB%) +│", out)
      assert.matches("\n│ 0/mig1 │ MIG 2g.20gb           │      │ 17/20096 MiB +│ +│ +│ reserved%-idle │ +│ infer/server +│ %- +│", out)
    end)

    it("ls says n/a for the utilisation of a GPU in MIG mode, in the table and the narrow layout", function()
      assert.equal("n/a", render.cells.util(nil, mig_node().entries[1]))
      local narrow = render.ls(mig_node(), { columns = 80 })
      assert.matches("\n0       NVIDIA H100 80GB HBM3  n/a   11125/81559 MiB", narrow)
      -- in MIG mode by the driver's word, its slices unread: still n/a; outside MIG, not reported: ?
      local unread = H.gpu { health = { migMode = true } }
      unread.utilizationPct = nil
      assert.equal("n/a", render.cells.util(nil, unread))
      local plain = H.gpu {}
      plain.utilizationPct = nil
      assert.equal("?", render.cells.util(nil, plain))
    end)

    it("ls of slices fits 80 columns, every line starting with its GPU's index", function()
      local text = require "gpuledger.text"
      for i, line in ipairs(lines(render.ls(mig_node(), { columns = 80 }))) do
        assert.is_true(text.width(line) <= 80, line)
        if i > 2 and not line:find("^sources") then
          assert.matches("^0[/ ]", line)
        end
      end
    end)
  end)

  describe("check", function()
    local four = {
      { level = "ERROR", code = "source-unavailable", node = "gpud", message = "docker: refused" },
      { level = "BAD", code = "unmanaged-tenant", node = "gpud", gpu = "gpu0 GPU-fef8089b", message = "container x" },
      { level = "WARN", code = "hot", node = "gpud", gpu = "gpu1 GPU-ac81e44d", message = "hot" },
      { level = "OK", code = "idle", node = "gpud", gpu = "gpu2 GPU-c41b9e27", message = "idle" },
    }

    it("one line per finding: level padded to 5, code, where as wide as the widest, message", function()
      local out = lines(render.check { findings = four, counts = findings.counts(four) })
      assert.equal("ERROR source-unavailable gpud              docker: refused", out[1])
      assert.equal("BAD   unmanaged-tenant   gpu0 GPU-fef8089b container x", out[2])
      assert.equal("WARN  hot                gpu1 GPU-ac81e44d hot", out[3])
      assert.equal("OK    idle               gpu2 GPU-c41b9e27 idle", out[4])
      assert.equal("", out[5])
      assert.equal("4 findings: 1 OK, 1 WARN, 1 BAD, 1 ERROR", out[6])
    end)

    it("leads each line with a coloured glyph when output.glyphs says so (a terminal, no NO_COLOR)", function()
      local out = lines(render.check({ findings = four, counts = findings.counts(four) }, { glyphs = true }))
      assert.equal("⚫ ERROR source-unavailable gpud              docker: refused", out[1])
      assert.equal("🔴 BAD   unmanaged-tenant   gpu0 GPU-fef8089b container x", out[2])
      assert.equal("🟡 WARN  hot                gpu1 GPU-ac81e44d hot", out[3])
      assert.equal("🟢 OK    idle               gpu2 GPU-c41b9e27 idle", out[4])
    end)

    it("aligns the where column to the longest node name, counted in characters", function()
      local text = require "gpuledger.text"
      local found = {}
      for i, node_name in ipairs { "gpu-node", "gpu-nœud", "gpu—été", "a-much-longer-node-name-than-a-gpu-label" } do
        found[i] = { level = "ERROR", code = "source-unavailable", node = node_name, message = "MSG" }
      end
      found[#found + 1] = { level = "BAD", code = "hot", node = "x", gpu = "gpu0 GPU-fef8089b", message = "MSG" }
      local columns = {}
      for i, line in ipairs(lines(render.check { findings = found, counts = findings.counts(found) })) do
        if i <= #found then
          columns[text.width(line:sub(1, line:find("MSG", 1, true) - 1))] = true
        end
      end
      assert.same({ [25 + 41] = true }, columns)
    end)

    it("on a terminal (output.columns) wraps a long message under its column, two in, each line led by level and where", function()
      local long = {
        { level = "BAD", code = "hot", node = "gpud", gpu = "gpu0 GPU-fef8089b",
          message = "thermal slowdown active at 84 °C, 402 W — the card is clocking itself down; UUID-0123456789abcdef0123456789abcdef0123" },
      }
      local report = { findings = long, counts = findings.counts(long) }
      assert.same({
        "BAD   hot                gpu0 GPU-fef8089b thermal slowdown active at 84 °C, 402 W —",
        "BAD                      gpu0 GPU-fef8089b   the card is clocking itself down;",
        "BAD                      gpu0 GPU-fef8089b   UUID-0123456789abcdef0123456789abcdef01",
        "BAD                      gpu0 GPU-fef8089b   23",
        "",
        "1 findings: 0 OK, 0 WARN, 1 BAD, 0 ERROR",
      }, lines(render.check(report, { columns = 84 })))
      -- narrower: the message would get fewer than 40 columns, so the GPU is named by its label alone
      assert.same({
        "BAD   hot                gpu0 thermal slowdown active at 84",
        "BAD                      gpu0   °C, 402 W — the card is",
        "BAD                      gpu0   clocking itself down;",
        "BAD                      gpu0   UUID-0123456789abcdef0123456",
        "BAD                      gpu0   789abcdef0123",
      }, { table.unpack(lines(render.check(report, { columns = 60 })), 1, 5) })
      assert.equal("BAD   hot                gpu0 GPU-fef8089b " .. long[1].message, lines(render.check(report, {}))[1])
    end)

    it("no findings is the blank line and the counts line", function()
      assert.equal("\n0 findings: 0 OK, 0 WARN, 0 BAD, 0 ERROR\n", render.check { findings = {}, counts = findings.counts({}) })
    end)

    it("counts the end-to-end node: 4 findings, 2 WARN, 2 BAD", function()
      local found = H.run_rules(node(), { idle = false })
      local out = lines(render.check { findings = found, counts = findings.counts(found) })
      assert.equal("4 findings: 0 OK, 2 WARN, 2 BAD, 0 ERROR", out[#out])
    end)
  end)
end)

describe("render.table: fleet ls", function()
  it("draws fleet ls: header, nodes worst first with their verdict, totals last, errors, jobs", function()
    local text = render.fleet_ls((H.fleet_judged()))
    assert.truthy(text:find("^gpuledger fleet · 3 node%(s%), 1 unreachable · 4 GPU%(s%)\n"))
    assert.truthy(text:find("│ node  │ worst │ bad │ error │ gpus │", 1, true))
    assert.truthy(text:find("\n│ gpuz  │ ERROR │ 0   │ 1     │ -    │ -    │ -             │ -           │ -    │ -              │\n"
      .. "│ gpue  │ BAD   │ 1   │ 0     │ 2    │ 0    │ 0             │ 1           │ 1    │ 2048/46068 MiB │\n"
      .. "│ gpud  │ WARN  │ 0   │ 0     │ 2    │ 1    │ 1             │ 0           │ 0    │ 1024/46068 MiB │\n"
      .. "│ fleet │ ERROR │ 1   │ 1     │ 4    │ 1    │ 1             │ 1           │ 1    │ 3072/92136 MiB │\n"
      .. "\ngpuz: unreachable: Connection refused\n\n│ job ", 1, true))
    assert.truthy(text:find("│ default/restreamer │ 1        │ 1    │", 1, true))
    assert.truthy(text:find("│ video/worker       │ 1        │ 0    │", 1, true))
  end)

  it("on a terminal narrower than the table, the layout of ls: states under each node, every line led by its name", function()
    local summary = H.fleet_judged()
    local out = render.fleet_ls(summary, { columns = 60 })
    assert.truthy(out:find("\nnode   worst  bad  error  gpus  memory\n"
      .. "gpuz   ERROR  0    1      -     -\n"
      .. "gpue   BAD    1    0      2     2048/46068 MiB\n"
      .. "gpue     states  1 unaccounted · 1 free\n"
      .. "gpud   WARN   0    0      2     1024/46068 MiB\n"
      .. "gpud     states  1 held · 1 reserved-idle\n"
      .. "fleet  ERROR  1    1      4     3072/92136 MiB\n"
      .. "fleet    states  1 held · 1 reserved-idle · 1 unaccounted ·\n"
      .. "fleet            1 free\n", 1, true), out)
    assert.equal(render.fleet_ls(summary), render.fleet_ls(summary, { columns = 200 }))
  end)

  -- The summary of gpum (H.mig_node_row: MIG slices) and gpup (one free GPU, no slices).
  local function mig_summary()
    local plain = H.wire_ledger(H.ledger({ H.gpu { index = 0 } }, { node = "gpup" }))
    local summary = fleet.summarise { H.mig_node_row(), fleet.node_row({ node = "gpup", url = "http://gpup:9877" }, plain) }
    judge.fleet_verdicts(summary, {})
    return summary
  end

  it("counts a node's MIG slices in parentheses beside its GPUs, a node without slices as before, and says so", function()
    local out = render.fleet_ls(mig_summary())
    assert.truthy(out:find("│ gpus  │ held  │ reserved-idle │ unaccounted │ free  │", 1, true), out)
    assert.truthy(out:find("│ 2 (2) │ 1 (1) │ 0 (0)         │ 0 (0)       │ 1 (1) │", 1, true), out)
    assert.truthy(out:find("│ 1     │ 0     │ 0             │ 0           │ 1     │", 1, true), out)
    assert.truthy(out:find("\n(n): MIG slices, beside the GPUs; a GPU in MIG mode counts once, in its slices' state\n", 1, true), out)
    assert.falsy(render.fleet_ls((H.fleet_judged())):find("(n)", 1, true))
    assert.truthy(out:find("│ video/worker │ 1        │ 1    │", 1, true), out) -- the job of the held slice
  end)

  it("names the MIG slices per state on a node's states line on a narrow terminal", function()
    local out = render.fleet_ls(mig_summary(), { columns = 60 })
    assert.truthy(out:find("\ngpum     states  1 held · 1 free ·\ngpum             MIG slices: 1 held, 1 free\n", 1, true), out)
    assert.truthy(out:find("\ngpup     states  1 free\n", 1, true), out)
  end)
end)

describe("render.table: fleet check --summary", function()
  local function groups_of(nodes)
    local found = {}
    for i, name in ipairs(nodes) do
      found[i] = { level = "ERROR", code = "source-unavailable", node = name }
    end
    found[#found + 1] = { level = "BAD", code = "xid-fatal", node = "gpu-a", index = 0, uuid = "GPU-1", gpu = "gpu0 GPU-1" }
    return fleet.group_findings(found), found, { OK = 0, WARN = 0, BAD = 1, ERROR = #nodes }
  end

  it("prints one line per group, worst first, naming the nodes, then the counts", function()
    local groups, found, counts = groups_of { "gpu-z", "gpu-y" }
    assert.equal("ERROR source-unavailable 2 finding(s), 2 node(s): gpu-y · gpu-z\n"
      .. "BAD   xid-fatal          1 finding(s), 1 GPU(s) on 1 node(s): gpu-a\n"
      .. "\n3 findings: 0 OK, 0 WARN, 1 BAD, 2 ERROR\n", render.fleet_summary(groups, found, counts, {}))
  end)

  it("names eight nodes and how many more; on a narrow terminal the names wrap under the code", function()
    local nodes = {}
    for i = 1, 12 do
      nodes[i] = string.format("gpu-node-%02d", i)
    end
    local groups, found, counts = groups_of(nodes)
    local piped = render.fleet_summary(groups, found, counts, {})
    assert.truthy(piped:find("12 node(s): gpu-node-01 · gpu-node-02 · gpu-node-03 · gpu-node-04 · gpu-node-05 · "
      .. "gpu-node-06 · gpu-node-07 · gpu-node-08 · +4 more\n", 1, true))
    local narrow = render.fleet_summary(groups, found, counts, { columns = 80 })
    for line in narrow:gmatch("[^\n]+") do
      assert.truthy(text_width(line) <= 80, line)
    end
    assert.truthy(narrow:find("^ERROR source%-unavailable 12 finding%(s%), 12 node%(s%):\n      gpu%-node%-01 · "))
    assert.truthy(narrow:find("\n      gpu-node-", 1, true))
  end)
end)

-- A report as report.builder gives it: two jobs, most idle first, two nodes,
-- two tenants without a reservation, most first, a job on a MIG slice.
local REPORT = {
  schema = 1, since = "7d", at = "2026-11-29T08:00:00Z",
  jobs = {
    { namespace = "video", job = "worker", reservedHours = 10, heldHours = 2, idleHours = 8, idleShare = 0.8 },
    { namespace = "video", job = "restreamer", reservedHours = 10, heldHours = 10, idleHours = 0, idleShare = 0 },
  },
  nodes = {
    { node = "gpud", hours = { held = 12, ["reserved-idle"] = 8, unaccounted = 0, free = 0 } },
    { node = "gpue", hours = { held = 0, ["reserved-idle"] = 0, unaccounted = 0, free = 4.25 } },
  },
  unreserved = {
    { node = "gpud", kind = "docker", use = "unmanaged", namespace = "", job = "", task = "", container = "ffmpeg-manual",
      tenant = "ffmpeg-manual", hours = 6 },
    { node = "gpue", kind = "nomad", use = "unreserved", namespace = "video", job = "encode", task = "enc", container = "",
      tenant = "encode/enc", hours = 1.5 },
  },
  slices = {
    { node = "gpuh", gpu = "0", uuid = "GPU-h", migUuid = "MIG-5e9b4a9c-0000-4000-8000-000000000001", profile = "3g.40gb",
      namespace = "train", job = "trainer", reservedHours = 3, heldHours = 2.5, idleHours = 0.5, idleShare = 1 / 6 },
  },
}

describe("render.table: report", function()
  it("the header with totals, the job table, the node table (%.1f, %.0f%%)", function()
    local text = H.written(render.write_report, REPORT)
    contains("gpuledger report · the last 7d · 2 job(s), 20.0 GPU-hours reserved, 8.0 idle (40%)"
      .. " · 7.5 GPU-hours used without a reservation\n", text)
    contains("│ video/worker     │ 10.0           │ 2.0        │ 8.0        │ 80%  │", text)
    contains("GPU-hours per node and state", text)
    contains("│ gpue │ 0.0  │ 0.0           │ 0.0         │ 4.2  │", text)
    assert.truthy(text:find("worker", 1, true) < text:find("restreamer", 1, true))
  end)

  it("the third table: GPU-hours used without a reservation, by tenant, most first", function()
    local text = H.written(render.write_report, REPORT)
    contains("\nGPU-hours used without a reservation\n"
      .. "│ tenant        │ kind   │ verdict    │ node │ GPU-h │\n"
      .. "├───────────────┼────────┼────────────┼──────┼───────┤\n"
      .. "│ ffmpeg-manual │ docker │ unmanaged  │ gpud │ 6.0   │\n"
      .. "│ encode/enc    │ nomad  │ unreserved │ gpue │ 1.5   │\n", text)
    local reserved_only = H.written(render.write_report, {
      schema = 1, since = "7d", at = "", jobs = REPORT.jobs, nodes = {}, unreserved = {}, slices = {},
    })
    assert.falsy(reserved_only:find("without a reservation", 1, true))
    assert.falsy(reserved_only:find("MIG slice", 1, true))
  end)

  it("the jobs per MIG slice, last, each slice named by its GPU, uuid and profile", function()
    local text = H.written(render.write_report, REPORT)
    contains("\nGPU-hours per job and MIG slice (a slice counts its share of its GPU's compute slices)\n"
      .. "│ job           │ node │ slice                     │ reserved GPU-h │ held GPU-h │ idle GPU-h │\n"
      .. "├───────────────┼──────┼───────────────────────────┼────────────────┼────────────┼────────────┤\n"
      .. "│ train/trainer │ gpuh │ gpu0 MIG-5e9b4a9c 3g.40gb │ 3.0            │ 2.5        │ 0.5        │\n", text)
    assert.truthy(text:find("without a reservation\n", 1, true) < text:find("MIG slice", 1, true))
  end)

  it("hours below 0.1 keep two significant digits, so a short window is not all 0.0", function()
    local text = H.written(render.write_report, {
      schema = 1, since = "10m", at = "",
      jobs = { { namespace = "video", job = "worker", reservedHours = 0.0042, heldHours = 0.05, idleHours = 0, idleShare = 0 } },
      nodes = { { node = "gpud", hours = { held = 0.00000001, ["reserved-idle"] = 0.123, unaccounted = 0, free = 0 } } },
      unreserved = {}, slices = {},
    })
    contains("│ video/worker │ 0.0042         │ 0.050      │ 0.0        │ 0%   │", text)
    contains("│ gpud │ <0.000001 │ 0.1           │ 0.0         │ 0.0  │", text)
  end)

  it("an empty report: one line saying why", function()
    local text = H.written(render.write_report, { schema = 1, since = "1h", at = "", jobs = {}, nodes = {}, unreserved = {}, slices = {} })
    assert.equal(1, select(2, text:gsub("\n", "")))
    contains("no gpuledger counters in Prometheus over the last 1h", text)
    contains("increase() needs two scrapes", text)
  end)
end)
