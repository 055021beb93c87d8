-- The rule set a server keeps across SIGHUPs: a broken set refused with
-- its errors kept as the set's extra errors, a good one taken.
local H = require "helper"
local served_rules = require "gpuledger.served_rules"

describe("served_rules", function()
  local dir
  before_each(function()
    dir = H.tempdir()
    H.write(dir .. "/site_check.lua", 'return { code = "site-check", level = "WARN", evaluate = function() end }')
  end)
  after_each(function()
    H.remove(dir)
  end)

  it("refuses a broken set on reload, keeping the last good one and its errors until a good reload", function()
    local served
    assert.equal("", H.stderr_of(function()
      served = served_rules.load(H.core, dir, {})
    end))
    local good = served.sources
    assert.is_nil(served.refused())

    H.write(dir .. "/broken.lua", "return {")
    local said = H.stderr_of(served.reload)
    assert.matches("SIGHUP: the rules in " .. dir:gsub("%p", "%%%0") .. " have 1 error%(s%); keeping the last good rule set", said)
    assert.matches("rule%-error: .*broken%.lua", said)
    assert.equal(good, served.sources)
    local refused = served.refused()
    assert.equal(1, #refused)
    assert.matches("^SIGHUP reload refused, the last good rule set stays in use: .*broken%.lua", refused[1])

    os.remove(dir .. "/broken.lua")
    said = H.stderr_of(served.reload)
    assert.matches("SIGHUP: reloaded the rule set from " .. dir:gsub("%p", "%%%0"), said)
    assert.are_not.equal(good, served.sources)
    assert.is_nil(served.refused())
  end)

  it("says the errors of the set it starts with", function()
    H.write(dir .. "/broken.lua", "return {")
    local said = H.stderr_of(function()
      served_rules.load(H.core, dir, {})
    end)
    assert.matches("^gpuledger: rule%-error: .*broken%.lua", said)
  end)
end)
