-- What serve and fleet serve share: the answers of a refresh that failed.
local H = require "helper"
local server = require "gpuledger.server"

describe("server.failed_responses", function()
  it("answers 500 on each path, 503 on /healthz, the first line of the failure only, and still the stylesheet", function()
    local said, r = H.stderr_of(function()
      return server.failed_responses(H.core, "refresh", "boom\nstack traceback: here", { "/", "/metrics" })
    end)
    local body = "gpuledger: the last refresh failed: boom\n"
    assert.same({ status = 500, content_type = server.PLAIN, body = body }, r["/"])
    assert.same({ status = 500, content_type = server.PLAIN, body = body }, r["/metrics"])
    assert.same({ status = 503, content_type = server.PLAIN, body = body }, r["/healthz"])
    assert.equal(200, r["/style.css"].status)
    assert.equal("text/css; charset=utf-8", r["/style.css"].content_type)
    assert.matches("^gpuledger: refresh: boom", said) -- the whole failure is logged, as one line
    assert.matches("stack traceback: here\n$", said)
    assert.equal(1, select(2, said:gsub("\n", "")))
  end)
end)
