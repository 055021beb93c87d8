-- nvidia-smi's optional query (docs/sources.md#nvidia-smi), the pure half: every optional
-- answer of a refresh (the health query, the thermal margin, the slowdown flags, the MIG mode)
-- asked as one --query-gpu of the fields the driver's --help-query-gpu lists, and that one
-- answer split back into the answers it stands for, each as if it had been asked alone (the
-- snapshot keeps them so, and their readers stay as they are). Before a driver's field list is
-- in, the query asked is that of the newest driver (NEWEST_KNOWN), a guess that lets the
-- optional query run beside the field list's.
local health = require "gpuledger.sources.health"
local json = require "gpuledger.json"
local mig = require "gpuledger.sources.mig"
local nvidia = require "gpuledger.sources.nvidia"
local text = require "gpuledger.text"

local M = {}

-- Whether known (a set of field names) holds every name of fields.
local function all_known(known, fields)
  for _, name in ipairs(fields) do
    if not known[name] then
      return false
    end
  end
  return true
end

-- The field list (a set of names, as health.known_fields gives it) of the
-- newest driver: it lists every field plan asks for, each by its newest
-- name (the health fields', the thermal margin's, the slowdown flags' by
-- the first of nvidia.SLOWDOWN_GROUPS, the MIG mode's, driver_version).
M.NEWEST_KNOWN = { driver_version = true }
for _, field in ipairs(health.FIELDS) do
  M.NEWEST_KNOWN[field.names[1]] = true
end
for _, fields in ipairs { nvidia.TLIMIT_FIELDS, nvidia.slowdown_fields(nvidia.SLOWDOWN_GROUPS[1]), mig.MODE_FIELDS } do
  for _, name in ipairs(fields) do
    M.NEWEST_KNOWN[name] = true
  end
end

-- The optional query of a driver whose help lists the names in known
-- (health.known_fields), with the health query's fields when with_health.
-- Returns {fields, parts, remapped_rows}: fields, the names to ask, in
-- order, each once (driver_version among them where the driver lists it: it
-- tells a new driver); parts, the answers it stands for, each {key, kind,
-- fields} (key: "health", "tlimit", "slowdown" or "mig_mode"; kind: the
-- query's name in errors, as when it was asked alone), only those whose
-- every field the driver lists (the slowdown flags by the first name of
-- nvidia.SLOWDOWN_GROUPS it lists); remapped_rows, true when the health
-- query's remapped rows must come from --query-remapped-rows.
function M.plan(known, with_health)
  local parts, remapped_rows = {}, false
  if with_health then
    local names
    names, remapped_rows = health.plan(known)
    parts[#parts + 1] = { key = "health", kind = "health", fields = names }
  end
  if all_known(known, nvidia.TLIMIT_FIELDS) then
    parts[#parts + 1] = { key = "tlimit", kind = "tlimit", fields = nvidia.TLIMIT_FIELDS }
  end
  for _, group in ipairs(nvidia.SLOWDOWN_GROUPS) do
    local fields = nvidia.slowdown_fields(group)
    if all_known(known, fields) then
      parts[#parts + 1] = { key = "slowdown", kind = group, fields = fields }
      break
    end
  end
  if all_known(known, mig.MODE_FIELDS) then
    parts[#parts + 1] = { key = "mig_mode", kind = "mig-mode", fields = mig.MODE_FIELDS }
  end
  local fields, seen = {}, {}
  local function add(name)
    if not seen[name] then
      seen[name] = true
      fields[#fields + 1] = name
    end
  end
  for _, part in ipairs(parts) do
    for _, name in ipairs(part.fields) do
      add(name)
    end
  end
  if #fields > 0 and known.driver_version then
    add("driver_version")
  end
  return { fields = fields, parts = parts, remapped_rows = remapped_rows }
end

-- Whether plans a and b (M.plan) ask the same: the same fields in the
-- same order, and the remapped rows alike.
function M.same(a, b)
  if #a.fields ~= #b.fields or a.remapped_rows ~= b.remapped_rows then
    return false
  end
  for i, name in ipairs(a.fields) do
    if b.fields[i] ~= name then
      return false
    end
  end
  return true
end

-- Splits rows (the optional query's answer under plan.fields) into the
-- answer of each part: key → {fields, rows}, each row of the part's fields
-- in its order. A row without exactly one cell per field is kept whole in
-- every part, where its reader finds it malformed as it would have been alone.
function M.split(plan, rows)
  local column = {}
  for i, name in ipairs(plan.fields) do
    column[name] = i
  end
  local answers = {}
  for _, part in ipairs(plan.parts) do
    local picked = {}
    for r, row in ipairs(rows) do
      if #row ~= #plan.fields then
        picked[r] = row
      else
        local cells = {}
        for i, name in ipairs(part.fields) do
          cells[i] = row[column[name]]
        end
        picked[r] = cells
      end
    end
    answers[part.key] = { fields = json.array(part.fields), rows = json.array(picked) }
  end
  return answers
end

-- The driver version the optional query's rows report (its driver_version
-- column, first row), or nil when it was not asked.
function M.driver(plan, rows)
  for i, name in ipairs(plan.fields) do
    if name == "driver_version" then
      return rows[1] and text.trim(rows[1][i] or "")
    end
  end
end

return M
