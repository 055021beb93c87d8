-- serve's node page at / and fleet serve's (docs/contract.md#http): server-rendered HTML that reads well
-- in light and dark (the stylesheet follows prefers-color-scheme), refreshes
-- itself with <meta http-equiv="refresh">, and has no script and no inline
-- style, so the Content-Security-Policy can forbid both. Every name that
-- came from the node (containers, jobs, models, messages, errors) is escaped
-- for where it lands; class names come from fixed sets only.
local clock = require "gpuledger.clock"
local gl = require "gpuledger.gl"
local grafana = require "gpuledger.grafana"
local memo = require "gpuledger.memo"
local nomad_ui = require "gpuledger.nomad_ui"
local table_render = require "gpuledger.render.table"
local rule_schema = require "gpuledger.rule_schema"
local text = require "gpuledger.text"

local M = {}

M.CONTENT_TYPE = "text/html; charset=utf-8"
M.STYLESHEET = "lua/gpuledger/render/style.css"

-- The characters HTML text and attribute values escape, each with its
-- entity; & first, as the others' entities hold one.
local ESCAPES = { { "&", "&amp;" }, { "<", "&lt;" }, { ">", "&gt;" }, { '"', "&#34;" }, { "'", "&#39;" } }

-- s with each char replaced by entity, found by plain search (a pattern's
-- search, gsub's too, starts again at every byte).
local function replace_all(s, char, entity)
  local at = s:find(char, 1, true)
  if not at then
    return s
  end
  local parts, from = {}, 1
  repeat
    parts[#parts + 1] = s:sub(from, at - 1)
    parts[#parts + 1] = entity
    from = at + 1
    at = s:find(char, from, true)
  until not at
  parts[#parts + 1] = s:sub(from)
  return table.concat(parts)
end

-- s escaped: & < > " ' as entities, invalid UTF-8 and control characters
-- as U+FFFD.
local function escaped(s)
  s = tostring(s == nil and "" or s)
  if text.spans(s, "^[?-~(-;= !#$%%]*") then -- printable ASCII but & < > " ', most text, stays as it is
    return s
  end
  s = text.printable(s)
  for _, escape in ipairs(ESCAPES) do
    s = replace_all(s, escape[1], escape[2])
  end
  return s
end

-- s escaped for HTML text and quoted attribute values: & < > " ' as
-- entities (quotes as &#34; and &#39;, as Go's html/template writes them),
-- invalid UTF-8 and control characters as U+FFFD. The texts escaped for
-- this page and the last are kept (memo.lua).
local new_page
M.escape, new_page = memo.new(escaped)

local LEVEL_CLASS = { OK = "OK", WARN = "WARN", BAD = "BAD", ERROR = "ERROR" }
local STATE_CLASS = { held = "held", ["reserved-idle"] = "reserved-idle", unaccounted = "unaccounted", free = "free" }

-- A level badge: <span class="level BAD">BAD</span>.
local function badge_of(level)
  return string.format('<span class="level %s">%s</span>', LEVEL_CLASS[level] or "unknown", M.escape(level))
end

local BADGES = {} -- of the levels, made once
for level in pairs(LEVEL_CLASS) do
  BADGES[level] = badge_of(level)
end

local function level_badge(level)
  return BADGES[level] or badge_of(level)
end

-- The state cell: badge, and how long when the history knows.
local function state_cell(ledger, gpu)
  local out = string.format('<span class="state %s">%s</span>', STATE_CLASS[gpu.state] or "unknown", M.escape(gpu.state))
  local seconds = gl.state_seconds(ledger, gpu)
  if seconds then
    out = out .. string.format(' <span class="since">%s</span>', M.escape(clock.human(seconds)))
  end
  return out
end

-- The health and findings cell: the level badge of the judge's health
-- verdict and its codes, one per line (a dash where nothing of the GPU's
-- health was read); under them the GPU's other findings (found, worst
-- first) that are not OK, one per line, each its level badge and code (and
-- how many, where a code is there more than once).
local function health_cell(gpu, found)
  local verdict = gpu.healthVerdict
  local lines = { verdict and level_badge(verdict.level) or '<span class="none">-</span>' }
  local health = {}
  for _, code in ipairs(verdict and verdict.codes or {}) do
    health[code] = true
    lines[#lines + 1] = M.escape(code)
  end
  local items, count = {}, {}
  for _, finding in ipairs(found or {}) do
    local key = finding.level .. " " .. finding.code
    if finding.level ~= "OK" and not health[finding.code] then
      if not count[key] then
        items[#items + 1] = finding
      end
      count[key] = (count[key] or 0) + 1
    end
  end
  for _, finding in ipairs(items) do
    local times = count[finding.level .. " " .. finding.code]
    lines[#lines + 1] = string.format("%s %s%s", level_badge(finding.level), M.escape(finding.code),
      times > 1 and string.format(" ×%d", times) or "")
  end
  return '<ul class="codes"><li>' .. table.concat(lines, "</li><li>") .. "</li></ul>"
end

-- text, escaped, inside a link to url when there is one.
local function linked(text_value, url)
  if not url then
    return M.escape(text_value)
  end
  return string.format('<a href="%s">%s</a>', M.escape(url), M.escape(text_value))
end

-- "restreamer/restreamer" per reservation, or a dash. With ui (the checked
-- --nomad-ui-url) the job links to its page in Nomad's UI and "alloc
-- 4d1e6a9b" to its allocation's; without, the command that shows the
-- allocation follows, to copy.
local function reserved_cell(gpu, ui)
  local items = {}
  for i, reservation in ipairs(gpu.reservations or {}) do
    local job = M.escape(gl.job_task(reservation))
    local alloc = reservation.allocId or ""
    if (ui or "") ~= "" then
      job = string.format('<a href="%s">%s</a>', M.escape(nomad_ui.job(ui, reservation.namespace, reservation.jobId or "")), job)
      if alloc ~= "" then
        job = job .. string.format(' <a class="alloc" href="%s">alloc %s</a>', M.escape(nomad_ui.alloc(ui, alloc)),
          M.escape(alloc:sub(1, 8)))
      end
    elseif alloc ~= "" then
      job = job .. ' <code class="command">' .. M.escape(nomad_ui.alloc_command(reservation.namespace, alloc)) .. "</code>"
    end
    items[i] = job
  end
  if #items == 0 then
    return '<span class="none">-</span>'
  end
  return table.concat(items, "<br>")
end

local MARKS = {
  unmanaged = "outside Nomad", unreserved = "not reserved", unplaced = "on no MIG slice the driver lists",
  hidden = "allocation hidden from the token", unknown = "Nomad not read",
  unnamed = "allocation not named by its cgroup", unidentified = "could not be identified",
}

-- One line per tenant: "nomad: job/task, 2048 MiB" (+ a mark when it
-- should not be there, or when that cannot be told); with ui, a Nomad
-- task links to its allocation in Nomad's UI.
local function tenants_cell(gpu, ui)
  local items = {}
  for i, tenant in ipairs(gpu.tenants or {}) do
    local verdict = MARKS[tenant.verdict]
    local mark = verdict and (' <span class="mark">· ' .. verdict .. "</span>") or ""
    local who = linked(gl.who(tenant), tenant.kind == "nomad" and (tenant.allocId or "") ~= ""
      and nomad_ui.alloc(ui, tenant.allocId) or nil)
    items[i] = "<li>" .. M.escape(tenant.kind) .. ": " .. who .. ", " .. math.tointeger(tenant.usedMemoryMiB or 0) .. " MiB" .. mark
      .. "</li>"
  end
  if #items == 0 then
    return '<span class="none">-</span>'
  end
  return '<ul class="tenants">' .. table.concat(items) .. "</ul>"
end

-- A bar of value out of max (a <meter>, drawn by the browser: no inline
-- style), with the text after it. With marks {low, high} (shares of max),
-- the browser draws it amber above low and red above high.
local function bar(class, value, max, label, marks)
  max = math.max(max, 1)
  local levels = marks and string.format(' low="%d" high="%d" optimum="0"', math.floor(max * marks[1]),
    math.floor(max * marks[2])) or ""
  return string.format('<meter class="%s" min="0" max="%d"%s value="%d"></meter> %s', class, max, levels,
    math.max(0, math.min(value, max)), label)
end

-- The memory bar's marks from the policy the rules judged by: {amber, red}
-- at memory_high_ratio and memory_full_ratio (where memory-nearly-full
-- fires), the amber no higher than the red; nil when memory_full_ratio is
-- no share from 0 to 1 (a site's thresholds.lua may set anything).
local function memory_marks(policy)
  local function share(value)
    return type(value) == "number" and value > 0 and value <= 1 and value or nil
  end
  local full = share((policy or {}).memory_full_ratio)
  if not full then
    return nil
  end
  return { math.min(share(policy.memory_high_ratio) or full, full), full }
end

-- What tells a GPU's row apart, for a GPU or a finding about one: its uuid,
-- or its bus id when the uuid is empty (GPUs nvidia-smi lost all have index
-- -1).
local function row_key(gpu)
  if (gpu.uuid or "") ~= "" then
    return gpu.uuid
  elseif (gpu.busId or "") ~= "" then
    return gpu.busId
  end
  return "index-" .. tostring(gpu.index)
end

-- The findings on each GPU (by row_key), worst first as findings are: the
-- first one's level makes the row stand out.
local function findings_by_gpu(findings)
  local by_gpu = {}
  for _, finding in ipairs(findings or {}) do
    if finding.index ~= nil then
      local key = row_key(finding)
      by_gpu[key] = by_gpu[key] or {}
      table.insert(by_gpu[key], finding)
    end
  end
  return by_gpu
end

-- The anchor of the row of a GPU (or of a finding's GPU), which findings
-- link to.
local function gpu_anchor(gpu)
  return "gpu-" .. M.escape(row_key(gpu))
end

local ROW_CLASS = { BAD = "gpu alarm BAD", ERROR = "gpu alarm ERROR" }

-- A MIG slice's sub-row under its GPU's: "0/mig1", its profile, memory,
-- state, reservations and tenants (utilisation, temperature, encoder and
-- health are the GPU's).
local function slice_row(ledger, gpu, slice, ui)
  local view = table_render.slice_view(gpu, slice)
  return string.format(
    '<tr id="mig-%s" class="slice"><td class="num" data-label="gpu">%s</td><td data-label="model">%s</td>'
      .. '<td data-label="util"></td><td class="bar" data-label="memory">%s</td><td data-label="temp"></td>'
      .. '<td data-label="enc"></td><td data-label="state">%s</td><td data-label="health"></td>'
      .. '<td data-label="reserved by">%s</td><td data-label="tenants">%s</td></tr>',
    M.escape(slice.uuid), M.escape(table_render.cells.gpu(ledger, view)), M.escape(view.model),
    bar("memory", view.memoryUsedMiB, view.memoryTotalMiB, string.format("%d/%d MiB", view.memoryUsedMiB, view.memoryTotalMiB)),
    state_cell(ledger, view), reserved_cell(view, ui), tenants_cell(view, ui))
end

local function gpu_table(ledger, findings, policy, out, grafana_url, ui)
  local entries = ledger.entries or {}
  if #entries == 0 then
    if ledger.sources and ledger.sources.nvidia == "failed" or (ledger.errors and #ledger.errors > 0) then
      out[#out + 1] = '<p class="missing">No GPU data from this read: the sources above could not be read.</p>'
    else
      out[#out + 1] = '<p class="none">nvidia-smi reports no GPU on this node.</p>'
    end
    return
  end
  out[#out + 1] = "<table class=\"gpus\">"
  out[#out + 1] = "<thead><tr><th>gpu</th><th>model</th><th>util</th><th>memory</th><th>temp</th>"
    .. "<th>enc</th><th>state</th><th>health · findings</th><th>reserved by</th><th>tenants</th></tr></thead>"
  out[#out + 1] = "<tbody>"
  local by_gpu, marks = findings_by_gpu(findings), memory_marks(policy)
  for _, gpu in ipairs(entries) do
    local found = by_gpu[row_key(gpu)]
    local unknown = '<span class="none">unknown</span>' -- not measured: a GPU nvidia-smi no longer lists
    local used, total = gpu.memoryUsedMiB, gpu.memoryTotalMiB
    local util = gpu.utilizationPct and bar("util", gpu.utilizationPct, 100, string.format("%d%%", gpu.utilizationPct))
      or (gl.mig_mode(gpu) and '<span class="none">n/a under MIG</span>' or unknown)
    out[#out + 1] = string.format(
      '<tr id="%s" class="%s"><td class="num" data-label="gpu">%s</td><td data-label="model">%s</td>'
        .. '<td class="bar" data-label="util">%s</td><td class="bar" data-label="memory">%s</td>'
        .. '<td class="num" data-label="temp">%s</td><td class="num" data-label="enc">%s</td>'
        .. '<td data-label="state">%s</td><td data-label="health">%s</td>'
        .. '<td data-label="reserved by">%s</td><td data-label="tenants">%s</td></tr>',
      gpu_anchor(gpu), ROW_CLASS[found and found[1].level] or "gpu",
      linked(table_render.cells.gpu(ledger, gpu), grafana.link(grafana_url, ledger.node, gl.index_text(gpu))), M.escape(gpu.model),
      util, total and bar("memory", used, total, string.format("%d/%d MiB", used, total), marks) or unknown,
      gpu.temperatureC and gpu.temperatureC .. " °C" or unknown, gpu.encoderSessions or unknown,
      state_cell(ledger, gpu), health_cell(gpu, found),
      reserved_cell(gpu, ui), tenants_cell(gpu, ui))
    for _, slice in ipairs(gpu.migDevices or {}) do
      out[#out + 1] = slice_row(ledger, gpu, slice, ui)
    end
  end
  out[#out + 1] = "</tbody></table>"
end

-- The node page's findings table: each finding's level, code, where (its
-- GPU label, linked to its row, or the node for a node-level finding) and
-- message.
local function findings_list(findings, out)
  if #findings == 0 then
    out[#out + 1] = '<p class="none">none</p>'
    return
  end
  out[#out + 1] = '<table class="findings">'
  out[#out + 1] = "<thead><tr><th>level</th><th>code</th><th>where</th><th>message</th></tr></thead>"
  out[#out + 1] = "<tbody>"
  for _, finding in ipairs(findings) do
    local where = M.escape(finding.gpu or finding.node)
    if finding.index ~= nil then -- linked to its GPU's row
      where = string.format('<a href="#%s">%s</a>', gpu_anchor(finding), where)
    end
    out[#out + 1] = string.format('<tr class="finding %s"><td data-label="level">%s</td><td data-label="code">%s</td>'
      .. '<td data-label="where">%s</td><td data-label="message">%s</td></tr>',
      LEVEL_CLASS[finding.level] or "unknown", level_badge(finding.level), M.escape(finding.code), where,
      M.escape(finding.message))
  end
  out[#out + 1] = "</tbody></table>"
end

-- The header's count of findings per level, worst first, each with its badge.
local function counts_line(counts)
  local parts = {}
  for _, level in ipairs(rule_schema.WORST_FIRST) do
    parts[#parts + 1] = string.format('<span class="count">%s %d</span>', level_badge(level), counts and counts[level] or 0)
  end
  return '<p class="counts">' .. table.concat(parts, " ") .. "</p>"
end

-- The page's start, up to <body>: a page that refreshes itself every
-- refresh seconds, titled "gpuledger · <title>", with the stylesheet.
local function page_head(refresh, title)
  return {
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    string.format('<meta http-equiv="refresh" content="%d">', refresh),
    string.format("<title>gpuledger · %s</title>", M.escape(title)),
    '<link rel="stylesheet" href="style.css">',
    "</head>",
    "<body>",
  }
end

-- Closes <main> and the page with the read-only footer; returns the text.
local function page_foot(out, version)
  out[#out + 1] = "</main>"
  out[#out + 1] = string.format("<footer>gpuledger %s · read-only: it reports what it sees and changes nothing.</footer>",
    M.escape(version or "dev"))
  out[#out + 1] = "</body>"
  out[#out + 1] = "</html>"
  return table.concat(out, "\n") .. "\n"
end

-- The header's line of the node's context (table_render.context_parts:
-- the driver's and CUDA's versions, Nomad's node, linked to the node in
-- Nomad's UI with ui), or nothing when none is known.
local function context_line(ledger, ui)
  local parts = {}
  for i, part in ipairs(table_render.context_parts(ledger)) do
    parts[i] = M.escape(part)
  end
  local id = ledger.nomadNode and ledger.nomadNode.id
  if id and (ui or "") ~= "" then
    parts[#parts + 1] = string.format('<a class="nomad" href="%s">Nomad node</a>', M.escape(nomad_ui.client(ui, id)))
  end
  return #parts > 0 and ('<p class="meta context">' .. table.concat(parts, " · ") .. "</p>") or ""
end

-- The node page of a report (judge.lua: the annotated ledger of this
-- refresh, its findings worst first and their worst level, the policy its
-- memory bars are marked by). opts: interval
-- (seconds; the page refreshes at that pace, at least every second),
-- version, grafana_url (the checked --grafana-url: the node and each GPU
-- link to the dashboard) and nomad_ui_url (the checked --nomad-ui-url:
-- allocations, jobs and the node link to Nomad's UI; without it each
-- reservation shows the nomad alloc status command).
function M.node(report, opts)
  new_page()
  local ledger, findings, worst = report.ledger, report.findings, report.worst
  opts = opts or {}
  local refresh = math.max(1, math.floor(opts.interval or 15))
  local node = ledger.node or ""
  local errors = ledger.errors or {}
  local out = page_head(refresh, node)
  for _, line in ipairs {
    "<header>",
    string.format("<h1>%s %s</h1>", linked(node, grafana.link(opts.grafana_url, node)), level_badge(worst)),
    counts_line(report.counts),
    context_line(ledger, opts.nomad_ui_url),
    string.format('<p class="meta">%d GPU(s) · read %s · refresh %d s · <a href="ledger">ledger</a> · '
      .. '<a href="findings">findings</a> · <a href="metrics">metrics</a></p>',
      #(ledger.entries or {}), M.escape(clock.format_stamp(clock.parse_time(ledger.at) or 0)), refresh),
    "</header>",
    "<main>",
  } do
    out[#out + 1] = line
  end
  if #errors > 0 then
    out[#out + 1] = '<section class="sources">'
    out[#out + 1] = "<h2>Sources that could not be read</h2>"
    out[#out + 1] = '<p class="partial">This read is partial: what follows is only what the other sources '
      .. "said now, not the last good read, and the history does not count it.</p>"
    out[#out + 1] = '<ul class="errors">'
    for _, err in ipairs(errors) do
      out[#out + 1] = string.format("<li>%s %s</li>", level_badge("ERROR"), M.escape(err))
    end
    out[#out + 1] = "</ul>"
    out[#out + 1] = "</section>"
  end
  out[#out + 1] = "<section>"
  out[#out + 1] = "<h2>GPUs</h2>"
  gpu_table(ledger, findings, report.policy, out, opts.grafana_url, opts.nomad_ui_url)
  out[#out + 1] = "</section>"
  out[#out + 1] = "<section>"
  out[#out + 1] = "<h2>Findings</h2>"
  findings_list(findings, out)
  out[#out + 1] = "</section>"
  return page_foot(out, opts.version)
end

-- A fleet row's verdict cells: its worst level, its BAD and ERROR findings.
local function verdict_cells(row)
  return string.format('<td data-label="worst">%s</td><td class="num" data-label="bad">%d</td>'
    .. '<td class="num" data-label="error">%d</td>', level_badge(row.worst), row.badFindings, row.errorFindings)
end

-- The count columns of the fleet page, each {header, the row's GPU field,
-- its MIG slice field}: a node with slices has theirs after each count.
local FLEET_COUNTS = {
  { "gpus", "gpus", "migSlices" }, { "held", "held", "migHeld" }, { "reserved-idle", "reservedIdle", "migReservedIdle" },
  { "unaccounted", "unaccounted", "migUnaccounted" }, { "free", "free", "migFree" },
}

-- One node's row of the fleet page, worst first: its name linked to its own page when
-- it was read (with "schema N" when not 1, a link to the node on the
-- dashboard with grafana_url, and to it in Nomad's UI with ui), counts and memory; an unreachable node's row
-- is the badge and its error across the columns. Each cell carries its
-- column's name as data-label, the label of its line on a narrow screen.
local function fleet_row(row, grafana_url, ui)
  if row.error then
    return string.format('<tr><td data-label="node">%s</td>%s<td colspan="6" data-label="error">%s %s</td></tr>',
      M.escape(row.node), verdict_cells(row),
      '<span class="level ERROR">unreachable</span>', M.escape(row.error))
  end
  local name = M.escape(row.node)
  if row.url then
    name = string.format('<a href="%s/">%s</a>', M.escape(row.url), name)
  end
  if row.schema ~= 1 then
    name = name .. string.format(' <span class="mark">schema %d</span>', row.schema)
  end
  local dashboard = grafana.link(grafana_url, row.node)
  if dashboard then
    name = name .. string.format(' <a class="dashboard" href="%s">dashboard</a>', M.escape(dashboard))
  end
  local client = row.nomadNodeId and nomad_ui.client(ui, row.nomadNodeId)
  if client then
    name = name .. string.format(' <a class="nomad" href="%s">Nomad</a>', M.escape(client))
  end
  local cells = {}
  for _, count in ipairs(FLEET_COUNTS) do
    local slices = row.migSlices and string.format(' <span class="mark" title="MIG slices">(%d)</span>', row[count[3]] or 0) or ""
    cells[#cells + 1] = string.format('<td class="num" data-label="%s">%d%s</td>', count[1], row[count[2]], slices)
  end
  return string.format('<tr><td data-label="node">%s</td>%s%s<td class="num" data-label="memory">%d/%d MiB</td></tr>',
    name, verdict_cells(row), table.concat(cells), row.memoryUsedMiB, row.memoryTotalMiB)
end

-- Where a finding of the fleet is, "node gpu1 GPU-…" (or the node), linked
-- to its GPU's row on the node's page (to the page, for a node's finding)
-- when the node was read (url_of: node name → its url).
local function fleet_where(finding, url_of)
  local where = M.escape(finding.gpu and (finding.node .. " " .. finding.gpu) or finding.node)
  local url = url_of[finding.node]
  if not url then
    return where
  end
  local anchor = (finding.uuid or "") ~= "" and ("#" .. gpu_anchor(finding)) or ""
  return string.format('<a href="%s/%s">%s</a>', M.escape(url), anchor, where)
end

-- The most findings a group of the fleet page lists: past them the group
-- says how many more there are and where every one is, so that a code on
-- every node of a large fleet does not make a page of thousands of rows
-- (a page of 1,000 nodes with the demo's troubles twice over was 14 MB).
M.GROUP_FINDINGS_SHOWN = 100

-- The fleet's findings grouped by level and code (groups: fleet.group_findings'
-- or fleet.group_kept's), worst first: each group's line says its level,
-- code, how many findings, GPUs and nodes and names the nodes, and opens
-- (a <details>, no script) on its first GROUP_FINDINGS_SHOWN findings, each
-- where it is and its message, then on how many more there are.
local function finding_groups(summary, groups, out)
  if #groups == 0 then
    out[#out + 1] = '<p class="none">none</p>'
    return
  end
  local url_of = {}
  for _, row in ipairs(summary.nodes) do
    if not row.error and row.url then
      url_of[row.node] = row.url
    end
  end
  for _, group in ipairs(groups) do
    local class = LEVEL_CLASS[group.level] or "unknown"
    local nodes = {}
    for i, name in ipairs(table_render.group_nodes(group)) do
      nodes[i] = M.escape(name)
    end
    out[#out + 1] = string.format('<details class="group %s"><summary>%s <span class="code">%s</span> '
      .. '<span class="reach">%d finding(s), %s:</span> <span class="nodes">%s</span></summary>',
      class, level_badge(group.level), M.escape(group.code), group.count, M.escape(table_render.group_reach(group)),
      table.concat(nodes, ", "))
    out[#out + 1] = '<table class="group-findings">'
    out[#out + 1] = "<thead><tr><th>where</th><th>message</th></tr></thead>"
    out[#out + 1] = "<tbody>"
    for i = 1, math.min(#group.findings, M.GROUP_FINDINGS_SHOWN) do
      local finding = group.findings[i]
      out[#out + 1] = string.format('<tr class="finding %s"><td data-label="where">%s</td><td data-label="message">%s</td></tr>',
        class, fleet_where(finding, url_of), M.escape(finding.message))
    end
    if group.count > M.GROUP_FINDINGS_SHOWN then
      out[#out + 1] = string.format('<tr class="more"><td colspan="2">%d more, not listed here: '
        .. 'each node\'s page, <a href="fleet">/fleet</a> and <code>gpuledger fleet check</code> list every one</td></tr>',
        group.count - M.GROUP_FINDINGS_SHOWN)
    end
    out[#out + 1] = "</tbody></table>"
    out[#out + 1] = "</details>"
  end
end

-- fleet serve's page. summary: gpuledger.fleet's; groups: the fleet's
-- findings grouped (fleet.group_findings or fleet.group_kept), worst first;
-- worst: their worst level; opts: counts (of the
-- findings per level), at (RFC 3339), interval (seconds), version,
-- grafana_url (the checked --grafana-url: each node links to the dashboard)
-- and nomad_ui_url (the checked --nomad-ui-url: each node and job links to
-- Nomad's UI).
function M.fleet(summary, groups, worst, opts)
  new_page()
  local refresh = math.max(1, math.floor(opts.interval or 30))
  local total = summary.total
  local nodes = string.format("%d node(s)", #summary.nodes)
  if total.unreachable > 0 then
    nodes = nodes .. string.format(", %d unreachable", total.unreachable)
  end
  local out = page_head(refresh, "fleet")
  for _, line in ipairs {
    "<header>",
    string.format("<h1>fleet %s</h1>", level_badge(worst)),
    counts_line(opts.counts),
    string.format('<p class="meta">%s · %d GPU(s) · read %s · refresh %d s · <a href="fleet">fleet</a> · '
      .. '<a href="metrics">metrics</a></p>', M.escape(nodes), total.gpus,
      M.escape(clock.format_stamp(clock.parse_time(opts.at) or 0)), refresh),
    "</header>",
    "<main>",
    "<section>",
    "<h2>Nodes</h2>",
    '<table class="nodes">',
    '<thead><tr><th>node</th><th>worst</th><th class="num">bad</th><th class="num">error</th><th class="num">gpus</th><th class="num">held</th><th class="num">reserved-idle</th>'
      .. '<th class="num">unaccounted</th><th class="num">free</th><th class="num">memory</th></tr></thead>',
    "<tbody>",
  } do
    out[#out + 1] = line
  end
  for _, row in ipairs(summary.nodes) do
    out[#out + 1] = fleet_row(row, opts.grafana_url, opts.nomad_ui_url)
  end
  out[#out + 1] = fleet_row(total) -- node "fleet", schema 1, no url, no error
  out[#out + 1] = "</tbody></table>"
  if total.migSlices then
    out[#out + 1] = '<p class="meta">(n): MIG slices, beside the GPUs; a GPU in MIG mode counts once, in its slices\' state</p>'
  end
  out[#out + 1] = "</section>"
  if #summary.jobs > 0 then
    out[#out + 1] = "<section>"
    out[#out + 1] = "<h2>Jobs</h2>"
    out[#out + 1] = '<table class="jobs">'
    out[#out + 1] = '<thead><tr><th>job</th><th class="num">reserved</th><th class="num">held</th></tr></thead>'
    out[#out + 1] = "<tbody>"
    for _, job in ipairs(summary.jobs) do
      out[#out + 1] = string.format('<tr><td data-label="job">%s</td><td class="num" data-label="reserved">%d</td>'
        .. '<td class="num" data-label="held">%d</td></tr>',
        linked(job.namespace .. "/" .. job.job, nomad_ui.job(opts.nomad_ui_url, job.namespace, job.job)), job.reserved, job.held)
    end
    out[#out + 1] = "</tbody></table>"
    out[#out + 1] = "</section>"
  end
  out[#out + 1] = "<section>"
  out[#out + 1] = "<h2>Findings</h2>"
  finding_groups(summary, groups, out)
  out[#out + 1] = "</section>"
  return page_foot(out, opts.version)
end

return M
