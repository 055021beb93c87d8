local H = require "helper"
local text = require "gpuledger.text"

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
end)
