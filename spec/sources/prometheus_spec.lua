local core = require "gpuledger.core"
local prometheus = require "gpuledger.sources.prometheus"
local json = require "gpuledger.json"
local text = require "gpuledger.text"

describe("gpuledger.sources.prometheus", function()
  it("window: a whole number and one unit", function()
    for _, ok in ipairs { "7d", "24h", "4w", "1y", "90m", "500ms", "30s" } do
      assert.equal(ok, prometheus.window(ok))
    end
    for _, bad in ipairs { "", "7", "7 days", "1d; drop", "-1h", "0d", "1.5h", "7D", "1h30m", "d" } do
      local window, why = prometheus.window(bad)
      assert.is_nil(window)
      assert.truthy(why:find("--since", 1, true))
    end
    assert.equal("292y", prometheus.window("292y"))
    for _, long in ipairs { "293y", "99999999999999999999999y", "9223372036855s" } do
      assert.same({ nil, string.format("--since %q: longer than the longest window Prometheus takes, about 292 years", long) },
        { prometheus.window(long) })
    end
  end)

  it("queries: report's four, over the window, one per answer", function()
    local q = prometheus.queries("7d")
    assert.equal("sum by (namespace, nomad_job, use) (increase(gpuledger_job_gpu_seconds_total[7d]))", q.jobs)
    assert.equal("sum by (node, state) (increase(gpuledger_gpu_state_seconds_total[7d]))", q.nodes)
    assert.equal("sum by (node, kind, namespace, nomad_job, task, container, tenant, use) "
      .. "(increase(gpuledger_tenant_gpu_seconds_total[7d]))", q.unreserved)
    assert.equal("sum by (node, gpu, uuid, mig_uuid, mig_profile, namespace, nomad_job, use) "
      .. "(increase(gpuledger_mig_job_gpu_seconds_total[7d]))", q.slices)
    for _, name in ipairs(prometheus.ANSWERS) do
      assert.is_string(q[name])
    end
  end)

  it("query_path: the query percent-encoded", function()
    assert.equal("/api/v1/query?query=sum%20by%20%28node%29%20%28x%5B7d%5D%29", prometheus.query_path("sum by (node) (x[7d])"))
  end)

  local function answer(result)
    return json.encode { status = "success", data = { resultType = "vector", result = result } }
  end

  -- The samples prometheus.read gives of an answer, in order, or nil and why.
  local function samples(status, body, content_type)
    local got = {}
    local series, why = prometheus.read(core, status, body, content_type, function(sample)
      got[#got + 1] = sample
    end)
    if not series then
      return nil, why
    end
    return got
  end

  it("samples: metric and value, a decimal number as text", function()
    local got = samples(200, answer {
      { metric = { node = "a", state = "held" }, value = { 1755681164.5, "3600" } },
      { metric = { node = "b", state = "free" }, value = { 1755681164.5, "1.5e-07" } },
      { metric = { node = "c", state = "free" }, value = { 1755681164.5, "0.25" } },
      { metric = { node = "d", state = "free" }, value = { 1755681164.5, "1E+3" } },
    }, "application/json")
    assert.same({ { metric = { node = "a", state = "held" }, value = 3600 },
                  { metric = { node = "b", state = "free" }, value = 1.5e-07 },
                  { metric = { node = "c", state = "free" }, value = 0.25 },
                  { metric = { node = "d", state = "free" }, value = 1000.0 } }, got)
    assert.same({}, samples(200, answer(json.array()), "application/json"))
  end)

  it("samples: a negative, absurd or unreadable value is an error naming the series", function()
    local function why(value, metric)
      local got, problem = samples(200, answer {
        { metric = { node = "a", state = "held" }, value = { 1755681164.5, "3600" } },
        { metric = metric or { namespace = "video", nomad_job = "worker", use = "idle" }, value = { 1755681164.5, value } },
      })
      assert.is_nil(got)
      return problem
    end
    local series = 'HTTP 200: data.result[2] {namespace="video", nomad_job="worker", use="idle"}: '
    assert.equal(series .. "the value is -36000, want a number from 0 to 9007199254740992", why("-36000"))
    assert.equal(series .. "the value is 1e+308, want a number from 0 to 9007199254740992", why("1e308"))
    assert.equal(series .. 'the value is "x", want a decimal number of GPU-seconds such as "3600"', why("x"))
    for _, odd in ipairs { "0x10", " 16", "16 ", "1.2.3", ".", "1e", "Inf", "nan", "" } do
      assert.equal(series .. string.format('the value is %q, want a decimal number of GPU-seconds such as "3600"', odd),
        why(odd))
    end
    assert.equal(series .. "the value is NaN, want a finite number of GPU-seconds (increase() of a counter is NaN "
      .. "only when one of its samples is)", why("NaN"))
    for _, infinite in ipairs { "+Inf", "-Inf" } do
      assert.equal(series .. "the value is " .. infinite .. ", want a finite number of GPU-seconds (increase() of a "
        .. "counter is infinite only when one of its samples is)", why(infinite))
    end
    assert.equal(series .. 'the value is the JSON number 5, want it as a JSON string such as "3600" (Prometheus '
      .. "writes each sample value as text)", why(5))
    assert.equal("HTTP 200: data.result[2].metric.node is a number, want a string", why("1", { node = 5 }))
  end)

  it("samples: label values cut like every name; more than MAX_SERIES series refused before any is read", function()
    local long = ("n"):rep(3 * 1024 * 1024)
    local cut = samples(200, answer { { metric = { namespace = long }, value = { 1, "3600" } } })
    assert.equal(text.NAME_MAX + #text.CUT_MARK, #cut[1].metric.namespace)
    local max = prometheus.MAX_SERIES
    prometheus.MAX_SERIES = 3
    local many = {}
    for i = 1, 4 do
      many[i] = { metric = { node = "n" .. i, state = "held" }, value = { 1, "1" } }
    end
    local read = 0
    local series, why = prometheus.read(core, 200, answer(many), nil, function() read = read + 1 end)
    assert.is_nil(series)
    assert.equal("HTTP 200: data.result has 4 series, more than the 3 an answer may hold", why)
    assert.equal(0, read)
    -- a label cannot fake a series, nor hide one: brackets, braces and quotes in it are text
    many[#many] = nil
    many[1].metric.node = '"value": [1, "2"]}, {"value":[ ] ] } \\"'
    local got = samples(200, answer(many))
    assert.equal(3, #got)
    assert.equal(many[1].metric.node, got[1].metric.node)
    -- an answer written with spaces counts the same
    local spaced = answer(many):gsub(',"', ' ,\n "'):gsub('":', '" : ')
    assert.equal(3, #samples(200, spaced))
    prometheus.MAX_SERIES = max
  end)

  it("samples: each series read alone, the rest of the answer checked first", function()
    local body = '{"status":"success","warnings":["partial"],"data":{"result":['
      .. '{"metric":{"node":"caf\\u00e9 \\"]\\"","state":"held","gone":null},"value":[1.5,"7200"]},'
      .. '{"metric":null,"value":[1.5,"60"]}'
      .. '],"resultType":"vector"}}'
    assert.same({ { metric = { node = 'café "]"', state = "held" }, value = 7200 }, { metric = {}, value = 60 } },
      samples(200, body))
    local _, why = samples(200, '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[]}]}}')
    assert.equal("HTTP 200: want a vector result, got matrix", why)
    _, why = samples(200, '{"status":"success","data":{"resultType":"vector","result":{}}}')
    assert.equal("HTTP 200: a vector result whose data.result is an object, want an array of series", why)
    _, why = samples(200, '{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["'
      .. ("w"):rep(prometheus.MAX_ENVELOPE) .. '"]}')
    assert.truthy(why:find("^HTTP 200: the answer holds %d+ bytes outside data.result, more than the 65536 it may$"))
  end)

  it("samples: a series of the wrong type or no JSON is named by its place", function()
    local function why(element)
      local _, problem = samples(200, '{"status":"success","data":{"resultType":"vector","result":['
        .. '{"metric":{},"value":[1,"1"]},' .. element .. ']}}')
      return problem
    end
    assert.equal("HTTP 200: data.result[2] is a number, want an object", why("5"))
    assert.equal("HTTP 200: data.result[2] is null, want an object", why("null"))
    assert.equal("HTTP 200: data.result[2].value is missing, want a list", why('{"metric":{}}'))
    assert.equal("HTTP 200: data.result[2].metric is a string, want an object", why('{"metric":"x","value":[1,"1"]}'))
    local want = ', want it as a JSON string such as "3600" (Prometheus writes each sample value as text)'
    assert.equal("HTTP 200: data.result[2] {}: the value is null" .. want, why('{"value":[1]}'))
    assert.equal("HTTP 200: data.result[2] {}: the value is a boolean" .. want, why('{"value":[1,true]}'))
    assert.truthy(why('{"value":[1,"1"],"x":"\\uD800"}'):find("^HTTP 200: data.result%[2%] is no JSON: "))
  end)

  it("samples: a text cut short or with garbage in it says where", function()
    local body = answer { { metric = { node = "a" }, value = { 1, "3600" } }, { metric = { node = "b" }, value = { 1, "1" } } }
    local _, why = samples(200, body:sub(1, 70), "application/json")
    assert.truthy(why:find("^HTTP 200: the answer is not Prometheus' JSON %(application/json%): {.*%(byte 71: .*ends"), why)
    _, why = samples(200, (body:gsub("},{", "},garbage,{", 1)))
    assert.truthy(why:find("(byte %d+: want a value, got 'g')"), why)
  end)

  it("samples: Prometheus' error JSON, with its status and type", function()
    local none, why = samples(422, '{"status":"error","errorType":"execution","error":"vector cannot contain metrics with the same labelset"}')
    assert.is_nil(none)
    assert.equal("HTTP 422 execution: vector cannot contain metrics with the same labelset", why)
  end)

  it("samples: an answer that is not Prometheus' JSON says what came", function()
    local _, why = samples(200, "<!DOCTYPE html>\n<html>", "text/html")
    assert.equal("HTTP 200: the answer is not Prometheus' JSON (text/html): <!DOCTYPE html> (byte 1: want a value, got '<')", why)
    _, why = samples(401, "Unauthorized\n", "text/plain; charset=utf-8")
    assert.truthy(why:find("HTTP 401: the answer is not Prometheus' JSON (text/plain; charset=utf-8): Unauthorized (byte 1: want a value, got 'U') — ", 1, true))
    assert.truthy(why:find("--prometheus-token-env", 1, true))
    _, why = samples(200, '{"other":1}')
    assert.truthy(why:find("not Prometheus' JSON", 1, true))
  end)

  it("samples: a result that is not a vector", function()
    local _, why = samples(200, '{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}')
    assert.equal("HTTP 200: want a vector result, got scalar", why)
    _, why = samples(200, '{"status":"success","data":{"result":[]}}')
    assert.equal("HTTP 200: want a vector result, got no resultType", why)
    _, why = samples(200, '{"status":"success"}')
    assert.equal("HTTP 200: data is missing, want an object with a vector result", why)
    _, why = samples(200, '{"status":"success","data":"x"}')
    assert.equal("HTTP 200: data is a string, want an object with a vector result", why)
  end)

  it("samples: a redirect is named, never read as an answer", function()
    for _, status in ipairs { 301, 302, 307, 308 } do
      local _, why = samples(status, "")
      assert.equal(string.format("HTTP %d: a redirect, which report does not follow: --prometheus is the base URL "
        .. "Prometheus answers at (with its --web.route-prefix, if any)", status), why)
    end
  end)
end)
