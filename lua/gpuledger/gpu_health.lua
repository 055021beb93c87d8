-- Each GPU's health in the ledger (docs/health.md): what the health query says
-- of it (entry.health), this boot's Xid events on its PCI address with what
-- the catalogue makes of them (entry.xids), and how Nomad fingerprinted it
-- (entry.nomadDevice). GPUs nvidia-smi no longer lists, but Nomad's device
-- list or an Xid 79 still names, come back as entries of their own
-- (missing = true), so their tenancy is still reported. Pure: a function of
-- the snapshot's sources and the catalogue.
local health = require "gpuledger.sources.health"
local json = require "gpuledger.json"
local kernel_log = require "gpuledger.sources.kernel_log"
local nomad = require "gpuledger.sources.nomad"
local nomad_node = require "gpuledger.sources.nomad_node"
local nvidia = require "gpuledger.sources.nvidia"
local pci = require "gpuledger.sources.pci"
local shape = require "gpuledger.sources.shape"
local xid = require "gpuledger.sources.xid"

local M = {}

-- The health record fields that are identity, not health.
local IDENTITY = { index = true, uuid = true, busId = true, busKey = true }

-- Appends to errors the error {source, message, gpu?} of source `name`.
local function add(errors, name, message, gpu)
  errors[#errors + 1] = { source = name, message = message, gpu = gpu }
end

-- Appends each why to errors as an unexpected answer of source `name`
-- from asked (who answered: "nvidia-smi health: <binary>", "nomad <address>").
local function unexpected(errors, name, asked, whys)
  for _, why in ipairs(whys) do
    add(errors, name, shape.unexpected(asked, why))
  end
end

-- A health answer ({fields, rows} or {error}, as its shape in
-- sources/list.lua checked it) with only its rows whose every cell is text; each other row,
-- and rows without their fields, an error naming them and asked (who answered).
local function health_answer(answer, path, asked, errors)
  if not answer or answer.error then
    return answer
  end
  if not answer.fields then
    unexpected(errors, "health", asked, { path .. ".fields is missing, want a list" })
    return { fields = {}, rows = {} }
  end
  local rows, whys = shape.items(answer.rows or {}, { list = "string" }, path .. ".rows")
  unexpected(errors, "health", asked, whys)
  return { fields = answer.fields, rows = rows }
end

-- Nomad's device groups with only their instances of the shape
-- nomad_node.INSTANCE; each other group or instance an error naming it
-- and asked (the agent that answered).
local function nomad_groups(groups, asked, errors)
  local kept = {}
  local readable, whys, path_of = shape.items(groups or {}, nomad_node.GROUP, "devices")
  unexpected(errors, "nomad_devices", asked, whys)
  for k, group in ipairs(readable) do
    local instances, instance_whys = shape.items(group.Instances or {}, nomad_node.INSTANCE, path_of(k) .. ".Instances")
    unexpected(errors, "nomad_devices", asked, instance_whys)
    kept[k] = { Name = group.Name, Instances = instances }
  end
  return kept
end

-- Reads the health sources of a snapshot (each of the shape ledger.lua
-- checks; their rows, records and devices are checked here one by one: a
-- bad one is an error naming the source and the field, and costs only
-- itself). Returns {records (by bus key and uuid), groups (Xid groups, or
-- nil when the kernel log was not read), uuids (bus key → UUID from the
-- kernel log), devices (Nomad's, or nil)} and the errors {source, message,
-- gpu? (the UUID of the GPU it concerns)}: the sources', and each health
-- cell that could not be read.
function M.read(sources)
  local read, errors = { by_bus = {}, by_uuid = {} }, {}
  local source = sources.health
  if source then
    if source.ok then
      local asked = nvidia.asked("health", source.binary)
      local records, why = health.read(health_answer(source.health, "health", asked, errors),
        health_answer(source.remapped_rows, "remapped_rows", nvidia.asked("remapped-rows", source.binary), errors),
        source.binary)
      for _, record in ipairs(records) do
        read.by_bus[record.busKey or ""] = record
        read.by_uuid[record.uuid or ""] = record
        if #record.unreadable > 0 then -- [Unknown Error], [Insufficient Permissions], …: not measured
          add(errors, "health", string.format("%s: GPU %s (%s) could not be read: %s", asked, tostring(record.index),
            record.busId or "?", table.concat(record.unreadable, ", ")), record.uuid)
        end
      end
      for _, err in ipairs(why) do
        add(errors, "health", err)
      end
    else
      add(errors, "health", source.error)
    end
  end
  local log = sources.kernel_log
  if log and log.ok then
    local records, whys = shape.items(log.records or {}, kernel_log.RECORD, "records")
    local asked = kernel_log.asked(log)
    unexpected(errors, "kernel_log", asked, whys)
    local events
    events, read.uuids = xid.parse(records)
    read.groups = xid.summary(events)
    if log.dropped then
      add(errors, "kernel_log", string.format("%s: %s NVRM lines of this boot were not read: the log kept "
        .. "more than %d records (a GPU's Xid lines of one code count once, with up to %d processes)",
        asked, tostring(log.dropped), kernel_log.MAX_RECORDS, kernel_log.MAX_PROCESSES))
    end
    if log.oversized then
      add(errors, "kernel_log", string.format("%s: %s lines over %d KiB were not read (no kernel message is that long)",
        asked, tostring(log.oversized), kernel_log.MAX_LINE // 1024))
    end
  elseif log then
    add(errors, "kernel_log", log.error)
  end
  local devices = sources.nomad_devices
  if devices and devices.ok then
    read.devices = nomad_node.devices(nomad_groups(devices.devices, nomad.asked(devices), errors))
  elseif devices then
    add(errors, "nomad_devices", devices.error)
  end
  return read, errors
end

-- nvidia-smi's form of a bus key: 0000:af:00 → 00000000:AF:00.0.
local function smi_bus_id(key)
  return ("0000" .. key):upper():gsub("^(%x+):(%x+):(%x+)$", "%1:%2:%3.0")
end

-- A ledger GPU record for a GPU nvidia-smi did not list. Nothing of it was
-- measured: its memory, utilisation, temperature, power and encoder fields
-- stay nil (unknown, not 0: no field in --json, no sample in /metrics).
local function missing_gpu(uuid, model, key)
  return { index = -1, uuid = uuid or "", model = model or "", busId = key and smi_bus_id(key) or "", missing = true }
end

-- The GPUs that nvidia-smi (which answered, listing gpus) no longer lists
-- but that Nomad's devices name (by UUID or bus id; a MIG slice by its
-- parent's bus id), or an Xid 79 of this
-- boot names by bus id: GPU records with index -1 and missing = true, in
-- Nomad's order, then the Xid's.
function M.missing(gpus, read)
  local known_uuid, known_bus = {}, {}
  for _, gpu in ipairs(gpus) do
    known_uuid[gpu.uuid] = true
    known_bus[pci.bus_key(gpu.busId) or ""] = true
  end
  local found = {}
  for _, device in ipairs(read.devices or {}) do
    local slice = device.id:match("^MIG%-") -- a slice names its GPU by bus id only
    if not (known_uuid[device.id] or known_bus[device.busKey or ""] or (slice and not device.busKey)) then
      found[#found + 1] = missing_gpu(not slice and device.id or nil, not slice and device.name or nil, device.busKey)
      known_uuid[device.id], known_bus[device.busKey or ""] = true, true
    end
  end
  for _, group in ipairs(read.groups or {}) do
    if group.xid == 79 and not known_bus[group.bus] then
      found[#found + 1] = missing_gpu((read.uuids or {})[group.bus], nil, group.bus)
      known_bus[group.bus] = true
    end
  end
  return found
end

-- The UUIDs of the MIG slices (of slices) an Xid group's lines place it on
-- (places: {gi?, ci?, pid?}): by the GPU and compute instance ids they
-- print (a GPU instance alone names each of its slices), else by a pid one
-- of a slice's tenants holds; nil when none.
local function slices_of(slices, places)
  local found, seen = json.array(), {}
  for _, place in ipairs(places) do
    for _, slice in ipairs(slices) do
      local by_ids = place.gi ~= nil and slice.gpuInstanceId == place.gi
        and (place.ci == nil or slice.computeInstanceId == place.ci)
      local by_pid = false
      for _, tenant in ipairs(place.gi == nil and place.pid and slice.tenants or {}) do
        for _, pid in ipairs(tenant.pids or {}) do
          by_pid = by_pid or pid == place.pid
        end
      end
      if (by_ids or by_pid) and not seen[slice.uuid] then
        seen[slice.uuid] = true
        found[#found + 1] = slice.uuid
      end
    end
  end
  return #found > 0 and found or nil
end

-- Gives each slice of entry (a GPU in MIG mode at bus key) the nomadDevice
-- of Nomad's device with its UUID, and the entry nomadSlicesUnknown: the
-- slices Nomad lists on this GPU (by its bus id) that the driver does not,
-- {uuid, name}.
local function attach_slices(entry, key, devices)
  local by_uuid = {}
  for _, slice in ipairs(entry.migDevices) do
    by_uuid[slice.uuid] = slice
  end
  local unknown = json.array()
  for _, device in ipairs(devices) do
    local slice = by_uuid[device.id]
    if slice then
      slice.nomadDevice = { healthy = device.healthy, healthDescription = device.healthDescription }
    elseif device.id:match("^MIG%-") and device.busKey == key then
      unknown[#unknown + 1] = { uuid = device.id, name = device.name }
    end
  end
  entry.nomadSlicesUnknown = #unknown > 0 and unknown or nil
end

-- Attaches health, xids and nomadDevice to each entry (by bus id, then
-- UUID) from what M.read found, the catalogue grading each Xid group.
function M.attach(entries, read, catalogue)
  for _, entry in ipairs(entries) do
    local key = pci.bus_key(entry.busId) or ""
    local record = read.by_bus[key] or read.by_uuid[entry.uuid]
    if record and not entry.missing then
      local fields = {}
      for field, value in pairs(record) do
        if not IDENTITY[field] and not (field == "unreadable" and #value == 0) then
          fields[field] = value
        end
      end
      entry.health = next(fields) and fields or nil -- a driver that reports none of them tells nothing
    end
    if read.groups then
      entry.xids = json.array()
      for _, group in ipairs(read.groups) do
        if group.bus == key then
          local said = xid.describe(catalogue, group)
          entry.xids[#entry.xids + 1] = {
            xid = group.xid, count = group.count, first = group.first, last = group.last,
            message = group.message, processes = json.array(group.processes), fatal = group.fatal,
            class = said.class, meaning = said.meaning, action = said.action,
            migSlices = entry.migDevices and slices_of(entry.migDevices, group.places or {}) or nil,
          }
        end
      end
    end
    for _, device in ipairs(read.devices or {}) do
      if device.id == entry.uuid or (device.busKey and device.busKey == key and not device.id:match("^MIG%-")) then
        entry.nomadDevice = { healthy = device.healthy, healthDescription = device.healthDescription }
        break
      end
    end
    if entry.migDevices and read.devices then
      attach_slices(entry, key, read.devices)
    end
  end
end

return M
