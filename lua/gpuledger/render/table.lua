-- The text a person reads at a terminal (docs/contract.md#text-output): the ledger table of
-- `ls` and the findings list of `check`. Every name passes through
-- text.printable, so a hostile container name cannot move the cursor.
local clock = require "gpuledger.clock"
local gl = require "gpuledger.gl"
local memo = require "gpuledger.memo"
local source_list = require "gpuledger.sources.list"
local text = require "gpuledger.text"

local M = {}

-- How many rows M.write_table draws before it writes them.
local BATCH = 1000

-- The nth line of a cell (a text, or a list of texts), made printable
-- by printable (text.printable, or a memo of it), or nil where it has
-- none.
local function piece_of(cell, n, printable)
  if type(cell) == "table" then
    return cell[n] and printable(cell[n])
  end
  return n == 1 and printable(cell) or nil
end

-- Draws rows (arrays of cells) under a header: "│ a │ b │" lines, cells
-- left-aligned and padded by characters, "├──┼──┤" under the header. A
-- cell is a text, or a list of texts shown one under the other (the row
-- then takes as many lines as its longest list); every line of a row
-- repeats its first cell (the GPU's index), so that a line read alone
-- (`ls | grep unmanaged`) still names its GPU. The count rows come from
-- row_of(n), asked twice for each (once to measure the columns, once to
-- draw it); the lines go to write(part) BATCH rows at a time, so that
-- neither the rows nor their lines are ever all held at once.
function M.write_table(header, count, row_of, write)
  local widths = {}
  -- each text made printable, and each line's width, once for both passes
  local printable = memo.new(text.printable)
  local width = memo.new(text.width)
  local function measure(row)
    for i, cell in ipairs(row) do
      local w = widths[i] or 0
      for n = 1, type(cell) == "table" and #cell or 1 do
        w = math.max(w, width(piece_of(cell, n, printable)))
      end
      widths[i] = w
    end
  end
  measure(header)
  for n = 1, count do
    measure(row_of(n))
  end
  local blanks = {} -- n → n spaces (none for n below 0)
  local function blank(n)
    local spaces = blanks[n]
    if not spaces then
      spaces = string.rep(" ", n)
      blanks[n] = spaces
    end
    return spaces
  end
  local columns = #widths
  local opening, empty = {}, {} -- each column's "│ " or " │ ", and that with an empty piece's padding
  for i = 1, columns do
    opening[i] = i == 1 and "│ " or " │ "
    empty[i] = opening[i] .. blank(widths[i])
  end
  -- the batch's lines, in pieces: "│ ", a cell, its padding, " │ ", …, " │\n" (an
  -- empty cell one piece); k of them
  local out, k = {}, 0
  local function add_lines(row, is_header)
    local height, listed = 1, {} -- listed[i]: whether cell i is a list (its type told once, not on each line)
    for i = 1, columns do
      local cell = row[i]
      if type(cell) == "table" then
        listed[i] = true
        height = math.max(height, #cell)
      end
    end
    local first = not is_header and row[1] and piece_of(row[1], 1, printable) -- repeated on each line
    for n = 1, height do
      for i = 1, columns do
        local cell, piece = row[i], nil
        if listed[i] then
          piece = cell[n] and printable(cell[n])
        elseif n == 1 and cell then
          piece = printable(cell)
        end
        if not piece and i == 1 then
          piece = first
        end
        if piece then
          out[k + 1], out[k + 2], out[k + 3] = opening[i], piece, blank(widths[i] - width(piece))
          k = k + 3
        else -- most cells of a row's second and later lines
          k = k + 1
          out[k] = empty[i]
        end
      end
      k = k + 1
      out[k] = " │\n"
    end
  end
  local rules = {}
  for i, column_width in ipairs(widths) do
    rules[i] = string.rep("─", column_width + 2)
  end
  add_lines(header, true)
  k = k + 1
  out[k] = "├" .. table.concat(rules, "┼") .. "┤\n"
  for n = 1, count do
    add_lines(row_of(n), false)
    if n % BATCH == 0 then
      write(table.concat(out, "", 1, k))
      k = 0
    end
  end
  if k > 0 then
    write(table.concat(out, "", 1, k))
  end
end

-- M.write_table's table of rows, as one text.
function M.draw(header, rows)
  local parts = {}
  M.write_table(header, #rows, function(n)
    return rows[n]
  end, function(part)
    parts[#parts + 1] = part
  end)
  return table.concat(parts)
end

-- The marks of tenant cells: !unmanaged outside Nomad, !unreserved for a
-- task Nomad did not give this GPU, and ?… where that cannot be told (Nomad
-- was not read, hid the allocation from the token, the task's cgroup does
-- not name it, or no engine or /proc could identify the tenant).
local MARKS = {
  unmanaged = " !unmanaged", unreserved = " !unreserved",
  hidden = " ?alloc hidden from the token", unknown = " ?nomad not read",
  unnamed = " ?alloc not named by its cgroup", unidentified = " ?not identified", unplaced = " ?on no MIG slice",
}

-- "kind:name (N MiB)" and its mark; a host tenant that /proc named needs no
-- kind ("service ollama.service (401 MiB) !unmanaged").
local function tenant_cell(tenant)
  local kind = tenant.owner and "" or (tenant.kind .. ":")
  local cell = string.format("%s%s (%d MiB)", kind, gl.who(tenant), tenant.usedMemoryMiB)
  return cell .. (MARKS[tenant.verdict] or "")
end

-- The state cell: "reserved-idle 1h30m" when its start is known.
function M.state_cell(ledger, gpu)
  local seconds = gl.state_seconds(ledger, gpu)
  return seconds and (gpu.state .. " " .. clock.human(seconds)) or gpu.state
end

-- The health cell: the judge's healthVerdict of the GPU, "BAD
-- row-remap-pending +1" (the worst code first, and how many more), "OK",
-- or "-" where nothing of its health was read.
function M.health_cell(gpu)
  local verdict = gpu.healthVerdict
  if not verdict then
    return "-"
  elseif #verdict.codes == 0 then
    return verdict.level
  end
  local more = #verdict.codes > 1 and string.format(" +%d", #verdict.codes - 1) or ""
  return string.format("%s %s%s", verdict.level, verdict.codes[1], more)
end

-- The cells of `ls`, each function(ledger, gpu) → a text or a list of
-- texts (one per line: reservations, tenants), by name; the
-- columns (gpuledger.render.columns, which a site may override) pick them.
-- A MIG slice has a row of its own under its GPU's: its cells are given
-- the slice's view (M.slice_view), whose sliceOf is its GPU.
M.cells = {
  gpu = function(_, gpu)
    return gpu.sliceOf and string.format("%s/mig%d", gl.index_text(gpu.sliceOf), gpu.index) or gl.index_text(gpu)
  end,
  model = function(_, gpu)
    return gpu.model
  end,
  util = function(_, gpu)
    if gpu.sliceOf then
      return "" -- nvidia-smi reports no utilisation per slice
    end
    if gpu.utilizationPct then
      return gpu.utilizationPct .. "%"
    end
    return gl.mig_mode(gpu) and "n/a" or "?" -- n/a: not measured under MIG; ?: not reported
  end,
  memory = function(_, gpu) -- ?: not measured (a GPU nvidia-smi no longer lists)
    return gpu.memoryTotalMiB and string.format("%d/%d MiB", gpu.memoryUsedMiB, gpu.memoryTotalMiB) or "?"
  end,
  temp = function(_, gpu)
    return gpu.sliceOf and "" or (gpu.temperatureC and gpu.temperatureC .. " °C" or "?")
  end,
  enc = function(_, gpu)
    return gpu.sliceOf and "" or (gpu.encoderSessions and tostring(gpu.encoderSessions) or "?")
  end,
  health = function(_, gpu) -- a list of one: on a narrow terminal, a line of its own under the GPU's
    return gpu.sliceOf and "" or { M.health_cell(gpu) } -- health is the GPU's, not a slice's
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

-- What the cells are given for a MIG slice's row: the slice's own fields
-- (index, memory, state, reservations, tenants), model "MIG <profile>",
-- no utilisation (nvidia-smi reports none per slice), and sliceOf = gpu.
function M.slice_view(gpu, slice)
  return {
    sliceOf = gpu, index = slice.index, uuid = slice.uuid, model = "MIG " .. slice.profile,
    memoryUsedMiB = slice.memoryUsedMiB, memoryTotalMiB = slice.memoryTotalMiB, state = slice.state,
    reservations = slice.reservations, tenants = slice.tenants,
  }
end

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

-- s cut to width characters, its last one "…" when it was longer.
function M.abbreviate(s, width)
  if text.width(s) <= width then
    return s
  elseif width < 1 then
    return ""
  end
  return s:sub(1, utf8.offset(s, width) - 1) .. "…"
end

-- words laid on lines of at most width characters (the first line
-- first_width, when given), one space apart, a word that does not fit on
-- the line starting a new one.
local function fill(words, width, first_width)
  local lines, line = {}, nil
  for _, word in ipairs(words) do
    if line and text.width(line) + 1 + text.width(word) <= (#lines == 0 and first_width or width) then
      line = line .. " " .. word
    else
      lines[#lines + 1] = line
      line = word
    end
  end
  lines[#lines + 1] = line or ""
  return lines
end

-- A list item (a tenant, a reservation) wrapped into lines of at most width
-- characters, between words. Its mark (" !unmanaged", " ?alloc hidden from
-- the token": the verdict) moves to a line of its own rather than be split,
-- and is never cut; a longer word (a container's name) is abbreviated.
function M.wrap(item, width)
  local words = {}
  local main, mark = item:match("^(.-) ([!?].*)$")
  for word in (main or item):gmatch("%S+") do
    words[#words + 1] = M.abbreviate(word, width)
  end
  words[#words + 1] = mark
  return fill(words, width)
end

-- A line of parts joined by " · " (ls's header and sources lines), broken
-- after a " ·" where it is wider than width.
function M.wrap_parts(line, width)
  local lines = {}
  for part in (line .. " · "):gmatch("(.-) · ") do
    local last = lines[#lines]
    if last and text.width(last) + 3 + text.width(part) + 2 <= width then -- room for its " ·"
      lines[#lines] = last .. " · " .. part
    else
      lines[#lines + 1] = part
    end
  end
  return table.concat(lines, " ·\n")
end

-- The lines of M.wrap_parts: line, parts joined by " · ", broken after a
-- " ·" where wider than width.
local function parts_lines(line, width)
  local lines = {}
  for piece in (M.wrap_parts(line, width) .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = piece
  end
  return lines
end

-- `ls` for a terminal narrower than the full table: the cells that hold one
-- text per GPU as a table without borders, two spaces apart, the columns
-- marked `shrink` (the model) abbreviated to fit width, their headers too
-- where they must (down to one character and "…"); under each GPU's
-- line, one line per item of its list cells (reservations, tenants), after
-- the column's header, wrapped to width (between words, or between its
-- " · " parts for a column marked `parts`). Every line starts with the
-- GPU's index (the first column).
local function narrow(columns, rows, width)
  local is_list, list_header_width = {}, 0
  for _, row in ipairs(rows) do
    for i, cell in ipairs(row) do
      if type(cell) == "table" then
        is_list[i] = true
        list_header_width = math.max(list_header_width, text.width(columns[i].header))
      end
    end
  end
  local flat = {}
  for i, column in ipairs(columns) do
    if not is_list[i] then
      flat[#flat + 1] = { i = i, header = column.header, shrink = column.shrink, width = text.width(column.header) }
    end
  end
  local total = 0
  for _, column in ipairs(flat) do
    for _, row in ipairs(rows) do
      column.width = math.max(column.width, text.width(text.printable(row[column.i])))
    end
    total = total + column.width + 2
  end
  for _, column in ipairs(flat) do -- give back the overflow from the columns that may shrink
    if column.shrink and total - 2 > width then
      local cut = math.max(0, math.min(column.width - 2, total - 2 - width))
      column.width, total = column.width - cut, total - cut
    end
  end
  local function flat_line(cells)
    local parts = {}
    for n, column in ipairs(flat) do
      local cell = M.abbreviate(text.printable(cells[column.i]), column.width)
      parts[n] = n < #flat and text.pad(cell, column.width) or cell
    end
    return table.concat(parts, "  ")
  end
  local headers = {}
  for i, column in ipairs(columns) do
    headers[i] = column.header
  end
  local out = { flat_line(headers) }
  local index_width = flat[1] and flat[1].width or 0
  for _, row in ipairs(rows) do
    out[#out + 1] = flat_line(row)
    local index = text.pad(text.printable(row[1]), index_width) .. "    "
    for i, cell in ipairs(row) do
      if is_list[i] and type(cell) == "table" then
        local label = text.pad(columns[i].header, list_header_width) .. "  "
        local blank = string.rep(" ", text.width(label))
        local wrap = columns[i].parts and parts_lines or M.wrap
        for _, item in ipairs(cell) do
          for n, line in ipairs(wrap(text.printable(item), width - text.width(index) - text.width(label))) do
            out[#out + 1] = index .. (n == 1 and label or blank) .. line
            label = blank
          end
        end
      end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- The parts of the header's context that are known, as `ls` and the page
-- show them: "driver 580.95.05", "CUDA 13.0", and Nomad's node ("nomad
-- dc1", "pool default", "class gpu", and "nomad node <name>" where Nomad
-- names it otherwise than the ledger).
function M.context_parts(ledger)
  local parts = {}
  local function add(format, value)
    if value and value ~= "" then
      parts[#parts + 1] = string.format(format, value)
    end
  end
  add("driver %s", ledger.driverVersion)
  add("CUDA %s", ledger.cudaVersion)
  local nomad_node = ledger.nomadNode or {}
  if nomad_node.name ~= ledger.node then
    add("nomad node %s", nomad_node.name)
  end
  add("nomad %s", nomad_node.datacenter)
  add("pool %s", nomad_node.pool)
  add("class %s", nomad_node.class)
  return parts
end

-- `ls`: the header line (the node, its GPUs, the time, the source errors,
-- then the context: M.context_parts), the table, and a line saying which
-- sources were read, failed or off. output (config.output): columns, the width of the
-- terminal ls writes to (nil for a pipe, a file, or --wide): when the full
-- table is wider, the narrow layout fits it.
function M.ls(ledger, output)
  local header = string.format("gpuledger · %s · %d GPU(s) · %s", ledger.node, #ledger.entries,
    clock.format_stamp(clock.parse_time(ledger.at) or 0))
  if ledger.errors and #ledger.errors > 0 then
    header = header .. string.format(" · %d source error(s)", #ledger.errors)
  end
  for _, part in ipairs(M.context_parts(ledger)) do
    header = header .. " · " .. part
  end
  local columns = ls_columns()
  local headers, rows = {}, {}
  for i, column in ipairs(columns) do
    headers[i] = column.header
  end
  local function add_row(unit)
    local row = {}
    for i, column in ipairs(columns) do
      local cell = column.cell(ledger, unit)
      row[i] = type(cell) == "table" and cell or tostring(cell)
    end
    rows[#rows + 1] = row
  end
  for _, gpu in ipairs(ledger.entries) do
    add_row(gpu)
    for _, slice in ipairs(gpu.migDevices or {}) do
      add_row(M.slice_view(gpu, slice))
    end
  end
  local sources = {}
  for _, name in ipairs(source_list.NAMES) do
    local state = ledger.sources and ledger.sources[name]
    if state then
      sources[#sources + 1] = name .. " " .. state
    end
  end
  local full = M.draw(headers, rows)
  local width = output and output.columns
  if not width or text.width(full:match("^[^\n]*")) <= width then
    width = math.huge
  end
  local out = M.wrap_parts(text.printable(header), width) .. "\n"
  if ledger.nvidiaInstalled == false then
    out = out .. M.wrap_parts("no NVIDIA GPU on this node (nvidia-smi is not installed)", width) .. "\n"
  else
    out = out .. (width < math.huge and narrow(columns, rows, width) or full)
  end
  if #sources > 0 then
    out = out .. M.wrap_parts("sources: " .. table.concat(sources, " · "), width) .. "\n"
  end
  return out
end

-- "N findings: a OK, b WARN, c BAD, d ERROR", check's last line.
local function counts_line(findings, counts)
  return string.format("%d findings: %d OK, %d WARN, %d BAD, %d ERROR",
    #findings, counts.OK, counts.WARN, counts.BAD, counts.ERROR)
end

local GLYPHS = { OK = "🟢", WARN = "🟡", BAD = "🔴", ERROR = "⚫" }

-- The narrowest a finding's message is wrapped to: on a terminal narrower
-- than the other columns plus this, lines run past its edge.
local MESSAGE_MIN_WIDTH = 16
-- Where the message would be narrower than this on a terminal, the where
-- column names a GPU by its label alone (gpu2, not gpu2 GPU-c41b9e27).
local MESSAGE_ROOMY_WIDTH = 40

-- A finding's message broken between words into a first line of at most
-- width characters and further lines of at most width - 2 (they are
-- indented by two); a word longer than that (a UUID on a narrow terminal)
-- is split, never cut.
local function message_lines(message, width)
  local rest_width = width - 2
  local words = {}
  for word in message:gmatch("%S+") do
    while text.width(word) > rest_width do
      local cut = utf8.offset(word, rest_width + 1)
      words[#words + 1] = word:sub(1, cut - 1)
      word = word:sub(cut)
    end
    words[#words + 1] = word
  end
  return fill(words, rest_width, width)
end

-- `check`: one line per finding of the report (judge.lua; findings and
-- counts are what it reads), worst first, then the counts line. Where (the
-- GPU, or the node) is as wide as the widest; output (config.output):
-- glyphs, whether a coloured emoji leads each line; columns, the width of
-- the terminal (nil for a pipe, a file or --wide): there a longer message
-- wraps under its column, two spaces further in, each of its lines still
-- starting with the finding's level and where (so that grep keeps them),
-- and where that leaves the message little room a GPU is named by its
-- label alone.
-- With node_column (fleet check), a node column (at least 6 wide) comes
-- before the GPU label, which is empty for a finding about a node.
function M.check(report, output, node_column)
  local findings, counts = report.findings, report.counts
  local glyphs = output and output.glyphs
  local columns = output and output.columns
  -- where_of(finding, short): the GPU's label (only "gpu2" when short) or
  -- the node's name; widths(short): the where column's width and that of
  -- everything before the message.
  local function where_of(finding, short)
    local gpu = finding.gpu and (short and finding.gpu:match("^%S+") or finding.gpu)
    return text.printable(node_column and (gpu or "") or (gpu or finding.node))
  end
  local node_width, code_width = 6, 18 -- source-unavailable's width; wider when a code is longer
  for _, finding in ipairs(findings) do
    node_width = math.max(node_width, text.width(text.printable(finding.node)))
    code_width = math.max(code_width, #finding.code)
  end
  local function widths(short)
    local where_width = 0
    for _, finding in ipairs(findings) do
      where_width = math.max(where_width, text.width(where_of(finding, short)))
    end
    return where_width, 5 + 1 + code_width + 1 + where_width + 1 + (node_column and node_width + 1 or 0)
      + (glyphs and 3 or 0) -- an emoji is two columns wide, then a space
  end
  local where_width, prefix_width = widths(false)
  local short = columns ~= nil and columns - prefix_width < MESSAGE_ROOMY_WIDTH
  if short then
    where_width, prefix_width = widths(true)
  end
  local message_width = columns and math.max(columns - prefix_width, MESSAGE_MIN_WIDTH)
  local lines = {}
  for _, finding in ipairs(findings) do
    local glyph = glyphs and ((GLYPHS[finding.level] or "?") .. " ") or ""
    local where = text.pad(where_of(finding, short), where_width)
    if node_column then
      where = text.pad(text.printable(finding.node), node_width) .. " " .. where
    end
    local level = glyph .. text.pad(finding.level, 5)
    local message = text.printable(finding.message)
    if not message_width or text.width(message) <= message_width then
      lines[#lines + 1] = string.format("%s %s %s %s", level, text.pad(text.printable(finding.code), code_width), where, message)
    else
      for i, part in ipairs(message_lines(message, message_width)) do
        local code = i == 1 and text.printable(finding.code) or ""
        lines[#lines + 1] = string.format("%s %s %s %s%s", level, text.pad(code, code_width), where, i == 1 and "" or "  ", part)
      end
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = counts_line(findings, counts)
  return table.concat(lines, "\n") .. "\n"
end

-- How many nodes a group of the fleet's findings names before "+N more".
M.GROUP_NODES_SHOWN = 8

-- The names of a group's nodes (fleet.group_findings'), the first
-- GROUP_NODES_SHOWN of them, then "+N more" for the rest.
function M.group_nodes(group)
  local names = {}
  for i = 1, math.min(#group.nodes, M.GROUP_NODES_SHOWN) do
    names[i] = group.nodes[i]
  end
  if #group.nodes > M.GROUP_NODES_SHOWN then
    names[#names + 1] = string.format("+%d more", #group.nodes - M.GROUP_NODES_SHOWN)
  end
  return names
end

-- "3 GPU(s) on 2 node(s)", or "2 node(s)" for a group about nodes only.
function M.group_reach(group)
  local nodes = string.format("%d node(s)", #group.nodes)
  return group.gpus > 0 and string.format("%d GPU(s) on %s", group.gpus, nodes) or nodes
end

-- `fleet check --summary`: one line per group of findings (groups:
-- fleet.group_findings'), worst first: its level, code, how many findings,
-- how many GPUs on how many nodes, and the nodes' names; then the counts
-- line. output (config.output): columns, the width of the terminal (nil:
-- one line per group): a line wider than it has the names on lines of
-- their own under the code, wrapped after " ·".
function M.fleet_summary(groups, findings, counts, output)
  local code_width = 18
  for _, group in ipairs(groups) do
    code_width = math.max(code_width, #group.code)
  end
  local width = output and output.columns or math.huge
  local indent = "      " -- under the code
  local lines = {}
  for _, group in ipairs(groups) do
    local head = text.printable(string.format("%s %s %d finding(s), %s:", text.pad(group.level, 5),
      text.pad(group.code, code_width), group.count, M.group_reach(group)))
    local names = text.printable(table.concat(M.group_nodes(group), " · "))
    if text.width(head) + 1 + text.width(names) <= width then
      lines[#lines + 1] = head .. " " .. names
    else
      local wrapped = M.wrap_parts(names, math.max(width - #indent, 20))
      lines[#lines + 1] = head .. "\n" .. indent .. wrapped:gsub("\n", "\n" .. indent)
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = counts_line(findings, counts)
  return table.concat(lines, "\n") .. "\n"
end

-- The GPU states of a fleet ls row that are not zero, as one item of the
-- narrow layout ("1 held · 2 free"); nil when it has no GPU.
-- The states of fleet ls, each {name, the row's GPU counter, its MIG slice
-- counter} (fleet.lua's COUNTER_OF_STATE and SLICE_COUNTERS).
local FLEET_STATES = {
  { "held", "held", "migHeld" }, { "reserved-idle", "reservedIdle", "migReservedIdle" },
  { "unaccounted", "unaccounted", "migUnaccounted" }, { "free", "free", "migFree" },
}

local function gpu_states(row)
  local parts, slices = {}, {}
  for _, state in ipairs(FLEET_STATES) do
    if row[state[2]] > 0 then
      parts[#parts + 1] = string.format("%d %s", row[state[2]], state[1])
    end
    if (row[state[3]] or 0) > 0 then
      slices[#slices + 1] = string.format("%d %s", row[state[3]], state[1])
    end
  end
  if #slices > 0 then
    parts[#parts + 1] = "MIG slices: " .. table.concat(slices, ", ")
  end
  return #parts > 0 and { table.concat(parts, " · ") } or nil
end

-- A fleet ls count: the row's GPUs (field), and where the row has MIG
-- slices, those of slice_field after them in parentheses ("5 (2)").
local function fleet_count(row, field, slice_field)
  if not row.migSlices then
    return tostring(row[field])
  end
  return string.format("%d (%d)", row[field], row[slice_field] or 0)
end

-- `fleet ls`: the header line, one row per node worst first (its worst
-- level, its BAD and ERROR findings; an unreachable one with dashes), the
-- fleet's totals, one line per unreachable node with its error, and the job
-- table when any job holds a reservation. output (config.output): columns,
-- the width of the terminal (nil for a pipe, a file or --wide): when the
-- full table is wider, the narrow layout of ls fits it (the GPU states on a
-- line of their own under each node's, every line starting with the node's
-- name) and the errors wrap. Where the fleet has MIG slices, each count of
-- a node with slices has theirs after it in parentheses, and the states
-- line names them.
function M.fleet_ls(summary, output)
  local total = summary.total
  local header = string.format("gpuledger fleet · %d node(s)", #summary.nodes)
  if total.unreachable > 0 then
    header = header .. string.format(", %d unreachable", total.unreachable)
  end
  header = header .. string.format(" · %d GPU(s)", total.gpus)
  local rows, narrow_rows, errors = {}, {}, {}
  local function memory(row)
    return string.format("%d/%d MiB", row.memoryUsedMiB, row.memoryTotalMiB)
  end
  local function add(name, row)
    local verdict = { name, row.worst, tostring(row.badFindings), tostring(row.errorFindings) }
    if row.error then
      rows[#rows + 1] = { name, row.worst, verdict[3], verdict[4], "-", "-", "-", "-", "-", "-" }
      narrow_rows[#narrow_rows + 1] = { name, row.worst, verdict[3], verdict[4], "-", "-" }
    else
      local counts = { name, row.worst, verdict[3], verdict[4], fleet_count(row, "gpus", "migSlices") }
      for _, state in ipairs(FLEET_STATES) do
        counts[#counts + 1] = fleet_count(row, state[2], state[3])
      end
      counts[#counts + 1] = memory(row)
      rows[#rows + 1] = counts
      narrow_rows[#narrow_rows + 1] = { name, row.worst, verdict[3], verdict[4], tostring(row.gpus), memory(row), gpu_states(row) }
    end
  end
  for _, row in ipairs(summary.nodes) do
    add(row.schema ~= 1 and not row.error and string.format("%s (schema %d)", row.node, row.schema) or row.node, row)
    if row.error then
      errors[#errors + 1] = row.node .. ": unreachable: " .. row.error
    end
  end
  add("fleet", total)
  local full = M.draw({ "node", "worst", "bad", "error", "gpus", "held", "reserved-idle", "unaccounted", "free", "memory" }, rows)
  local width = output and output.columns
  local fits = not width or text.width(full:match("^[^\n]*")) <= width
  local out = text.printable(header) .. "\n"
  if fits then
    out = out .. full
    if total.migSlices then
      out = out .. "(n): MIG slices, beside the GPUs; a GPU in MIG mode counts once, in its slices' state\n"
    end
  else
    local columns = {}
    for i, name in ipairs { "node", "worst", "bad", "error", "gpus", "memory", "states" } do
      columns[i] = { header = name, parts = name == "states" }
    end
    out = out .. narrow(columns, narrow_rows, width)
  end
  if #errors > 0 then
    out = out .. "\n"
    for _, line in ipairs(errors) do
      line = text.printable(line)
      out = out .. (fits and line or table.concat(message_lines(line, width), "\n  ")) .. "\n"
    end
  end
  if #summary.jobs > 0 then
    local job_rows = {}
    for i, job in ipairs(summary.jobs) do
      job_rows[i] = { job.namespace .. "/" .. job.job, tostring(job.reserved), tostring(job.held) }
    end
    out = out .. "\n" .. M.draw({ "job", "reserved", "held" }, job_rows)
  end
  return out
end

-- GPU-hours as report prints them: one decimal, or, below 0.1, as many as
-- show two significant digits (0.0042), so that a short window is not all
-- 0.0; at most six, and what is smaller still (a few ms of GPU time) is
-- "<0.000001", never a zero.
local function hours(x)
  if x == 0 or x >= 0.1 then
    return string.format("%.1f", x)
  elseif x < 0.000001 then
    return "<0.000001"
  end
  local decimals = math.min(6, math.ceil(-math.log(x, 10)) + 1)
  return string.format("%." .. decimals .. "f", x)
end

local function percent(share)
  return string.format("%.0f%%", share * 100)
end

-- `report` (report.lua's report) written to write(part) as it is made: a
-- header with the totals, the jobs, the nodes, the tenants that used GPUs
-- without a reservation, then the jobs per MIG slice, each table a batch of
-- rows at a time (M.write_table); or, when Prometheus had no counters over
-- the window, one line saying so and why.
function M.write_report(report, write)
  if #report.jobs == 0 and #report.nodes == 0 and #report.unreserved == 0 and #report.slices == 0 then
    write(string.format("gpuledger report · no gpuledger counters in Prometheus over the last %s "
      .. "(increase() needs two scrapes of a counter inside the window: is gpuledger serve scraped, "
      .. "and for longer than one scrape interval?)\n", report.since))
    return
  end
  local report_mod = require "gpuledger.report"
  local total = report_mod.totals(report)
  local share = total.reservedHours > 0 and total.idleHours / total.reservedHours or 0
  local unreserved = #report.unreserved > 0
    and string.format(" · %s GPU-hours used without a reservation", hours(total.unreservedHours)) or ""
  write(string.format("gpuledger report · the last %s · %d job(s), %s GPU-hours reserved, %s idle (%s)%s\n",
    report.since, #report.jobs, hours(total.reservedHours), hours(total.idleHours), percent(share), unreserved))
  -- table_of(title, header, list, row): the entries of list as rows (row(entry) → its cells) under
  -- header, after the line title (none for the first table).
  local function table_of(title, header, list, row)
    if #list > 0 then
      if title then
        write("\n" .. title .. "\n")
      end
      M.write_table(header, #list, function(n)
        return row(list[n])
      end, write)
    end
  end
  table_of(nil, { "job", "reserved GPU-h", "held GPU-h", "idle GPU-h", "idle" }, report.jobs, function(entry)
    return {
      entry.namespace .. "/" .. entry.job, hours(entry.reservedHours), hours(entry.heldHours),
      hours(entry.idleHours), percent(entry.idleShare),
    }
  end)
  local node_header = { "node" }
  for _, state in ipairs(report_mod.STATES) do
    node_header[#node_header + 1] = state
  end
  table_of("GPU-hours per node and state", node_header, report.nodes, function(entry)
    local row = { entry.node }
    for _, state in ipairs(report_mod.STATES) do
      row[#row + 1] = hours(entry.hours[state])
    end
    return row
  end)
  table_of("GPU-hours used without a reservation", { "tenant", "kind", "verdict", "node", "GPU-h" },
    report.unreserved, function(entry)
      return { entry.tenant, entry.kind, entry.use, entry.node, hours(entry.hours) }
    end)
  table_of("GPU-hours per job and MIG slice (a slice counts its share of its GPU's compute slices)",
    { "job", "node", "slice", "reserved GPU-h", "held GPU-h", "idle GPU-h" }, report.slices, function(entry)
      return {
        entry.namespace .. "/" .. entry.job, entry.node,
        string.format("gpu%s %s %s", entry.gpu, entry.migUuid:sub(1, 12), entry.profile),
        hours(entry.reservedHours), hours(entry.heldHours), hours(entry.idleHours),
      }
    end)
end

-- The rules table of `gpuledger rules` (listing: {rules, off}, cmd/rules.lua's
-- rows and off_rows): the rules, then the defaults switched off.
function M.rules(listing)
  local cells = {}
  for i, row in ipairs(listing.rules) do
    cells[i] = { row.code, row.level, row.origin, row.doc }
  end
  for _, row in ipairs(listing.off) do
    cells[#cells + 1] = { row.code, "off", "switched off by " .. row.origin, row.doc }
  end
  return M.draw({ "code", "level", "from", "what it finds" }, cells)
end

-- The report of `rules --check` (check: {dir, rules, off, inputs, errors},
-- as cmd/rules.lua's check gives it): the rules, each input's findings, the
-- rule errors and the verdict.
function M.rules_check(check)
  local site = 0
  for _, row in ipairs(check.rules) do
    if row.origin ~= "embedded" then
      site = site + 1
    end
  end
  local out = {
    text.printable(string.format("gpuledger rules --check %s: %d rules, %d from the site directory", check.dir,
      #check.rules, site)),
  }
  out[#out + 1] = M.rules(check)
  local failed_inputs = 0
  for _, result in ipairs(check.inputs) do
    if result.error then
      failed_inputs = failed_inputs + 1
      out[#out + 1] = text.printable(string.format("== %s: cannot be read: %s", result.input, result.error)) .. "\n"
    else
      local name = result.input == "demo" and "the embedded demo node" or result.input
      out[#out + 1] = text.printable(string.format("== %s (node %s, %d GPU(s))", name, result.node, result.gpus))
      out[#out + 1] = M.check(result)
    end
  end
  if #check.errors > 0 then
    out[#out + 1] = string.format("%d rule error(s):", #check.errors)
    for _, err in ipairs(check.errors) do
      out[#out + 1] = "  " .. text.printable(err)
    end
  end
  if #check.errors > 0 or failed_inputs > 0 then
    out[#out + 1] = string.format("FAIL: %d rule error(s), %d input(s) not read\n", #check.errors, failed_inputs)
  else
    out[#out + 1] = string.format("ok: no rule errors over %d input(s)\n", #check.inputs)
  end
  return table.concat(out, "\n")
end

return M
