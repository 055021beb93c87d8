-- Errors as values: {file, line, message} from where a rule raises to where
-- it is shown, the whole file name kept however long it is.
local H = require "helper"
local errors = require "gpuledger.errors"

local LONG = "/tmp/" .. string.rep("a-long-directory-name/", 6) .. "rules.d/moody.lua"

describe("gpuledger.errors", function()
  it("a raise at a line of a long-named chunk comes back with the whole file, the line and the bare message", function()
    local chunk = assert(load("local x = 1\nerror('no mood today')", "@" .. LONG, "t", { error = error }))
    local ok, err = H.core.call_limited(chunk, 0, 0)
    assert.is_false(ok)
    assert.same({ file = LONG, line = 2, message = "no mood today" }, errors.of_call(err))
    assert.equal(LONG .. ":2: no mood today", errors.text(errors.of_call(err)))
  end)

  it("a runtime error and a hook's stop are located the same way", function()
    local chunk = assert(load("local t = nil\nreturn t.x", "@" .. LONG, "t", {}))
    local _, err = H.core.call_limited(chunk, 0, 0)
    assert.equal(LONG, err.file)
    assert.equal(2, err.line)
    assert.matches("attempt to index a nil value", err.message)
    local spin = assert(load("\nwhile true do end", "@" .. LONG, "t", {}))
    _, err = H.core.call_limited(spin, 10000, 0)
    assert.same({ file = LONG, line = 2, message = "stopped after running past its budget of 10000 instructions" }, err)
  end)

  it("an error object that is not a string is named by its type, and no metamethod of it runs", function()
    local ran = false
    local object = setmetatable({}, { __tostring = function() ran = true return "x" end })
    local _, err = H.core.call_limited(function() error(object) end, 0, 0)
    assert.same({ message = "(error object is a table value)" }, err)
    assert.is_false(ran)
  end)

  it("a syntax error gives its whole file and its line", function()
    local _, why = load("local x =\n\nreturn", "@" .. LONG, "t", {})
    local err = errors.of_load(why, "@" .. LONG, LONG)
    assert.equal(LONG, err.file)
    assert.equal(3, err.line)
    assert.matches("unexpected symbol", err.message)
  end)

  it("reads as file:line: message, file: message, or the message alone", function()
    assert.equal("/r/a.lua:3: x", errors.text(errors.new("/r/a.lua", 3, "x")))
    assert.equal("/r/a.lua: x", errors.text(errors.new("/r/a.lua", nil, "x")))
    assert.equal("x", errors.text(errors.new(nil, nil, "x")))
    assert.equal("not enough memory", errors.text("not enough memory"))
  end)

  it("core.stat and core.read_file name the errno beside the message", function()
    local kind, why, errno = H.core.stat("/nonexistent/gpuledger")
    assert.is_nil(kind)
    assert.matches("/nonexistent/gpuledger", why)
    assert.equal("ENOENT", errno)
    local text, _, read_errno = H.core.read_file("/nonexistent/gpuledger", 10)
    assert.is_nil(text)
    assert.equal("ENOENT", read_errno)
  end)
end)
