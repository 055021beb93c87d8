-- The node page and its stylesheet (docs/contract.md#http).
local H = require "helper"
local json = require "gpuledger.json"
local fleet = require "gpuledger.fleet"
local html = require "gpuledger.render.html"
local judge = require "gpuledger.judge"

local HOSTILE = '<script>alert("x")</script>'

local function page(ledger, interval, given)
  local _, _, report = H.run_rules(ledger, given)
  return html.node(report, { interval = interval or 15, version = "dev" })
end

local function node()
  return H.ledger {
    H.gpu { index = 0, utilizationPct = 72, memoryUsedMiB = 2048, memoryTotalMiB = 8192, temperatureC = 66,
      tenants = { H.docker_tenant { container = HOSTILE } } },
    H.gpu { index = 1, reservations = { H.reservation { deviceIds = { H.UUID1 } } }, stateSince = H.ago(5400) },
  }
end

describe("render.html", function()
  it("shows the GPUs with util, memory, temperature, state, since and reservation", function()
    local text = page(node())
    assert.truthy(text:find('<meta http-equiv="refresh" content="15">', 1, true))
    assert.truthy(text:find('<link rel="stylesheet" href="style.css">', 1, true))
    assert.truthy(text:find("72%", 1, true))
    assert.truthy(text:find("2048/8192 MiB", 1, true))
    assert.truthy(text:find("66 °C", 1, true))
    assert.truthy(text:find('<span class="state reserved-idle">reserved-idle</span> <span class="since">1h30m</span>', 1, true))
    assert.truthy(text:find("worker/w", 1, true))
    assert.truthy(text:find('<span class="level BAD">BAD</span>', 1, true))
    assert.truthy(text:find("<title>gpuledger · gpud</title>", 1, true))
    assert.truthy(text:find("2 GPU(s)", 1, true))
    assert.truthy(text:find("read 2026-11-29 08:00:00Z", 1, true))
  end)

  it("says the driver's and CUDA's versions and Nomad's node in the header", function()
    local ledger = node()
    ledger.driverVersion, ledger.cudaVersion = "590.48.01", "13.1"
    ledger.nomadNode = { id = "n", name = "gpu-<b>", pool = "default", datacenter = "dc1" }
    assert.truthy(page(ledger):find('<p class="meta context">driver 590.48.01 · CUDA 13.1 · nomad node gpu-&lt;b&gt; · '
      .. "nomad dc1 · pool default</p>", 1, true))
    assert.falsy(page(node()):find('class="meta context"', 1, true))
  end)

  it("with --nomad-ui-url, links jobs, allocations and the node to Nomad's UI; without, shows the command", function()
    local ledger = node()
    ledger.nomadNode = { id = "f7476465", name = "gpud" }
    ledger.entries[1].tenants[1] = H.nomad_tenant {}
    local _, _, report = H.run_rules(ledger)
    local text = html.node(report, { interval = 15, nomad_ui_url = "https://nomad.test" })
    assert.truthy(text:find('<a href="https://nomad.test/ui/jobs/worker@video">worker/w</a> '
      .. '<a class="alloc" href="https://nomad.test/ui/allocations/4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e">alloc 4d1e6a9b</a>', 1, true))
    assert.truthy(text:find('nomad: <a href="https://nomad.test/ui/allocations/4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e">worker/worker</a>', 1, true))
    assert.truthy(text:find('<a class="nomad" href="https://nomad.test/ui/clients/f7476465">Nomad node</a>', 1, true))
    local plain = html.node(report, { interval = 15 })
    assert.truthy(plain:find('worker/w <code class="command">nomad alloc status -namespace=video 4d1e6a9b-2c3f-4b8a-9e7d-1f2a3b4c5d6e</code>', 1, true))
    assert.falsy(plain:find("/ui/", 1, true))
  end)

  it("escapes each & < > \" ' of a text, in plain ASCII or not, as Go's html/template does", function()
    assert.equal("a&amp;b&lt;c&gt;d&#34;e&#39;f &amp;&amp;amp; &lt;&lt;", html.escape("a&b<c>d\"e'f &&amp; <<"))
    assert.equal("it&#39;s — &lt;b&gt; \u{FFFD}", html.escape("it's — <b> \27"))
    assert.equal("plain text, 12 °C", html.escape("plain text, 12 °C"))
  end)

  it("escapes a hostile container name and has no script and no inline style", function()
    local text = page(node())
    assert.truthy(text:find("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", 1, true))
    assert.falsy(text:find("<script", 1, true))
    assert.falsy(text:find("style=", 1, true))
    assert.falsy(text:find("<style", 1, true))
    assert.falsy(text:find("onclick", 1, true))
  end)

  it("writes the same page at the next refresh, and nothing of a tenant that has left", function()
    local first = page(node())
    assert.equal(first, page(node()))
    local other = page(H.ledger { H.gpu { index = 0, tenants = { H.docker_tenant { container = "other" } } } })
    assert.truthy(other:find("other", 1, true))
    assert.falsy(other:find("alert(", 1, true))
  end)

  it("with --grafana-url, links the node and each GPU to the dashboard; without, no link", function()
    local _, _, report = H.run_rules(node())
    local text = html.node(report, { interval = 15, grafana_url = "https://grafana.test/g" })
    assert.truthy(text:find('<h1><a href="https://grafana.test/g/d/gpuledger/gpuledger?var-node=gpud">gpud</a>', 1, true))
    assert.truthy(text:find('<a href="https://grafana.test/g/d/gpuledger/gpuledger?var-node=gpud&amp;var-gpu=1">1</a>', 1, true))
    assert.falsy(page(node()):find("<a href=\"http", 1, true))
  end)

  it("a hostile node name in a dashboard link is encoded in the URL and escaped in the text", function()
    local l = H.ledger({}, { node = 'gpuf"><b>x' })
    local _, _, report = H.run_rules(l)
    local text = html.node(report, { grafana_url = "https://grafana.test" })
    assert.truthy(text:find('href="https://grafana.test/d/gpuledger/gpuledger?var-node=gpuf%22%3E%3Cb%3Ex">gpuf&#34;&gt;&lt;b&gt;x</a>', 1, true))
  end)

  it("escapes the node name, messages and errors too", function()
    local l = H.ledger({}, { node = 'gpuf"><b>x', errors = { "docker: <b>refused</b> & 'gone'" } })
    local text = page(l)
    assert.truthy(text:find("gpuf&#34;&gt;&lt;b&gt;x", 1, true))
    assert.falsy(text:find("<b>", 1, true))
    assert.truthy(text:find("docker: &lt;b&gt;refused&lt;/b&gt; &amp; &#39;gone&#39;", 1, true))
  end)

  it("lists the sources that failed with an ERROR badge, and says GPU data is missing", function()
    local l = H.ledger({}, { errors = { "nvidia-smi query-gpu: nvidia-smi: exit status 9" } })
    l.sources = { nvidia = "failed" }
    local text = page(l)
    assert.truthy(text:find("Sources that could not be read", 1, true))
    assert.truthy(text:find('<li><span class="level ERROR">ERROR</span> nvidia-smi query-gpu', 1, true))
    assert.truthy(text:find("No GPU data from this read", 1, true))
    assert.truthy(text:find("not the last good read", 1, true))
  end)

  it("marks tenants outside Nomad and Nomad tasks that were not reserved", function()
    local l = H.ledger { H.gpu { index = 0, tenants = { H.nomad_tenant { reserved = false }, H.host_tenant() } } }
    local text = page(l)
    assert.truthy(text:find("nomad: worker/worker, 1024 MiB <span class=\"mark\">· not reserved</span>", 1, true))
    assert.truthy(text:find("host: python3, 48 MiB <span class=\"mark\">· outside Nomad</span>", 1, true))
  end)

  it("marks a tenant that could not be identified as such, not as outside Nomad", function()
    local unknown = H.docker_tenant { container = false, image = false, containerId = "eeeeeeeeeeee", unidentified = true }
    local text = page(H.ledger { H.gpu { index = 0, tenants = { unknown } } })
    assert.truthy(text:find("docker: eeeeeeeeeeee, 2048 MiB <span class=\"mark\">· could not be identified</span>", 1, true))
  end)

  it("lists findings worst first, and none when there are none", function()
    local text = page(node())
    local bad = text:find("unmanaged-tenant", 1, true)
    local warn = text:find("reserved-idle</td>", 1, true)
    assert.truthy(bad and warn and bad < warn)
    assert.truthy(page(H.ledger {}, 15, { idle = false }):find('<p class="none">none</p>', 1, true))
  end)

  it("highlights the GPU rows with a BAD or ERROR finding, and links each finding to its GPU's row", function()
    local text = page(node())
    assert.truthy(text:find(string.format('<tr id="gpu-%s" class="gpu alarm BAD">', H.UUID0), 1, true))
    assert.truthy(text:find(string.format('<tr id="gpu-%s" class="gpu">', H.UUID1), 1, true)) -- WARN only
    assert.truthy(text:find(string.format('<td data-label="where"><a href="#gpu-%s">gpu0 ', H.UUID0), 1, true))
    assert.truthy(text:find(string.format('<td data-label="where"><a href="#gpu-%s">gpu1 ', H.UUID1), 1, true))
    local l = H.ledger({ H.gpu { index = 0 } }, { errors = { "docker: refused" } })
    local failed = page(l)
    assert.truthy(failed:find('<td data-label="where">gpud</td>', 1, true)) -- a node finding: no link
  end)

  it("keys each GPU's row by its uuid, or its bus id without one: two GPUs nvidia-smi lost (index -1) stay apart", function()
    local function lost(bus)
      return H.gpu { index = -1, uuid = "", busId = bus, missing = true, nomadDevice = { healthy = true, healthDescription = "" } }
    end
    local _, _, report = H.run_rules(H.ledger { H.gpu { index = 0 }, lost("00000000:3B:00.0"), lost("00000000:5E:00.0") })
    local on_5e = {}
    for _, finding in ipairs(report.findings) do
      if finding.busId == "00000000:5E:00.0" then
        on_5e[#on_5e + 1] = finding
      end
    end
    assert.equal("gpu-lost", on_5e[1].code)
    report.findings, report.worst = on_5e, "BAD" -- only the second lost GPU has a finding
    local text = html.node(report, { interval = 15, version = "dev", grafana_url = "https://grafana.test" })
    assert.truthy(text:find(string.format('<tr id="gpu-%s" class="gpu">', H.UUID0), 1, true))
    -- the dashboard's gpu variable is the metrics' label: "?" for a lost GPU
    assert.truthy(text:find('href="https://grafana.test/d/gpuledger/gpuledger?var-node=gpud&amp;var-gpu=%3F"', 1, true))
    assert.truthy(text:find('<tr id="gpu-00000000:3B:00.0" class="gpu">', 1, true))
    assert.truthy(text:find('<tr id="gpu-00000000:5E:00.0" class="gpu alarm BAD">', 1, true))
    assert.truthy(text:find('<td data-label="where"><a href="#gpu-00000000:5E:00.0">gpu? 00000000:5E:00.0</a>', 1, true))
  end)

  it("draws utilisation and memory as bars, and counts the findings per level in the header", function()
    local text = page(node())
    assert.truthy(text:find('<meter class="util" min="0" max="100" value="72"></meter> 72%', 1, true))
    assert.truthy(text:find('<meter class="memory" min="0" max="8192" low="6963" high="7782" optimum="0" value="2048"></meter>'
      .. ' 2048/8192 MiB', 1, true))
    assert.truthy(text:find('<p class="counts"><span class="count"><span class="level ERROR">ERROR</span> 0</span>', 1, true))
    assert.truthy(text:find('<span class="count"><span class="level BAD">BAD</span> 1</span>', 1, true))
  end)

  it("marks the memory bar amber and red at the policy's memory_high_ratio and memory_full_ratio", function()
    local function meter(policy)
      local ledger = H.ledger { H.gpu { index = 0, memoryUsedMiB = 9700, memoryTotalMiB = 10000 } }
      local _, _, report = H.run_rules(ledger)
      report.policy = policy or report.policy
      return html.node(report, { interval = 15 }):match('<meter class="memory"[^>]*>')
    end
    assert.equal('<meter class="memory" min="0" max="10000" low="8500" high="9500" optimum="0" value="9700">', meter())
    assert.equal('<meter class="memory" min="0" max="10000" low="8000" high="9000" optimum="0" value="9700">',
      meter { memory_high_ratio = 0.8, memory_full_ratio = 0.9 })
    assert.equal('<meter class="memory" min="0" max="10000" low="7000" high="7000" optimum="0" value="9700">',
      meter { memory_high_ratio = 0.9, memory_full_ratio = 0.7 }, "amber no higher than red")
    assert.equal('<meter class="memory" min="0" max="10000" value="9700">', meter { memory_full_ratio = "full" })
  end)

  it("shows a GPU's health codes one per line, and under them its other findings, one per line", function()
    local ledger = H.ledger { H.gpu { index = 0, memoryUsedMiB = 9700, memoryTotalMiB = 10000,
      tenants = { H.docker_tenant { container = "a" }, H.docker_tenant { container = "b" } } } }
    ledger.entries[1].healthVerdict = nil
    local example = assert(io.open("rules/examples/memory_nearly_full.lua")):read("a")
    local _, _, report = H.run_rules(ledger, nil, H.site_rules { ["memory_nearly_full.lua"] = example })
    local row = html.node(report, { interval = 15 }):match('<tr id="gpu%-' .. H.UUID0:gsub("%-", "%%-") .. '".-</tr>')
    local cell = row:match('<td data%-label="health">(.-)</td>')
    assert.truthy(cell:find('^<ul class="codes"><li><span class="none">%-</span></li>'), cell)
    assert.truthy(cell:find('<li><span class="level BAD">BAD</span> unmanaged-tenant ×2</li>', 1, true), cell)
    assert.truthy(cell:find('<li><span class="level WARN">WARN</span> contended</li>', 1, true), cell)
    assert.truthy(cell:find('<li><span class="level WARN">WARN</span> memory-nearly-full</li>', 1, true), cell)
    local health = { index = 0, uuid = H.UUID0, healthVerdict = { level = "BAD", codes = { "xid-fatal", "row-remap-pending" } } }
    local lone = html.node({ ledger = H.ledger { health }, findings = {}, worst = "OK", counts = {} }, { interval = 15 })
    assert.truthy(lone:find('<td data-label="health"><ul class="codes"><li><span class="level BAD">BAD</span></li><li>xid-fatal</li>'
      .. '<li>row-remap-pending</li></ul></td>', 1, true))
  end)

  it("refreshes at least every second", function()
    assert.truthy(page(H.ledger {}, 0.5):find('content="1"', 1, true))
    assert.truthy(page(H.ledger {}, 90):find('content="90"', 1, true))
  end)

  it("has a stylesheet with a dark scheme and level badges", function()
    local f = assert(io.open("lua/gpuledger/render/style.css"))
    local css = f:read("a")
    f:close()
    assert.truthy(css:find("prefers-color-scheme: dark", 1, true))
    assert.truthy(css:find(".level.BAD", 1, true))
    assert.truthy(css:find("tr.alarm.ERROR", 1, true))
    assert.truthy(css:find("@media (max-width: 72rem)", 1, true))
    assert.equal("lua/gpuledger/render/style.css", html.STYLESHEET)
  end)
end)

describe("render.html: the fleet page", function()
  it("draws the fleet page: nodes linked, the unreachable across the columns, jobs, findings, escaped", function()
    local summary, found = H.fleet_judged()
    local hostile = fleet.node_row({ node = 'gpuf"><b>x', url = "http://10.0.0.6:9877" },
      H.wire_ledger(H.ledger({ H.gpu { index = 0 } }, { node = 'gpuf"><b>x', schema = 0 })))
    summary = fleet.summarise { summary.nodes[1], summary.nodes[2], summary.nodes[3], hostile }
    judge.fleet_verdicts(summary, {})
    local text = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30, version = "dev" })
    assert.truthy(text:find('<meta http-equiv="refresh" content="30">', 1, true))
    assert.truthy(text:find("<title>gpuledger · fleet</title>", 1, true))
    assert.truthy(text:find('<a href="http://10.0.0.4:9877/">gpud</a>', 1, true))
    assert.truthy(text:find("4 node(s), 1 unreachable", 1, true))
    assert.truthy(text:find('<td colspan="6" data-label="error"><span class="level ERROR">unreachable</span> Connection refused</td>', 1, true))
    assert.truthy(text:find("gpuf&#34;&gt;&lt;b&gt;x</a> <span class=\"mark\">schema 0</span>", 1, true))
    assert.falsy(text:find('gpuf"><b>', 1, true))
    assert.truthy(text:find("video/worker", 1, true))
    assert.truthy(text:find("gpud gpu1 GPU-ac81e44d", 1, true))
    assert.falsy(text:find("<script", 1, true))
    assert.falsy(text:find("style=", 1, true))
  end)

  it("counts a node's MIG slices beside its GPUs, marked, and says so under the table", function()
    local summary = fleet.summarise { H.mig_node_row() }
    judge.fleet_verdicts(summary, {})
    local text = html.fleet(summary, {}, "OK", { at = H.AT, interval = 30 })
    for _, cell in ipairs { '<td class="num" data-label="gpus">2 <span class="mark" title="MIG slices">(2)</span></td>',
      '<td class="num" data-label="held">1 <span class="mark" title="MIG slices">(1)</span></td>',
      '<td class="num" data-label="reserved-idle">0 <span class="mark" title="MIG slices">(0)</span></td>',
      '<td class="num" data-label="free">1 <span class="mark" title="MIG slices">(1)</span></td>' } do
      local _, times = text:gsub(cell:gsub("%p", "%%%0"), "")
      assert.equal(2, times, cell) -- the node's row and the fleet's
    end
    assert.truthy(text:find("(n): MIG slices, beside the GPUs", 1, true))
    local plain = html.fleet(H.fleet_judged(), {}, "ERROR", { at = H.AT, interval = 30 })
    assert.falsy(plain:find("MIG slices", 1, true))
  end)

  it("labels every cell of the node and job tables, for the cards of a narrow screen", function()
    local summary, found = H.fleet_judged()
    local text = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30 })
    assert.truthy(text:find('<tr><td data-label="node">fleet</td><td data-label="worst"><span class="level ERROR">ERROR</span></td>'
      .. '<td class="num" data-label="bad">1</td><td class="num" data-label="error">1</td><td class="num" data-label="gpus">4</td>'
      .. '<td class="num" data-label="held">1</td><td class="num" data-label="reserved-idle">1</td>'
      .. '<td class="num" data-label="unaccounted">1</td><td class="num" data-label="free">1</td>'
      .. '<td class="num" data-label="memory">3072/92136 MiB</td></tr>', 1, true))
    assert.truthy(text:find('<tr><td data-label="job">video/worker</td><td class="num" data-label="reserved">1</td>'
      .. '<td class="num" data-label="held">0</td></tr>', 1, true))
    local tables = text:match('<table class="nodes">.-<h2>Findings</h2>')
    for cell in tables:gmatch("<td[^>]*>") do
      assert.truthy(cell:find("data-label=", 1, true), cell .. " has no data-label")
    end
  end)

  it("groups the findings by level and code, worst first, each opening on its findings linked to their node's page", function()
    local summary, found = H.fleet_judged()
    local text = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30 })
    local groups = {}
    for class, code, reach in text:gmatch('<details class="group (%u+)"><summary>.-<span class="code">([^<]*)</span> '
      .. '<span class="reach">([^<]*)</span>') do
      groups[#groups + 1] = class .. " " .. code .. " " .. reach
    end
    assert.same({ "ERROR source-unavailable 1 finding(s), 1 node(s):", "BAD unmanaged-tenant 1 finding(s), 1 GPU(s) on 1 node(s):",
      "WARN reserved-idle 1 finding(s), 1 GPU(s) on 1 node(s):", "OK held 1 finding(s), 1 GPU(s) on 1 node(s):",
      "OK idle 1 finding(s), 1 GPU(s) on 1 node(s):" }, groups)
    assert.truthy(text:find('<span class="nodes">gpue</span></summary>', 1, true))
    assert.truthy(text:find('<td data-label="where"><a href="http://10.0.0.5:9877/#gpu-' .. H.UUID0 .. '">gpue gpu0 GPU-', 1, true))
    assert.truthy(text:find('<td data-label="where">gpuz</td>', 1, true), "an unreachable node has no page to link to")
    assert.falsy(text:find('<table class="findings">', 1, true), "no flat list")
  end)

  it("lists at most GROUP_FINDINGS_SHOWN findings of a group, then how many more and where they all are", function()
    local summary, found = H.fleet_judged()
    local idle
    for _, finding in ipairs(found) do
      idle = finding.code == "idle" and finding or idle
    end
    local many = {}
    for i = 1, html.GROUP_FINDINGS_SHOWN + 150 do
      local copy = {}
      for k, v in pairs(idle) do
        copy[k] = v
      end
      copy.node = string.format("gpu%04d", i)
      many[i] = copy
    end
    local text = html.fleet(summary, fleet.group_findings(many), "OK", { at = H.AT, interval = 30 })
    local _, rows = text:gsub('<tr class="finding OK">', "")
    assert.equal(html.GROUP_FINDINGS_SHOWN, rows)
    assert.truthy(text:find('<span class="reach">' .. (html.GROUP_FINDINGS_SHOWN + 150) .. " finding(s), ", 1, true),
      "the group still counts every finding")
    assert.truthy(text:find('<td data-label="where">gpu' .. string.format("%04d", html.GROUP_FINDINGS_SHOWN) .. " gpu", 1, true))
    assert.falsy(text:find('<td data-label="where">gpu' .. string.format("%04d", html.GROUP_FINDINGS_SHOWN + 1) .. " gpu", 1, true))
    assert.truthy(text:find('<tr class="more"><td colspan="2">150 more, not listed here: each node\'s page, '
      .. '<a href="fleet">/fleet</a> and <code>gpuledger fleet check</code> list every one</td></tr>\n</tbody></table>', 1, true))
    local few = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30 })
    assert.falsy(few:find('class="more"', 1, true), "a group within the bound is listed whole")
  end)

  it("with --grafana-url, links each node to the dashboard; without, no such link", function()
    local summary, found = H.fleet_judged()
    local text = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30, grafana_url = "https://grafana.test" })
    assert.truthy(text:find('<a href="http://10.0.0.4:9877/">gpud</a> '
      .. '<a class="dashboard" href="https://grafana.test/d/gpuledger/gpuledger?var-node=gpud">dashboard</a>', 1, true))
    local plain = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30 })
    assert.falsy(plain:find('class="dashboard"', 1, true))
    summary.nodes[2].nomadNodeId = "f7476465"
    local nomad = html.fleet(summary, fleet.group_findings(found), "ERROR", { at = H.AT, interval = 30, nomad_ui_url = "https://nomad.test" })
    assert.truthy(nomad:find('<a class="nomad" href="https://nomad.test/ui/clients/f7476465">Nomad</a>', 1, true))
    assert.truthy(nomad:find('<td data-label="job"><a href="https://nomad.test/ui/jobs/worker@video">video/worker</a></td>', 1, true))
    assert.falsy(plain:find("/ui/", 1, true))
  end)
end)

describe("render.html of a GPU in MIG mode", function()
  it("shows each slice as a sub-row under its GPU, and the GPU's utilisation as not measured under MIG", function()
    local trainer = H.nomad_tenant { jobName = "train", taskName = "trainer", container = "trainer-1", usedMemoryMiB = 11052 }
    local ledger = H.ledger { H.gpu { state = "held", migDevices = {
      { uuid = "MIG-00000000-0000-0000-0000-000000000000", index = 0, profile = "3g.40gb", memoryUsedMiB = 11091,
        memoryTotalMiB = 40448, state = "held", reservations = json.array { H.reservation { jobId = "train", task = "trainer" } },
        tenants = json.array { trainer } },
    } } }
    ledger.entries[1].utilizationPct = nil
    local text = page(ledger)
    local row = text:match('<tr id="mig%-MIG%-00000000%-0000%-0000%-0000%-000000000000" class="slice">(.-)</tr>')
    assert.truthy(row)
    assert.truthy(row:find('data-label="gpu">0/mig0</td>', 1, true))
    assert.truthy(row:find("MIG 3g.40gb", 1, true))
    assert.truthy(row:find("11091/40448 MiB", 1, true))
    assert.truthy(row:find('<span class="state held">held</span>', 1, true))
    assert.truthy(row:find("train/trainer", 1, true))
    assert.truthy(text:find('data-label="util"><span class="none">n/a under MIG</span>', 1, true))
  end)

  it("shows a utilisation the driver did not report outside MIG as unknown", function()
    local ledger = H.ledger { H.gpu {} }
    ledger.entries[1].utilizationPct = nil
    assert.truthy(page(ledger):find('data-label="util"><span class="none">unknown</span>', 1, true))
  end)
end)
