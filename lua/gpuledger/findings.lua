-- Judging a ledger (docs/contract.md#findings): every rule of the set runs on
-- the ledger (a site's rule on a read-only view of it, under its budget)
-- and emits findings; a rule
-- that fails adds one rule-error ERROR instead of its findings, and the
-- others still run. Findings come out worst first, then node-level before
-- GPU-level, GPUs in index order, and within a GPU in the rules' order
-- (tenant findings in tenant order); but within a level, the findings of
-- health rules (rule.health) come first: on GPUs someone reserved or holds,
-- then on free ones (Nomad's next placement). Each GPU a health rule judged,
-- or that has health data, gets its healthVerdict.
local errors = require "gpuledger.errors"
local gl = require "gpuledger.gl"
local json = require "gpuledger.json"
local rule_schema = require "gpuledger.rule_schema"
local ruleset = require "gpuledger.ruleset"
local sandbox = require "gpuledger.sandbox"
local units = require "gpuledger.units"

local M = {}

local LEVELS, WORST_FIRST = rule_schema.LEVELS, rule_schema.WORST_FIRST
local RULE_ERROR_ORDER = 0
-- Ranks within a level: health on a GPU someone is on, health on a free
-- GPU, everything else.
local HEALTH_ON_TAKEN, HEALTH_ON_FREE, OTHER_RANK = 0, 1, 2

-- A rule-error finding about ledger (placed before the rules' findings of
-- its level, rule-errors in the order they came: M.ordered).
function M.rule_error(ledger, message)
  return {
    level = "ERROR", code = "rule-error", node = ledger.node, message = message,
    place_rank = OTHER_RANK, place_gpu = 0, place_order = RULE_ERROR_ORDER, place_tenant = 0,
  }
end

-- A rule-error finding about the fleet (the fleet's findings stay in the
-- order they came: no place).
function M.fleet_rule_error(message)
  return { level = "ERROR", code = "rule-error", node = "fleet", message = message }
end

-- What an automation needs to act on a finding about a tenant or a
-- reservation: its namespace, job, task, alloc, container and pids, where
-- known (all nil for neither).
local function subject(tenant, reservation)
  if tenant then
    local pids = tenant.pids or {}
    return tenant.namespace, tenant.jobName, tenant.taskName, tenant.allocId, tenant.container or tenant.containerId,
      json.array(table.move(pids, 1, #pids, 1, {}))
  elseif reservation then
    return reservation.namespace ~= "" and reservation.namespace or nil, reservation.jobId, reservation.task,
      reservation.allocId
  end
end

-- Calls fn (rule's evaluate or evaluate_fleet) on view with policy (a
-- read-only view of it), a site's rule under the policy's budgets; an
-- embedded rule, the program's own code on a ledger whose size is bounded,
-- without them (a count hook slows every instruction it runs by a fifth).
-- Returns true, or false and the error (errors.lua).
local function call_rule(core, rule, fn, view, policy, emit)
  local instructions, bytes = 0, 0
  if rule.origin ~= "embedded" then
    instructions = math.tointeger(policy.rule_instructions) or 0
    bytes = math.tointeger(policy.rule_memory_bytes) or 0
  end
  local ok, err = core.call_limited(fn, instructions, bytes, view, policy, emit)
  if not ok then
    if err == "not enough memory" then
      err = string.format("stopped: it asked for more memory than its budget of %d bytes allows", bytes)
    end
    return false, errors.of_call(err)
  end
  return true
end

-- What a finding is with levels_only (M.run): its level alone, one table per level.
local LEVEL_ONLY = {}
for level in pairs(LEVELS) do
  LEVEL_ONLY[level] = { level = level }
end

-- Runs one rule (the i-th of prepared, M.prepare) on ledger, or on view for
-- a site's rule; judged (M.run): the positions of the ledger's GPUs, slices
-- and tenants, its GPUs' labels as made, and levels_only. Returns its
-- findings, or nil and the error (errors.lua).
local function run_rule(core, prepared, i, ledger, view, judged)
  local rule, level = prepared.rules[i], prepared.levels[i]
  local positions, labels = judged.positions, judged.labels
  -- what an embedded rule emits is the ledger's own; a site rule's may be views of it
  local site = rule.origin ~= "embedded"
  local emitted = {}
  local function emit(f)
    local message = type(f) == "table" and f.message
    if type(message) ~= "string" then
      error("emit takes a table with a message string", 2)
    end
    local gpu, slice, tenant, reservation = f.gpu, f.mig, f.tenant, f.reservation -- each read once
    local label, gpu_position, tenant_position, rank, health_gpu = nil, 0, 0, OTHER_RANK, nil
    if gpu ~= nil then
      gpu = site and sandbox.original(gpu) or gpu
      gpu_position = positions[gpu]
      if not gpu_position then
        error("emit: gpu must be one of ledger.entries", 2)
      end
      label = labels[gpu] or gl.label(gpu)
      labels[gpu] = label
      if slice ~= nil then
        slice = site and sandbox.original(slice) or slice
        if positions[slice] ~= gpu then
          error("emit: mig must be one of its gpu's migDevices", 2)
        end
        label = gl.slice_label(gpu, slice)
      end
      if rule.health then
        health_gpu = gpu_position -- a position, not the entry: findings may come through JSON (isolated.lua)
        rank = gpu.state == "free" and HEALTH_ON_FREE or HEALTH_ON_TAKEN
      end
    else
      gpu, slice = nil, nil
    end
    tenant = tenant ~= nil and (site and sandbox.original(tenant) or tenant) or nil
    if tenant then
      tenant_position = positions[tenant] or 0
    end
    reservation = reservation ~= nil and (site and sandbox.original(reservation) or reservation) or nil
    if judged.levels_only then
      emitted[#emitted + 1] = LEVEL_ONLY[level]
      return
    end
    -- in one constructor, so that the table is made at its size: a
    -- constructor's table has room for every field it names, nil or not,
    -- and most findings are about no tenant or reservation; its place
    -- (M.ordered) in fields of its own, not a table of them, one object
    -- fewer a finding for the collector
    local order = rule.order or 100
    if tenant == nil and reservation == nil then
      emitted[#emitted + 1] = {
        level = level, code = rule.code, node = ledger.node, message = message,
        gpu = label, index = gpu and gpu.index, uuid = gpu and gpu.uuid, busId = gpu and gpu.busId,
        migUuid = slice and slice.uuid, migProfile = slice and slice.profile, health_gpu = health_gpu,
        place_rank = rank, place_gpu = gpu_position, place_order = order, place_tenant = tenant_position,
      }
      return
    end
    local namespace, job, task, alloc, container, pids = subject(tenant, reservation)
    emitted[#emitted + 1] = {
      level = level, code = rule.code, node = ledger.node, message = message,
      gpu = label, index = gpu and gpu.index, uuid = gpu and gpu.uuid, busId = gpu and gpu.busId,
      migUuid = slice and slice.uuid, migProfile = slice and slice.profile, health_gpu = health_gpu,
      namespace = namespace, job = job, task = task, alloc = alloc, container = container, pids = pids,
      place_rank = rank, place_gpu = gpu_position, place_order = order, place_tenant = tenant_position,
    }
  end
  local ok, err = call_rule(core, rule, rule.evaluate, view, prepared.policy, emit)
  if not ok then
    return nil, err
  end
  return emitted
end

-- Gives each GPU of the ledger that has health data (or a health finding)
-- its healthVerdict {level, codes}: the worst level of the health rules'
-- findings on it (OK when none), and their codes, worst first.
local function give_health_verdicts(ledger, sorted)
  for _, gpu in ipairs(ledger.entries) do
    if gpu.health or gpu.xids or gpu.missing or gpu.nomadDevice then
      gpu.healthVerdict = { level = "OK", codes = {} }
    end
  end
  for _, finding in ipairs(sorted) do
    local gpu = finding.health_gpu and ledger.entries[finding.health_gpu]
    if gpu then
      local verdict = gpu.healthVerdict or { level = "OK", codes = {} }
      if LEVELS[finding.level] > LEVELS[verdict.level] then
        verdict.level = finding.level
      end
      if verdict.codes[#verdict.codes] ~= finding.code then
        verdict.codes[#verdict.codes + 1] = finding.code
      end
      gpu.healthVerdict = verdict
    end
  end
end

-- The rules (a compiled set's) made ready to judge ledgers under policy
-- (M.run, M.evaluate_fleet): {rules, policy (one read-only view for every
-- rule), levels, level_errors}, each rule's level and why its level
-- function failed (ruleset.level_of) worked out once for every ledger
-- judged, not once per ledger.
function M.prepare(rules, policy)
  local prepared = { rules = rules, policy = sandbox.readonly(policy), levels = {}, level_errors = {} }
  for i, rule in ipairs(rules) do
    prepared.levels[i], prepared.level_errors[i] = ruleset.level_of(rule, policy)
  end
  return prepared
end

-- Runs each rule of prepared (M.prepare) that judges a node on the ledger
-- with core (core.call_limited): a site's rule on a read-only view of it,
-- so that it cannot change what the next rule sees; an embedded rule, the
-- program's own code, on the ledger itself (making the views was a third
-- of judging; spec/helper.lua checks after every rule spec that the
-- embedded rules left the ledger as they found it). Returns the findings in the order they
-- came, each {level, code, node, message, place_rank, place_gpu,
-- place_order, place_tenant (its place, M.ordered), health_gpu?} and, when about
-- a GPU, gpu (its label), index, uuid and busId (the page's row keys; not in
-- the JSON), about a MIG slice also migUuid and migProfile, and about a tenant or reservation (subject) namespace, job,
-- task, alloc, container and pids where known: each rule's findings or its
-- rule-error. M.ordered puts them in order. With levels_only, for a verdict
-- (M.worst, M.counts) and nothing else, each finding but a rule-error is
-- only {level}, the same table for every finding of a level: the rules run
-- and their emits are checked as they are otherwise.
function M.run(core, prepared, ledger, levels_only)
  local positions = {}
  for i, gpu in ipairs(ledger.entries) do
    positions[gpu] = i
    for j, tenant in ipairs(gpu.tenants) do
      positions[tenant] = j
    end
    for _, slice in ipairs(gpu.migDevices or {}) do
      positions[slice] = gpu -- a slice's position is its GPU's
      for j, tenant in ipairs(slice.tenants) do
        positions[tenant] = j
      end
    end
  end
  local judged = { positions = positions, labels = {}, levels_only = levels_only }
  local view = nil -- made for the first site rule, one for all of them
  local all = {}
  units.share(ledger, true)
  for i, rule in ipairs(prepared.rules) do
    if not rule.evaluate then
      goto next_rule -- a rule of the fleet only (evaluate_fleet)
    end
    if rule.origin ~= "embedded" then
      view = view or sandbox.readonly(ledger)
    end
    local found, err = run_rule(core, prepared, i, ledger, rule.origin == "embedded" and ledger or view, judged)
    local level_error = prepared.level_errors[i]
    if level_error then -- its findings come out ERROR; say why
      all[#all + 1] = M.rule_error(ledger, string.format("rule %s (%s): %s", rule.code, rule.origin, level_error))
    end
    if found then
      table.move(found, 1, #found, #all + 1, all)
    else
      all[#all + 1] = M.rule_error(ledger, string.format("rule %s (%s): %s", rule.code, rule.origin, errors.text(err)))
    end
    ::next_rule::
  end
  units.share(ledger, false)
  return all
end

-- The rank of each order among the findings' (place_order): 1 for the
-- lowest, a NaN (nil once it came through JSON from a child) after every
-- number.
local function order_ranks(all)
  local ranks, orders = {}, {}
  for _, finding in ipairs(all) do
    local order = finding.place_order
    if order == order and order ~= nil and not ranks[order] then
      ranks[order] = true
      orders[#orders + 1] = order
    end
  end
  table.sort(orders)
  for rank, order in ipairs(orders) do
    ranks[order] = rank
  end
  return setmetatable(ranks, { __index = function() return #orders + 1 end })
end

-- The findings of M.run on ledger (from one or more runs, concatenated)
-- in order: by level, worst first; then by place: its rank (health on a
-- GPU someone is on, on a free GPU, the rest), its GPU's position (none
-- first), its rule's order, its tenant's position; then by code, and
-- findings alike in all of these (a rule's on one tenant, the rule-errors)
-- in the order they came. Each GPU is given its healthVerdict, and the
-- findings' places are taken off. Each finding's key is one string (packed
-- so that strings compare as the findings are ordered), sorted by Lua
-- itself, with no call per comparison.
function M.ordered(all, ledger)
  local ranks = order_ranks(all)
  local keys, by_key = {}, {}
  for i, finding in ipairs(all) do
    -- the code ends with a "\0" (z), which no code holds: a shorter one sorts first
    local key = string.pack(">BBI4I4I4zI4", 3 - LEVELS[finding.level], finding.place_rank, finding.place_gpu,
      ranks[finding.place_order], finding.place_tenant, finding.code, i)
    keys[i], by_key[key] = key, finding
  end
  table.sort(keys)
  for i, key in ipairs(keys) do
    all[i] = by_key[key]
  end
  give_health_verdicts(ledger, all)
  for _, finding in ipairs(all) do
    finding.place_rank, finding.place_gpu, finding.place_order, finding.place_tenant = nil, nil, nil, nil
    finding.health_gpu = nil
  end
  return all
end

-- Evaluates each rule of prepared (M.prepare) that sees the whole fleet
-- (evaluate_fleet) on fleet, the read-only view of its summary (gpuledger.fleet.view). Their
-- findings are about the node "fleet" and have no GPU; a rule that fails
-- gives a rule-error about "fleet". Returns them in the rules' order.
function M.evaluate_fleet(core, prepared, fleet)
  local view = sandbox.readonly(fleet)
  local all = {}
  for i, rule in ipairs(prepared.rules) do
    if rule.evaluate_fleet then
      local level, level_error = prepared.levels[i], prepared.level_errors[i]
      local emitted = {}
      local function emit(f)
        if type(f) ~= "table" or type(f.message) ~= "string" or f.gpu ~= nil then
          error("emit takes a table with a message string (and no gpu: a fleet finding is about the fleet)", 2)
        end
        emitted[#emitted + 1] = { level = level, code = rule.code, node = "fleet", message = f.message }
      end
      local function rule_error_of(why)
        all[#all + 1] = M.fleet_rule_error(string.format("rule %s (%s): %s", rule.code, rule.origin, why))
      end
      if level_error then
        rule_error_of(level_error)
      end
      local ok, err = call_rule(core, rule, rule.evaluate_fleet, view, prepared.policy, emit)
      if ok then
        table.move(emitted, 1, #emitted, #all + 1, all)
      else
        rule_error_of(errors.text(err))
      end
    end
  end
  return all
end

local EXIT = {
  [""] = { OK = 0, WARN = 0, BAD = 0, ERROR = 0 },
  warn = { OK = 0, WARN = 1, BAD = 2, ERROR = 3 },
  bad = { OK = 0, WARN = 0, BAD = 2, ERROR = 3 },
  error = { OK = 0, WARN = 0, BAD = 0, ERROR = 3 },
}

-- check's exit status for the worst level under --exit-on
-- (docs/contract.md#exit-status).
function M.exit_status(worst, exit_on)
  return EXIT[exit_on or ""][worst]
end

-- Counts per level: {OK=, WARN=, BAD=, ERROR=}.
function M.counts(findings)
  local counts = { OK = 0, WARN = 0, BAD = 0, ERROR = 0 }
  for _, finding in ipairs(findings) do
    counts[finding.level] = counts[finding.level] + 1
  end
  return counts
end

-- The worst level of counts (M.counts) that has a finding, OK when none has.
function M.worst_of(counts)
  for _, level in ipairs(WORST_FIRST) do
    if counts[level] > 0 then
      return level
    end
  end
  return "OK"
end

-- The worst level present, OK when there are no findings.
function M.worst(findings)
  return M.worst_of(M.counts(findings))
end

return M
