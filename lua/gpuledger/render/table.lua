-- The text a person reads at a terminal (SPEC §10): the ledger table of
-- `ls` and the findings list of `check`. Every name passes through
-- text.printable, so a hostile container name cannot move the cursor.
local clock = require "gpuledger.clock"
local gl = require "gpuledger.gl"
local text = require "gpuledger.text"

local M = {}

-- Draws rows (arrays of cells) under a header: "│ a │ b │" lines, cells
-- left-aligned and padded by characters, "├──┼──┤" under the header. A
-- cell is a text, or a list of texts shown one under the other (the row
-- then takes as many lines as its longest list).
function M.draw(header, rows)
  local widths = {}
  local function lines_of(cell)
    local list = type(cell) == "table" and cell or { cell }
    local lines = {}
    for i, piece in ipairs(list) do
      lines[i] = text.printable(piece)
    end
    return lines
  end
  local all = { header }
  for _, row in ipairs(rows) do
    all[#all + 1] = row
  end
  for _, row in ipairs(all) do
    for i, cell in ipairs(row) do
      row[i] = lines_of(cell)
      for _, piece in ipairs(row[i]) do
        widths[i] = math.max(widths[i] or 0, text.width(piece))
      end
      widths[i] = widths[i] or 0
    end
  end
  local function lines(row)
    local height = 1
    for _, cell in ipairs(row) do
      height = math.max(height, #cell)
    end
    local out = {}
    for n = 1, height do
      local cells = {}
      for i, width in ipairs(widths) do
        cells[i] = text.pad(row[i] and row[i][n] or "", width)
      end
      out[n] = "│ " .. table.concat(cells, " │ ") .. " │"
    end
    return table.concat(out, "\n")
  end
  local rules = {}
  for i, width in ipairs(widths) do
    rules[i] = string.rep("─", width + 2)
  end
  local out = { lines(header), "├" .. table.concat(rules, "┼") .. "┤" }
  for _, row in ipairs(rows) do
    out[#out + 1] = lines(row)
  end
  return table.concat(out, "\n") .. "\n"
end

-- A tenant's name (SPEC §6.2): who it is (gl.who).
M.tenant_name = gl.who

-- The marks of tenant cells: !unmanaged outside Nomad, !unreserved for a
-- task Nomad did not give this GPU, and ?… where that cannot be told (Nomad
-- was not read, hid the allocation from the token, or the task's cgroup does
-- not name it).
local MARKS = {
  unmanaged = " !unmanaged", unreserved = " !unreserved",
  hidden = " ?alloc hidden from the token", unknown = " ?nomad not read",
  unnamed = " ?alloc not named by its cgroup",
}

-- "kind:name (N MiB)" and its mark; a host tenant that /proc named needs no
-- kind ("service ollama.service (401 MiB) !unmanaged").
local function tenant_cell(tenant)
  local kind = tenant.owner and "" or (tenant.kind .. ":")
  local cell = string.format("%s%s (%d MiB)", kind, M.tenant_name(tenant), tenant.usedMemoryMiB)
  return cell .. (MARKS[tenant.verdict] or "")
end

-- The state cell: "reserved-idle 1h30m" when its start is known.
function M.state_cell(ledger, gpu)
  local seconds = gl.state_seconds(ledger, gpu)
  return seconds and (gpu.state .. " " .. clock.human(seconds)) or gpu.state
end

-- The cells of `ls`, each function(ledger, gpu) → a text or a list of
-- texts (one per line: reservations, tenants), by name; the
-- columns (gpuledger.render.columns, which a site may override) pick them.
M.cells = {
  gpu = function(_, gpu)
    return tostring(gpu.index)
  end,
  model = function(_, gpu)
    return gpu.model
  end,
  util = function(_, gpu)
    return gpu.utilizationPct .. "%"
  end,
  memory = function(_, gpu)
    return string.format("%d/%d MiB", gpu.memoryUsedMiB, gpu.memoryTotalMiB)
  end,
  temp = function(_, gpu)
    return gpu.temperatureC .. " °C"
  end,
  enc = function(_, gpu)
    return tostring(gpu.encoderSessions)
  end,
  state = function(ledger, gpu)
    return M.state_cell(ledger, gpu)
  end,
  reserved = function(_, gpu)
    local reserved = {}
    for i, reservation in ipairs(gpu.reservations) do
      reserved[i] = gl.job_task(reservation)
    end
    return #reserved > 0 and reserved or "-"
  end,
  tenants = function(_, gpu)
    local tenants = {}
    for i, tenant in ipairs(gpu.tenants) do
      tenants[i] = tenant_cell(tenant)
    end
    return #tenants > 0 and tenants or "-"
  end,
}

-- The columns of `ls` from gpuledger.render.columns (a site's copy when its
-- scripts directory has one). Raises, naming the module, when they are not
-- a list of {header = text, cell = function}.
local function ls_columns()
  local columns = require("gpuledger.render.columns").columns
  if type(columns) ~= "table" or #columns == 0 then
    error("gpuledger.render.columns: want a table with columns = { {header = \"…\", cell = function(ledger, gpu) … end}, … }", 0)
  end
  for i, column in ipairs(columns) do
    if type(column) ~= "table" or type(column.header) ~= "string" or type(column.cell) ~= "function" then
      error(string.format("gpuledger.render.columns: column %d wants a header (text) and a cell (function)", i), 0)
    end
  end
  return columns
end

local SOURCE_ORDER = { "nvidia", "proc", "docker", "podman", "nomad" }

-- `ls`: the header line, the table, and a line saying which sources were
-- read, failed or off.
function M.ls(ledger)
  local header = string.format("gpuledger · %s · %d GPU(s) · %s", ledger.node, #ledger.entries,
    clock.format_stamp(clock.parse_time(ledger.at) or 0))
  if ledger.errors and #ledger.errors > 0 then
    header = header .. string.format(" · %d source error(s)", #ledger.errors)
  end
  local columns = ls_columns()
  local headers, rows = {}, {}
  for i, column in ipairs(columns) do
    headers[i] = column.header
  end
  for _, gpu in ipairs(ledger.entries) do
    local row = {}
    for i, column in ipairs(columns) do
      local cell = column.cell(ledger, gpu)
      row[i] = type(cell) == "table" and cell or tostring(cell)
    end
    rows[#rows + 1] = row
  end
  local sources = {}
  for _, name in ipairs(SOURCE_ORDER) do
    local state = ledger.sources and ledger.sources[name]
    if state then
      sources[#sources + 1] = name .. " " .. state
    end
  end
  local out = text.printable(header) .. "\n"
  out = out .. M.draw(headers, rows)
  if #sources > 0 then
    out = out .. "sources: " .. table.concat(sources, " · ") .. "\n"
  end
  return out
end

local GLYPHS = { OK = "🟢", WARN = "🟡", BAD = "🔴", ERROR = "⚫" }

-- `check`: one line per finding of the report (judge.lua; findings and
-- counts are what it reads), worst first, then the counts line.
function M.check(report)
  local findings, counts = report.findings, report.counts
  local lines = {}
  for _, finding in ipairs(findings) do
    lines[#lines + 1] = text.printable(string.format("%s %s %s %s %s", GLYPHS[finding.level] or "?",
      text.pad(finding.level, 5), text.pad(finding.code, 18), text.pad(finding.gpu or finding.node, 22), finding.message))
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = string.format("%d findings: %d OK, %d WARN, %d BAD, %d ERROR",
    #findings, counts.OK, counts.WARN, counts.BAD, counts.ERROR)
  return table.concat(lines, "\n") .. "\n"
end

return M
