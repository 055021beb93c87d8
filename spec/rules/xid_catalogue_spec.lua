local H = require "helper"
local errors = require "gpuledger.errors"

-- The set's errors as people read them, sorted.
local function texts(set)
  local list = {}
  for i, err in ipairs(set.errors) do
    list[i] = errors.text(err)
  end
  table.sort(list)
  return list
end

describe("the Xid catalogue (rules/xid_catalogue.lua)", function()
  it("is data, not a rule, and loads without errors", function()
    local set = H.rule_set()
    assert.same({}, set.errors)
    assert.is_nil(H.rule(set, "xid-catalogue"))
    assert.is_table(set.xid_catalogue)
  end)

  it("classes every code of docs/health.md's table as NVIDIA's catalogue grades it", function()
    local catalogue = H.rule_set().xid_catalogue
    local want = {
      reset = { 46, 48, 62, 64, 74, 95, 109, 110, 119, 120, 136, 140, 143, 155, 156, 158, 167, 169, 171, 172 },
      reboot = { 54, 61, 79, 151, 159 },
      memory = { 63, 92, 94, 157 },
      app = { 8, 13, 31, 43, 68, 69, 121, 154 },
      ignore = { 45 },
    }
    for class, codes in pairs(want) do
      for _, code in ipairs(codes) do
        assert.equal(class, catalogue[code].class, "Xid " .. code)
        assert.is_string(catalogue[code].meaning)
        assert.is_string(catalogue[code].action)
      end
    end
    for code = 144, 150 do
      assert.same({ "reset", "app" }, { catalogue[code].class, catalogue[code].nonfatal }, "Xid " .. code)
    end
  end)

  it("makes an Xid 156 (resource retirement, reset to activate) in the kernel log an xid-fatal BAD", function()
    local json = require "gpuledger.json"
    local snap = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
    snap.sources.kernel_log.records = { { text = "NVRM: Xid (PCI:0000:01:00): 156, Resource retirement event", at = H.AT } }
    local found = H.with_code((H.run_rules(snap)), "xid-fatal")
    assert.equal(1, #found)
    assert.same({ "BAD", 0 }, { found[1].level, found[1].index })
    assert.matches("^Xid 156 %(resource retirement event %(a reset activates it%)%) this boot", found[1].message)
  end)

  it("takes a site's regrading field by field and its new codes", function()
    local set = H.site_rules { ["xid_catalogue.lua"] = [[
      return {
        [13] = { class = "ignore" },
        [200] = { class = "reset", meaning = "a code of our own", action = "call the vendor" },
      }
    ]] }
    assert.same({}, set.errors)
    assert.equal("ignore", set.xid_catalogue[13].class)
    assert.equal("graphics engine exception (usually an application bug)", set.xid_catalogue[13].meaning)
    assert.equal("a code of our own", set.xid_catalogue[200].meaning)
    assert.equal("reboot", set.xid_catalogue[79].class) -- untouched
  end)

  it("refuses a broken site entry, keeping the default, and names the file", function()
    local set = H.site_rules { ["xid_catalogue.lua"] = "return { [79] = { class = 'panic' }, [300] = { class = 'app' } }" }
    local said = texts(set)
    assert.equal(2, #said)
    assert.matches("xid_catalogue%.lua: Xid 300: meaning and action must be strings; the default stays$", said[1])
    assert.matches("xid_catalogue%.lua: Xid 79: class must be reset, reboot, memory, app or ignore; the default stays$", said[2])
    assert.equal("reboot", set.xid_catalogue[79].class)
    assert.is_nil(set.xid_catalogue[300])
  end)

  it("a site file that is not a table is an error; the defaults stay", function()
    local set = H.site_rules { ["xid_catalogue.lua"] = "return 42" }
    assert.same(1, #set.errors)
    assert.matches("xid_catalogue%.lua: returned a number, want a table of Xid codes", texts(set)[1])
    assert.equal("reboot", set.xid_catalogue[79].class)
  end)
end)
