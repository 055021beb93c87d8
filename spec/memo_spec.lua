local memo = require "gpuledger.memo"

describe("gpuledger.memo", function()
  -- A memo of upper-casing that counts what it made.
  local function counted()
    local made = {}
    local find, new_page = memo.new(function(s)
      made[#made + 1] = s
      return tostring(s):upper()
    end)
    return find, new_page, made
  end

  it("makes a text once however often the page asks for it", function()
    local find, _, made = counted()
    assert.equal("GPU0", find("gpu0"))
    assert.equal("GPU0", find("gpu0"))
    assert.same({ "gpu0" }, made)
  end)

  it("keeps the last page's texts for the next page, and drops those only older pages had", function()
    local find, new_page, made = counted()
    find("held")
    find("free")
    new_page()
    find("held") -- the last page's
    new_page()
    assert.equal("HELD", find("held")) -- asked for on the last page too: still kept
    assert.equal("FREE", find("free")) -- only two pages back: made again
    assert.same({ "held", "free", "free" }, made)
  end)

  it("makes a value that is not a string each time: 1 and 1.0 are not one text", function()
    local find, _, made = counted()
    assert.equal("1", find(1))
    assert.equal("1.0", find(1.0))
    assert.equal("1", find(1))
    assert.equal(3, #made)
    assert.equal(math.type(1.0), math.type(made[2]))
  end)
end)
