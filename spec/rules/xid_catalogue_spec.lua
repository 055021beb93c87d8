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
      memory = { 63, 92, 94, 157, 168 },
      app = { 8, 11, 13, 14, 25, 31, 32, 37, 38, 39, 40, 41, 43, 44, 60, 66, 67, 68, 69, 70, 71, 72, 75, 76, 77, 78, 80,
        82, 83, 84, 85, 86, 88, 89, 93, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 121, 126, 127, 128, 129, 130, 131,
        132, 133, 134, 135, 137, 139, 141, 142, 152, 153, 154, 160, 161, 163, 164, 165 },
      ignore = { 45, 106, 107, 162 },
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
    for _, code in ipairs { 1, 42, 87, 108, 138, 166, 170, 173, 177 } do -- Unused, no action in the catalogue, or not in it
      assert.is_nil(catalogue[code], "Xid " .. code)
    end
  end)

  -- The Xid findings of one kernel-log line on the demo's first GPU, as "code LEVEL" texts.
  local function xid_findings(line)
    local json = require "gpuledger.json"
    local snap = json.decode(json.encode(require("gpuledger.snapshot").demo(H.core)))
    snap.sources.kernel_log.records = { { text = line, at = H.AT } }
    local said = {}
    for _, finding in ipairs((H.run_rules(snap))) do
      if finding.code:match("^xid%-") then
        said[#said + 1] = finding.code .. " " .. finding.level .. " " .. finding.message
      end
    end
    return said
  end

  -- Each code's Xid line gives the finding want[code] says ({finding, level,
  -- meaning, start of the action}), or none where want has no entry.
  local function assert_grades(codes, want)
    for _, code in ipairs(codes) do
      local said = xid_findings(string.format("NVRM: Xid (PCI:0000:01:00): %d, pid=4242, name=python3, event", code))
      local w = want[code]
      if w then
        assert.equal(1, #said, "Xid " .. code)
        assert.equal(string.format("%s %s Xid %d (%s) this boot", w[1], w[2], code, w[3]), said[1]:match("^(.- this boot)"))
        assert.truthy(said[1]:find(" — " .. w[4], 1, true), said[1])
      else
        assert.same({}, said, "Xid " .. code)
      end
    end
  end

  it("grades the codes after 161 by what the catalogue says of them", function()
    local UNLISTED = { "an Xid this catalogue does not list", "look the code up in NVIDIA's Xid catalogue" }
    local want = { -- code → {finding, level, meaning, start of the action}; 162 gives none
      [163] = { "xid-app", "WARN", "power smoothing circuitry disengaged", "no reset needed" },
      [164] = { "xid-app", "WARN", "power smoothing circuitry near the end of its lifetime", "watch the power swings" },
      [165] = { "xid-app", "WARN", "power smoothing circuitry lifetime exhausted (smoothing is off, power swings)", "check the datacenter" },
      [166] = { "xid-app", "WARN", table.unpack(UNLISTED) },
      [168] = { "xid-memory", "WARN", "reduced GPU memory capacity (errors in the write-protected region)", "enable ECC" },
      [170] = { "xid-app", "WARN", table.unpack(UNLISTED) },
      [173] = { "xid-app", "WARN", table.unpack(UNLISTED) },
    }
    assert_grades({ 162, 163, 164, 165, 166, 168, 170, 173 }, want)
  end)

  it("grades the codes before 160 that NVIDIA documents by its resolution, an Unused one still unlisted", function()
    local want = { -- code → {finding, level, meaning, start of the action}; 106 gives none
      [11] = { "xid-app", "WARN", "invalid or corrupted push buffer stream", "restart the application" },
      [32] = { "xid-app", "WARN", "invalid or corrupted push buffer stream (a DMA fault, usually the PCIe link's quality)",
        "restart the application; if it repeats, check the card's PCIe link" },
      [39] = { "xid-app", "WARN", "copy engine exception (CE0)", "restart the application" },
      [44] = { "xid-app", "WARN", "graphics engine fault during a context switch", "watch it; if it repeats, contact support" },
      [78] = { "xid-app", "WARN", "vGPU start error", "update the NVIDIA driver" },
      [93] = { "xid-app", "WARN", "InfoROM wear limit reached (the driver could not update the InfoROM)", "clear the InfoROM erase limit" },
      [101] = { "xid-app", "WARN", "JPEG decoder error (NVJPG3)", "restart the application" },
      [137] = { "xid-app", "WARN", "NVLink privilege error (an illegal peer-to-peer access over NVLink, usually an application bug)",
        "tell the job's owner" },
      [142] = { "xid-app", "WARN", "video encoder error (NVENC3)", "contact support" },
      [42] = { "xid-app", "WARN", "an Xid this catalogue does not list", "look the code up in NVIDIA's Xid catalogue" },
    }
    assert_grades({ 11, 32, 39, 42, 44, 78, 93, 101, 106, 137, 142 }, want)
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
