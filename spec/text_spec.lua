local H = require "helper"
local text = require "gpuledger.text"
local json = require "gpuledger.json"

describe("gpuledger.text", function()
  describe("valid_utf8", function()
    it("keeps valid UTF-8 as it is", function()
      assert.equal("°C — ok", text.valid_utf8("°C — ok"))
    end)

    it("replaces each invalid byte with U+FFFD", function()
      assert.equal("a\u{FFFD}b\u{FFFD}", text.valid_utf8("a\xffb\xc3"))
    end)

    it("tells bad UTF-8 as Lua's utf8.len does: cut short, overlong, surrogates, past U+10FFFF", function()
      for input, want in pairs(H.UTF8_CASES) do
        assert.equal(want, text.valid_utf8(input), string.format("%q", input))
      end
    end)

    it("gives valid UTF-8 for every string of one or two bytes, and a valid one back as it is", function()
      local R = "\u{FFFD}"
      local strings = {}
      for a = 0, 255 do
        strings[#strings + 1] = string.char(a)
        for b = 0, 255 do
          strings[#strings + 1] = string.char(a, b)
        end
      end
      local wrong = {}
      for _, s in ipairs(strings) do
        local out = text.valid_utf8(s)
        if utf8.len(s) then
          if out ~= s then
            wrong[#wrong + 1] = string.format("%q changed", s)
          end
        elseif not utf8.len(out) or (#out - #s) % 2 ~= 0 or not out:find(R, 1, true) then
          wrong[#wrong + 1] = string.format("%q -> %q", s, out)
        end
      end
      assert.same({}, wrong)
      assert.equal(256 + 65536, #strings)
    end)
  end)

  describe("spans", function()
    it("is true when the run covers the whole text, the empty text too", function()
      assert.is_true(text.spans("abc ~", "^[ -~]*"))
      assert.is_true(text.spans("", "^[ -~]*"))
      assert.is_false(text.spans("ab\ncd", "^[ -~]*"))
      assert.is_false(text.spans("ab—", "^[ -~]*"))
    end)
  end)

  describe("printable", function()
    it("strips an ANSI escape sequence of its ESC", function()
      local out = text.printable("evil\27[2Jname")
      assert.is_nil(out:find("\27", 1, true))
      assert.equal("evil\u{FFFD}[2Jname", out)
    end)

    it("turns newlines, tabs and DEL into U+FFFD", function()
      assert.equal("a\u{FFFD}b\u{FFFD}c\u{FFFD}", text.printable("a\nb\tc\127"))
    end)

    it("turns C1 control characters into U+FFFD", function()
      assert.equal("x\u{FFFD}y", text.printable("x\u{9B}y"))
    end)

    it("turns the bidirectional controls into U+FFFD, other punctuation stays", function()
      assert.equal("a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e — f", text.printable("a\u{202A}b\u{202E}c\u{2066}d\u{2069}e — f"))
    end)

    it("finds a control after punctuation that starts with the same bytes", function()
      assert.equal("a — b · c \u{FFFD}d \u{FFFD}e \u{FFFD}f", text.printable("a — b · c \u{202E}d \u{2067}e \u{85}f"))
    end)

    it("keeps multibyte text and makes invalid bytes U+FFFD", function()
      assert.equal("gpu · 61 °C \u{FFFD}", text.printable("gpu · 61 °C \xff"))
    end)

    it("accepts numbers", function()
      assert.equal("42", text.printable(42))
    end)
  end)

  describe("width and pad", function()
    it("counts characters, not bytes", function()
      assert.equal(5, text.width("61 °C"))
      assert.equal(1, text.width("—"))
    end)

    it("pads by characters", function()
      assert.equal("°C   ", text.pad("°C", 5))
      assert.equal(5, text.width(text.pad("—", 5)))
    end)

    it("leaves a string already wider than the column alone", function()
      assert.equal("abcdef", text.pad("abcdef", 3))
    end)
  end)

  describe("trim", function()
    it("trims blanks at both ends only", function()
      assert.equal("a b", text.trim(" \t a b \r\n"))
    end)
  end)

  describe("cut", function()
    it("keeps a string within the bound", function()
      assert.equal("abc", text.cut("abc", 3))
    end)

    it("cuts a longer one and marks it", function()
      assert.equal("ab" .. text.CUT_MARK, text.cut("abcdef", 2))
    end)

    it("never cuts a character in half", function()
      assert.equal("a" .. text.CUT_MARK, text.cut("aé", 2))
      assert.equal("aé" .. text.CUT_MARK, text.cut("aéz", 3))
    end)
  end)

  -- text.cut and text.cut_strings are C's now; the Lua rule they replaced,
  -- written here as it was, is what they must agree with.
  describe("cut and cut_strings, against the Lua rule they replaced", function()
    local function lua_cut(s, max)
      if #s <= max then
        return s
      end
      local keep = max
      while keep > 0 and (s:byte(keep + 1) & 0xC0) == 0x80 do
        keep = keep - 1
      end
      return s:sub(1, keep) .. "…[cut]"
    end

    local function lua_cut_in(t, max, drop)
      for k, v in next, t do
        local kind = type(v)
        if kind == "string" then
          if #v > max then
            t[k] = lua_cut(v, max)
          end
        elseif kind == "table" then
          lua_cut_in(v, max, drop)
        elseif drop ~= nil and v == drop then
          t[k] = nil
        end
      end
    end

    local function lua_cut_strings(value, max, drop)
      if type(value) == "string" then
        return lua_cut(value, max)
      elseif drop ~= nil and value == drop then
        return nil
      elseif type(value) == "table" then
        lua_cut_in(value, max, drop)
      end
      return value
    end

    -- Characters of 1 to 4 bytes, stray continuation bytes and a bad lead.
    local PIECES = { "a", "Z", "é", "€", "😀", "\x80", "\xBF", "\xFF", "…", " " }
    local function random_string(random)
      return H.random_string(random, PIECES)
    end

    -- A random table: strings, numbers, booleans, json.NULL and tables at
    -- any depth, under integer and string keys, some tables in two places;
    -- some marked json.array().
    local function random_value(random, depth, shared)
      local kind = random(depth > 4 and 5 or 8)
      if kind <= 2 then
        return random_string(random)
      elseif kind == 3 then
        return ({ 1, 2.5, true, false })[random(4)]
      elseif kind == 4 then
        return json.NULL
      elseif kind == 5 and #shared > 0 then
        return shared[random(#shared)]
      end
      local t = random(3) == 1 and json.array() or {}
      for i = 1, random(0, 5) do
        local key = random(2) == 1 and i or random_string(random)
        t[key ~= "" and key or i] = random_value(random, depth + 1, shared)
      end
      shared[#shared + 1] = t
      return t
    end

    -- A copy of value, each table once (a table in two places is so in the
    -- copy), marks kept.
    local function copied(value, seen)
      if type(value) ~= "table" then
        return value
      end
      if not seen[value] then
        seen[value] = setmetatable({}, getmetatable(value))
        for k, v in next, value do
          seen[value][k] = copied(v, seen)
        end
      end
      return seen[value]
    end

    it("cuts each random string at each length as the Lua rule does", function()
      local random = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 31)
      for _ = 1, 5000 do
        local s, max = random_string(random), random(0, 12)
        assert(lua_cut(s, max) == text.cut(s, max), string.format("cutting %q at %d", s, max))
      end
    end)

    it("gives the same tables on thousands of random ones, shared tables and nulls among them", function()
      local random = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 32)
      for _ = 1, 3000 do
        local value = random_value(random, 0, {})
        local max, drop = random(0, 10), random(2) == 1 and json.NULL or nil
        local want = lua_cut_strings(copied(value, {}), max, drop)
        local got = text.cut_strings(copied(value, {}), max, drop)
        assert(H.same_tree(want, got), string.format("cutting at %d, drop %s", max, tostring(drop)))
      end
    end)

    it("refuses a table that contains itself with a stack overflow, as the Lua walk did", function()
      local t = { s = "abcdef" }
      t.self = t
      assert.has_error(function() lua_cut_strings(t, 4) end)
      local ok, why = pcall(text.cut_strings, t, 4)
      assert.is_false(ok)
      assert.matches("stack overflow", why)
    end)
  end)
end)
