-- Prometheus' HTTP API as `report` reads it (docs/sources.md#prometheus-report):
-- the --since window, the instant queries over gpuledger's counters,
-- the request path, and the answer turned into samples or one clear error.
-- Pure: the request itself is collect/prometheus.lua's.
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"
local text = require "gpuledger.text"

local M = {}

M.QUERY_PATH = "/api/v1/query"

local WINDOW_UNITS = { ms = true, s = true, m = true, h = true, d = true, w = true, y = true }

-- Validates a --since window: a whole number above 0 and one unit of
-- ms, s, m, h, d, w, y (PromQL's own). Returns it, or nil and why.
function M.window(since)
  local number, unit = tostring(since):match("^([1-9]%d*)(%a+)$")
  if not number or not WINDOW_UNITS[unit] then
    return nil, string.format("--since %q: want a whole number and one unit, e.g. 24h, 7d or 4w (units ms, s, m, h, d, w, y)", since)
  end
  return since
end

-- The answers `report` reads, in the order it asks for them.
M.ANSWERS = { "jobs", "nodes", "unreserved", "slices" }

-- The queries of `report` over window, by answer: GPU-seconds per job and
-- use, per node and GPU state, and per tenant used without a reservation
-- (on its node), and per job and use on each MIG slice. Each sums away
-- instance and job, so a Prometheus that scrapes many nodes, fleet ledgers
-- or a federation answers the same.
function M.queries(window)
  return {
    jobs = string.format("sum by (namespace, nomad_job, use) (increase(gpuledger_job_gpu_seconds_total[%s]))", window),
    nodes = string.format("sum by (node, state) (increase(gpuledger_gpu_state_seconds_total[%s]))", window),
    unreserved = string.format("sum by (node, kind, namespace, nomad_job, task, container, tenant, use) "
      .. "(increase(gpuledger_tenant_gpu_seconds_total[%s]))", window),
    slices = string.format("sum by (node, gpu, uuid, mig_uuid, mig_profile, namespace, nomad_job, use) "
      .. "(increase(gpuledger_mig_job_gpu_seconds_total[%s]))", window),
  }
end

-- The path and query string of an instant query.
function M.query_path(query)
  return M.QUERY_PATH .. "?query=" .. text.urlencode(query)
end

-- What an HTTP status without Prometheus' JSON most likely means.
local HINTS = {
  [401] = "the server wants credentials: a proxy in front of Prometheus takes the bearer token from the variable --prometheus-token-env names",
  [403] = "the server refused the credentials (--prometheus-token-env names the variable with the bearer token)",
  [404] = "no Prometheus API there: --prometheus is the base URL (with its --web.route-prefix, if any)",
  [503] = "Prometheus is starting or stopping",
}

-- The most series one answer may hold (four states per node, two uses per
-- job): 5,000 nodes or 10,000 jobs, which a report reads and prints in a
-- few seconds.
M.MAX_SERIES = 20000

-- How many series the text of an answer holds, counted before it is
-- decoded (decoding costs many times the text's size): each series of a
-- vector has one `"value": [`, which no label can hold (a label's value is
-- a JSON string, whose quotes inside are escaped).
local function series_in(body)
  local count = 0
  for _ in body:gmatch('"value"%s*:%s*%[') do
    count = count + 1
  end
  return count
end

-- A result: at most M.MAX_SERIES series, each of text labels and a value.
local RESULT = { list = { metric = { map = "string" }, value = shape.required { list = "any" } }, max = M.MAX_SERIES }

-- A sample's value: GPU-seconds, never negative, at most what a JSON number
-- carries exactly (no GPU was held for 10^300 seconds).
local SECONDS = shape.number(0, shape.MAX_WHOLE)

-- How Prometheus writes a value that is no finite number.
local NOT_FINITE = { NaN = true, ["+Inf"] = true, ["-Inf"] = true }

-- A series' labels as PromQL writes them ({node="a", state="held"}), cut.
local function labels(metric)
  local names, parts = {}, {}
  for name in pairs(metric or {}) do
    names[#names + 1] = name
  end
  table.sort(names)
  for i, name in ipairs(names) do
    parts[i] = string.format("%s=%q", name, metric[name])
  end
  return text.cut("{" .. table.concat(parts, ", ") .. "}", text.NAME_MAX)
end

-- The sample of the i-th series of a result (of RESULT's shape), or nil
-- when Prometheus wrote its value as no finite number ("NaN", "+Inf": left
-- out); or nil and why it is wrong (a negative or absurd value, 1e999
-- too, a value that is no number).
local function sample_of(series, i)
  local path = string.format("data.result[%d]", i)
  local raw = series.value[2]
  local value = type(raw) == "string" and tonumber(raw)
  if NOT_FINITE[raw] then
    return nil
  elseif not value then
    return nil, string.format("%s %s: the value is %s, want a number as text", path, labels(series.metric),
      type(raw) == "string" and string.format("%q", text.cut(raw, 64)) or "a " .. type(raw))
  end
  local why = shape.check(value, SECONDS, "the value")
  if why then
    return nil, string.format("%s %s: %s", path, labels(series.metric), why)
  end
  return { metric = text.cut_strings(series.metric or {}, text.NAME_MAX), value = value }
end

-- Turns an answer to an instant query into its samples: an array of
-- {metric = {label = value}, value = number}, every label value cut to
-- text.NAME_MAX; values that are not finite numbers ("NaN", "+Inf") are
-- left out. Returns the samples, or nil and why (without the source
-- prefix): Prometheus' own error, an answer that is not its JSON (an HTML
-- page, a proxy's text), one of more than M.MAX_SERIES series (refused
-- before it is decoded), a result that is not a vector, or a series that
-- is wrong (named with its labels: a value that is negative, absurd or no
-- number; a label that is no text).
function M.samples(status, body, content_type)
  local series = series_in(body or "")
  if series > M.MAX_SERIES then
    return nil, string.format("HTTP %d: data.result has %d series, more than the %d an answer may hold", status,
      series, M.MAX_SERIES)
  end
  local answer = json.decode(body or "")
  if type(answer) ~= "table" or type(answer.status) ~= "string" then
    local what = content_type and (" (" .. text.printable(content_type) .. ")") or ""
    local why = string.format("HTTP %d: the answer is not Prometheus' JSON%s: %s", status, what, text.one_line(body, 120))
    if HINTS[status] then
      why = why .. " — " .. HINTS[status]
    end
    return nil, why
  end
  if answer.status ~= "success" then
    local kind = type(answer.errorType) == "string" and (" " .. answer.errorType) or ""
    local said = type(answer.error) == "string" and answer.error or "no error text"
    return nil, string.format("HTTP %d%s: %s", status, kind, text.one_line(said, 200))
  end
  local data = type(answer.data) == "table" and answer.data or {}
  if data.resultType ~= "vector" or type(data.result) ~= "table" then
    return nil, string.format("HTTP %d: want a vector result, got %s", status, tostring(data.resultType))
  end
  local why = shape.check(data.result, RESULT, "data.result")
  if why then
    return nil, string.format("HTTP %d: %s", status, why)
  end
  local samples = {}
  for i = 1, #data.result do
    local sample, problem = sample_of(data.result[i], i)
    if problem then
      return nil, string.format("HTTP %d: %s", status, problem)
    end
    samples[#samples + 1] = sample
  end
  return samples
end

return M
