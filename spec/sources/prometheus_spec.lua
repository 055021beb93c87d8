local prometheus = require "gpuledger.sources.prometheus"
local json = require "gpuledger.json"

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

  it("queries: report's two, over the window", function()
    local q = prometheus.queries("7d")
    assert.equal("sum by (namespace, nomad_job, use) (increase(gpuledger_job_gpu_seconds_total[7d]))", q.jobs)
    assert.equal("sum by (node, state) (increase(gpuledger_gpu_state_seconds_total[7d]))", q.nodes)
  end)

  it("query_path: the query percent-encoded", function()
    assert.equal("/api/v1/query?query=sum%20by%20%28node%29%20%28x%5B7d%5D%29", prometheus.query_path("sum by (node) (x[7d])"))
  end)

  local function answer(result)
    return json.encode { status = "success", data = { resultType = "vector", result = result } }
  end

  it("samples: metric and value; NaN, Inf and unparsable values left out", function()
    local samples = prometheus.samples(200, answer {
      { metric = { node = "a", state = "held" }, value = { 1755681164.5, "3600" } },
      { metric = { node = "a", state = "free" }, value = { 1755681164.5, "NaN" } },
      { metric = { node = "a", state = "free" }, value = { 1755681164.5, "+Inf" } },
      { metric = { node = "b", state = "free" }, value = { 1755681164.5, "1.5e-07" } },
      { metric = { node = "c" }, value = { 1755681164.5, "x" } },
    }, "application/json")
    assert.same({ { metric = { node = "a", state = "held" }, value = 3600 },
                  { metric = { node = "b", state = "free" }, value = 1.5e-07 } }, samples)
    assert.same({}, prometheus.samples(200, answer(json.array()), "application/json"))
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
