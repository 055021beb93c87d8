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

  it("samples: metric and value; NaN and Inf left out", function()
    local samples = prometheus.samples(200, answer {
      { metric = { node = "a", state = "held" }, value = { 1755681164.5, "3600" } },
      { metric = { node = "a", state = "free" }, value = { 1755681164.5, "NaN" } },
      { metric = { node = "a", state = "free" }, value = { 1755681164.5, "+Inf" } },
      { metric = { node = "b", state = "free" }, value = { 1755681164.5, "1.5e-07" } },
    }, "application/json")
    assert.same({ { metric = { node = "a", state = "held" }, value = 3600 },
                  { metric = { node = "b", state = "free" }, value = 1.5e-07 } }, samples)
    assert.same({}, prometheus.samples(200, answer(json.array()), "application/json"))
  end)

  it("samples: a negative, absurd or unreadable value is an error naming the series", function()
    local function why(value, metric)
      local samples, problem = prometheus.samples(200, answer {
        { metric = { node = "a", state = "held" }, value = { 1755681164.5, "3600" } },
        { metric = metric or { namespace = "video", nomad_job = "worker", use = "idle" }, value = { 1755681164.5, value } },
      })
      assert.is_nil(samples)
      return problem
    end
    local series = 'HTTP 200: data.result[2] {namespace="video", nomad_job="worker", use="idle"}: '
    assert.equal(series .. "the value is -36000, want a number from 0 to 9007199254740992", why("-36000"))
    assert.equal(series .. "the value is 1e+308, want a number from 0 to 9007199254740992", why("1e308"))
    assert.equal(series .. 'the value is "x", want a number as text', why("x"))
    assert.equal(series .. "the value is a number, want a number as text", why(5))
    assert.equal("HTTP 200: data.result[2].metric.node is a number, want a string", why("1", { node = 5 }))
  end)

  it("samples: label values cut like every name; more than MAX_SERIES series refused, counted in the text", function()
    local long = ("n"):rep(3 * 1024 * 1024)
    local samples = prometheus.samples(200, answer { { metric = { namespace = long }, value = { 1, "3600" } } })
    assert.equal(text.NAME_MAX + #text.CUT_MARK, #samples[1].metric.namespace)
    local many = {}
    for i = 1, prometheus.MAX_SERIES + 1 do
      many[i] = { metric = { node = "n" .. i, state = "held" }, value = { 1, "1" } }
    end
    local none, why = prometheus.samples(200, answer(many))
    assert.is_nil(none)
    assert.equal(string.format("HTTP 200: data.result has %d series, more than the %d an answer may hold",
      prometheus.MAX_SERIES + 1, prometheus.MAX_SERIES), why)
    -- a label cannot fake a series: its quotes are escaped
    many[#many] = nil
    many[1].metric.node = '"value": [1, "2"] "value":['
    assert.equal(prometheus.MAX_SERIES, #prometheus.samples(200, answer(many)))
    -- an answer written with spaces counts the same
    local spaced = answer(many):gsub('"value":%[', '"value" : [')
    assert.equal(prometheus.MAX_SERIES, #prometheus.samples(200, spaced))
  end)

  it("samples: Prometheus' error JSON, with its status and type", function()
    local samples, why = prometheus.samples(422, '{"status":"error","errorType":"execution","error":"vector cannot contain metrics with the same labelset"}')
    assert.is_nil(samples)
    assert.equal("HTTP 422 execution: vector cannot contain metrics with the same labelset", why)
  end)

  it("samples: an answer that is not Prometheus' JSON says what came", function()
    local _, why = prometheus.samples(200, "<!DOCTYPE html>\n<html>", "text/html")
    assert.equal("HTTP 200: the answer is not Prometheus' JSON (text/html): <!DOCTYPE html>", why)
    _, why = prometheus.samples(401, "Unauthorized\n", "text/plain; charset=utf-8")
    assert.truthy(why:find("HTTP 401: the answer is not Prometheus' JSON (text/plain; charset=utf-8): Unauthorized — ", 1, true))
    assert.truthy(why:find("--prometheus-token-env", 1, true))
    _, why = prometheus.samples(200, '{"other":1}')
    assert.truthy(why:find("not Prometheus' JSON", 1, true))
  end)

  it("samples: a result that is not a vector", function()
    local _, why = prometheus.samples(200, '{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}')
    assert.equal("HTTP 200: want a vector result, got scalar", why)
  end)
end)
