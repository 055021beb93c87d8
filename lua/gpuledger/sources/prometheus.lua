-- Prometheus' HTTP API as `report` reads it (docs/sources.md#prometheus-report):
-- the --since window, the instant queries over gpuledger's counters,
-- the request path, and the answer turned into samples, one series at a
-- time, or one clear error. Pure but for core's JSON scanner (json_array,
-- json_element): the request itself is collect/prometheus.lua's.
local clock = require "gpuledger.clock"
local json = require "gpuledger.json"
local shape = require "gpuledger.sources.shape"
local text = require "gpuledger.text"

local M = {}

M.QUERY_PATH = "/api/v1/query"

local WINDOW_UNITS = { ms = true, s = true, m = true, h = true, d = true, w = true, y = true }

-- Validates a --since window: a whole number above 0 and one unit of
-- ms, s, m, h, d, w, y (PromQL's own), no longer than the longest duration
-- Prometheus parses (Go's, about 292 years). Returns it, or nil and why.
function M.window(since)
  local number, unit = tostring(since):match("^([1-9]%d*)(%a+)$")
  if not number or not WINDOW_UNITS[unit] then
    return nil, string.format("--since %q: want a whole number and one unit, e.g. 24h, 7d or 4w (units ms, s, m, h, d, w, y)", since)
  end
  if not clock.parse_duration(since, true) then
    return nil, string.format("--since %q: longer than the longest window Prometheus takes, about 292 years", since)
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
-- job): 125,000 nodes or 250,000 jobs, about 55 MB of answer at the
-- labels gpuledger writes (near collect/prometheus.lua's MAX_BYTES),
-- counted before any is decoded. It bounds the report's entries (a few
-- hundred bytes each) where the labels are short.
M.MAX_SERIES = 500000

-- The most bytes of an answer outside data.result (its status, resultType
-- and warnings): decoded whole, unlike data.result.
M.MAX_ENVELOPE = 64 * 1024

-- A series: text labels and a value.
local SERIES = { metric = { map = "string" }, value = shape.required { list = "any" } }

-- A sample's value: GPU-seconds, never negative, at most what a JSON number
-- carries exactly (no GPU was held for 10^300 seconds).
local SECONDS = shape.number(0, shape.MAX_WHOLE)

-- How Prometheus writes a value that is no finite number: never the
-- increase() of a counter all of whose samples are finite, as gpuledger's are.
local NOT_FINITE = { NaN = true, ["+Inf"] = true, ["-Inf"] = true }

-- The number a sample's value (raw, as decoded) writes, when it is text of
-- a decimal number as Prometheus and the servers of its API write one
-- ("3600", "0.5", "1.5e-07"); nil for anything else ("0x10", " 1", "NaN",
-- a JSON number).
local function decimal(raw)
  if type(raw) ~= "string" then
    return nil
  end
  local digits = raw:match("^%-?([%d.]+)[eE][-+]?%d+$") or raw:match("^%-?([%d.]+)$")
  if digits and (digits:match("^%d+%.?%d*$") or digits:match("^%.%d+$")) then
    return tonumber(raw)
  end
  return nil
end

-- Why raw, a sample's value, is not text of a decimal number (decimal).
local function not_decimal(raw)
  if NOT_FINITE[raw] then
    return string.format("the value is %s, want a finite number of GPU-seconds "
      .. "(increase() of a counter is %s only when one of its samples is)", raw, raw == "NaN" and "NaN" or "infinite")
  elseif type(raw) == "string" then
    return string.format('the value is %q, want a decimal number of GPU-seconds such as "3600"', text.cut(raw, 64))
  end
  local what = type(raw) == "number" and string.format("the JSON number %.14g", raw) or shape.what_is(raw, "null")
  return string.format('the value is %s, want it as a JSON string such as "3600" '
    .. "(Prometheus writes each sample value as text)", what)
end

-- A series' labels as PromQL writes them ({node="a", state="held"}), cut.
local function labels(metric)
  local names, parts = {}, {}
  for name in pairs(metric) do
    names[#names + 1] = name
  end
  table.sort(names)
  for i, name in ipairs(names) do
    parts[i] = string.format("%s=%q", name, metric[name])
  end
  return text.cut("{" .. table.concat(parts, ", ") .. "}", text.NAME_MAX)
end

-- The sample of the i-th series of a result, its text (a JSON value); or
-- nil and why it is wrong (no JSON, not of SERIES' shape, a value that is
-- not text of a decimal number, "NaN" and "+Inf" too, a negative or absurd
-- one, 1e999 too).
local function sample_of(element, i)
  if element == "null" then
    return nil, string.format("data.result[%d] is null, want an object", i)
  end
  local series, why = json.decode_raw(element)
  if series == nil then
    return nil, string.format("data.result[%d] is no JSON: %s", i, why)
  end
  why = shape.check(series, SERIES, "")
  if why then
    return nil, string.format("data.result[%d]%s", i, why)
  end
  local metric = text.cut_strings(series.metric ~= json.NULL and series.metric or {}, text.NAME_MAX, json.NULL)
  local raw = series.value[2]
  local value = decimal(raw)
  if not value then
    return nil, string.format("data.result[%d] %s: %s", i, labels(metric), not_decimal(raw))
  end
  why = shape.check(value, SECONDS, "the value")
  if why then
    return nil, string.format("data.result[%d] %s: %s", i, labels(metric), why)
  end
  return { metric = metric, value = value }
end

-- Why an answer is not Prometheus' JSON: what came (its content type and
-- first line), where the text stops being JSON (cause, if it does) and
-- what the status most likely means.
local function not_json(status, body, content_type, cause)
  local what = content_type and (" (" .. text.printable(content_type) .. ")") or ""
  local why = string.format("HTTP %d: the answer is not Prometheus' JSON%s: %s", status, what, text.one_line(body, 120))
  if cause then
    why = why .. " (" .. cause .. ")"
  end
  if HINTS[status] then
    why = why .. " — " .. HINTS[status]
  end
  return why
end

-- Reads an answer to an instant query series by series, without decoding
-- it whole: core.json_array checks the text and finds data.result, the
-- rest (status, errorType, error, resultType, warnings; at most
-- M.MAX_ENVELOPE bytes) is decoded and checked first, then each series is
-- decoded alone and its sample ({metric = {label = value}, value =
-- number}, every label value cut to text.NAME_MAX) given to add(sample)
-- before the next is read. Returns the number of series, or nil and why
-- (without the source prefix): Prometheus' own error, an answer that is
-- not its JSON (an HTML page, a proxy's text, a text cut short or with
-- garbage in it: the byte named), one of more than M.MAX_SERIES series
-- (refused before any is decoded), a redirect (never followed), a result
-- that is not a vector or whose data.result is no array, or a
-- series that is wrong (named by its place and labels: a value that is
-- negative, absurd, not finite or no decimal number; a label that is no
-- text).
function M.read(core, status, body, content_type, add)
  body = body or ""
  if status >= 300 and status < 400 then
    return nil, string.format("HTTP %d: a redirect, which report does not follow: --prometheus is the base URL "
      .. "Prometheus answers at (with its --web.route-prefix, if any)", status)
  end
  local open, close, count = core.json_array(body, "data", "result")
  if open == nil then
    return nil, not_json(status, body, content_type, close)
  end
  local outside = open and (open + #body - close + 1) or #body
  if outside > M.MAX_ENVELOPE then
    return nil, string.format("HTTP %d: the answer holds %d bytes outside data.result, more than the %d it may",
      status, outside, M.MAX_ENVELOPE)
  end
  local answer = json.decode(open and (body:sub(1, open) .. body:sub(close)) or body)
  if type(answer) ~= "table" or type(answer.status) ~= "string" then
    return nil, not_json(status, body, content_type)
  end
  if answer.status ~= "success" then
    local kind = type(answer.errorType) == "string" and (" " .. answer.errorType) or ""
    local said = type(answer.error) == "string" and answer.error or "no error text"
    return nil, string.format("HTTP %d%s: %s", status, kind, text.one_line(said, 200))
  end
  local data = answer.data
  if type(data) ~= "table" then
    return nil, string.format("HTTP %d: data is %s, want an object with a vector result", status,
      shape.what_is(data, "missing"))
  end
  if data.resultType ~= "vector" then
    local got = type(data.resultType) == "string" and text.cut(data.resultType, 64)
      or shape.what_is(data.resultType, "no resultType")
    return nil, string.format("HTTP %d: want a vector result, got %s", status, got)
  end
  if not open then
    local got = type(data.result) == "table" and "an object" or shape.what_is(data.result, "missing")
    return nil, string.format("HTTP %d: a vector result whose data.result is %s, want an array of series", status, got)
  end
  if count > M.MAX_SERIES then
    return nil, string.format("HTTP %d: data.result has %d series, more than the %d an answer may hold", status,
      count, M.MAX_SERIES)
  end
  local at = open
  for i = 1, count do
    local first, last = core.json_element(body, at)
    local sample, problem = sample_of(body:sub(first, last), i)
    if problem then
      return nil, string.format("HTTP %d: %s", status, problem)
    end
    add(sample)
    at = last
  end
  return count
end

return M
