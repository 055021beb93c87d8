-- serve's responses of one refresh: what core.serve swaps in.
local H = require "helper"
local serve = require "gpuledger.cmd.serve"
local history = require "gpuledger.history"

local function responses(ledger)
  local _, _, report = H.run_rules(ledger)
  return serve.responses(H.core, report, history.new(), { interval = 15, version = "dev" })
end

describe("gpuledger.cmd.serve responses", function()
  it("has every path with its status and content type", function()
    local r = responses(H.ledger { H.gpu { index = 0 } })
    local got = {}
    for path, response in pairs(r) do
      got[path] = response.status .. " " .. response.content_type
      assert.equal("string", type(response.body))
    end
    assert.same({
      ["/"] = "200 text/html; charset=utf-8",
      ["/style.css"] = "200 text/css; charset=utf-8",
      ["/metrics"] = "200 text/plain; version=0.0.4; charset=utf-8",
      ["/ledger"] = "200 application/json",
      ["/findings"] = "200 application/json",
      ["/healthz"] = "200 text/plain; charset=utf-8",
    }, got)
    assert.equal("ok\n", r["/healthz"].body)
    assert.truthy(r["/findings"].body:find('"worst":"OK"', 1, true))
    assert.truthy(r["/findings"].body:find('"code":"idle"', 1, true))
  end)

  it("answers 503 on /healthz with each source error on its line", function()
    local r = responses(H.ledger({}, { errors = { "docker: refused", "nomad: HTTP 403" } }))
    assert.equal(503, r["/healthz"].status)
    assert.equal("docker: refused\nnomad: HTTP 403\n", r["/healthz"].body)
    assert.truthy(r["/metrics"].body:find('gpuledger_up{node="gpud"} 0', 1, true))
  end)

  it("keeps a source error on one line of /healthz", function()
    local r = responses(H.ledger({}, { errors = { "docker: a\nb" } }))
    assert.equal(1, select(2, r["/healthz"].body:gsub("\n", "")))
  end)
end)
