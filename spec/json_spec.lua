local H = require "helper"
local json = require "gpuledger.json"
local sandbox = require "gpuledger.sandbox"

describe("gpuledger.json", function()
  describe("encode", function()
    it("writes an empty marked array as []", function()
      assert.equal("[]", json.encode(json.array()))
    end)

    it("writes an array marked by another copy of the module as an array", function()
      -- a site's --scripts directory gives the renderers' child a copy of its own
      local source = os.getenv("GPULEDGER_SOURCE_DIR") .. "/lua/gpuledger/json.lua"
      local other = assert(loadfile(source))()
      assert.equal("[]", json.encode(other.array()))
      assert.equal('{"tenants":[]}', other.encode({ tenants = json.array() }))
    end)

    it("writes an empty unmarked table as {}", function()
      assert.equal("{}", json.encode({}))
    end)

    it("writes a sequence as an array", function()
      assert.equal('[1,"a",true]', json.encode({ 1, "a", true }))
    end)

    it("writes object keys in sorted order", function()
      assert.equal('{"a":1,"b":2,"c":{"x":1,"y":2}}', json.encode({ c = { y = 2, x = 1 }, b = 2, a = 1 }))
    end)

    it("escapes <, > and & the way Go does", function()
      assert.equal('"\\u003cscript\\u003e \\u0026"', json.encode("<script> &"))
    end)

    it("escapes U+2028 and U+2029", function()
      assert.equal('"a\\u2028b\\u2029"', json.encode("a\u{2028}b\u{2029}"))
    end)

    it("escapes quotes, backslashes and control characters", function()
      assert.equal('"\\"\\\\\\n\\t\\u001b"', json.encode('"\\\n\t\27'))
    end)

    it("keeps valid UTF-8 (—, °C) as it is", function()
      assert.equal('"61 °C — ok"', json.encode("61 °C — ok"))
    end)

    it("writes invalid UTF-8 as U+FFFD", function()
      assert.equal('"a\u{FFFD}b"', json.encode("a\xffb"))
    end)

    it("writes integers plainly and whole floats without a fraction", function()
      assert.equal("35", json.encode(35))
      assert.equal("35", json.encode(35.0))
      assert.equal("-3", json.encode(-3.0))
    end)

    it("writes floats in their shortest form", function()
      assert.equal("0.1", json.encode(0.1))
      assert.equal("38.42", json.encode(38.42))
      assert.equal("59.9", json.encode(59.9))
    end)

    it("writes booleans", function()
      assert.equal('{"a":false,"b":true}', json.encode({ a = false, b = true }))
    end)

    it("indents when asked, one level per nesting", function()
      assert.equal('{\n  "a": [\n    1\n  ]\n}', json.encode({ a = { 1 } }, "  "))
    end)

    it("refuses a table that contains itself", function()
      local t = {}
      t.self = t
      assert.has_error(function() json.encode(t) end)
    end)

    it("refuses a function", function()
      assert.has_error(function() json.encode({ f = print }) end)
    end)

    -- The error a call raised, as its message is (no position is added).
    local function error_of(...)
      local ok, err = pcall(json.encode, ...)
      assert.is_false(ok)
      return err
    end

    it("says which table contains itself, however far down, and writes a table met twice side by side", function()
      local t = { a = { b = {} } }
      t.a.b.back = t
      assert.equal("json: cannot encode a table that contains itself", error_of(t))
      local list = json.array()
      list[1] = list
      assert.equal("json: cannot encode a table that contains itself", error_of(list))
      local shared = { 1 }
      assert.equal('[[1],{"x":[1]}]', json.encode({ shared, { x = shared } }))
    end)

    it("writes json.NULL, a null a list keeps in its place, as null", function()
      assert.equal("[1,null,3]", json.encode(json.array { 1, json.NULL, 3 }))
      local back = json.decode(json.encode(json.array { 1, json.NULL, 3 }))
      assert.same({ 1, nil, 3 }, { back[1], back[2], back[3] })
    end)

    it("names the type it cannot encode", function()
      assert.equal("json: cannot encode a function", error_of({ f = print }))
      assert.equal("json: cannot encode a userdata", error_of({ io.stdout }))
      assert.equal("json: cannot encode a thread", error_of(coroutine.create(print)))
    end)

    -- A table nested n deep: { { { ... } } } with "x" at the bottom.
    local function nested(n)
      local t = "x"
      for _ = 1, n do
        t = { t }
      end
      return t
    end

    it("writes tables nested 1000 deep, and refuses deeper ones with an error, not a crash", function()
      assert.equal(("["):rep(1000) .. '"x"' .. ("]"):rep(1000), json.encode(nested(1000)))
      assert.equal("json: cannot encode tables nested more than 1000 deep", error_of(nested(1001)))
      assert.equal("json: cannot encode tables nested more than 1000 deep", error_of(nested(200000)))
    end)

    it("writes the control characters, DEL among them, as escapes", function()
      assert.equal('"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\u007f "', json.encode("\0\1\b\t\n\v\f\r\31\127 "))
      assert.equal('"a\\u0000b"', json.encode("a\0b"))
    end)

    it("escapes U+2028 and U+2029 in keys too, and keeps the characters around them", function()
      assert.equal('{"k\\u2028":"\\u2029\u{2027}\u{202A}"}', json.encode({ ["k\u{2028}"] = "\u{2029}\u{2027}\u{202A}" }))
    end)

    it("writes each byte that begins no valid UTF-8 character as U+FFFD (text.valid_utf8's rule)", function()
      assert.equal('"a\u{FFFD}\\u003c\u{1F600}"', json.encode("a\xff<\xf0\x9f\x98\x80"))
      for input, valid in pairs(H.UTF8_CASES) do
        assert.equal(json.encode(valid), json.encode(input), string.format("%q", input))
      end
    end)

    it("writes a float that is a whole number under 1e15 as an integer, others in their shortest form", function()
      local cases = {
        { -0.0, "0" }, { 0.0, "0" }, { 1e15 - 1, "999999999999999" }, { -(1e15 - 1), "-999999999999999" },
        { 1e15, "1e+15" }, { 1e16, "1e+16" }, { 2 ^ 53, "9007199254740992" }, { 2 ^ 63, "9.223372036854776e+18" },
        { 0.1, "0.1" }, { 1 / 3, "0.3333333333333333" }, { 2 / 3, "0.6666666666666666" }, { 1e-7, "1e-07" },
        { 5e-324, "4.94065645841247e-324" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
        { 1000000000000000.5, "1000000000000000.5" }, { 123456789.125, "123456789.125" },
      }
      for _, case in ipairs(cases) do
        assert.equal(case[2], json.encode(case[1]), string.format("%.17g", case[1]))
        assert.equal(case[1], tonumber(json.encode(case[1])))
      end
    end)

    it("writes any float as the first of %.15g and %.16g that reads back, else %.17g", function()
      local function reference(n)
        for _, precision in ipairs { 15, 16 } do
          local text = string.format("%." .. precision .. "g", n)
          if tonumber(text) == n then
            return text
          end
        end
        return string.format("%.17g", n)
      end
      local seed = 12345
      local function random(below) -- a fixed sequence, the same at every run
        seed = (seed * 1103515245 + 12345) % 2147483648
        return seed % below
      end
      local values = { 0.0001, 0.00009999, 0.000123456, 1e14 + 0.5, 999999999999999.9, 0.3, 20.246000051498413 }
      for _ = 1, 2000 do
        local decimal = random(1 << 31) / 10 ^ random(9) -- a value of a few decimal places, and ones near it
        local bits = string.unpack("<d", string.pack("<I4I4", random(1 << 31) * 2 + random(2), random(1 << 31) * 2 + random(2)))
        for _, n in ipairs { decimal, -decimal, decimal * 1.0000001, decimal + 1e-9, 1764403200 + decimal % 1000, bits } do
          values[#values + 1] = n
        end
      end
      local wrong = {}
      for _, n in ipairs(values) do
        if n == n and n ~= math.floor(n) and json.number_text(n) ~= reference(n) then
          wrong[#wrong + 1] = string.format("%.17g: %s, not %s", n, json.number_text(n), reference(n))
        end
      end
      assert.same({}, wrong)
    end)

    it("gives an integer's number_text as tostring writes it", function()
      for _, n in ipairs { 0, 7, -7, 1234567890123456789, math.maxinteger, math.mininteger } do
        assert.equal(tostring(n), json.number_text(n))
      end
    end)

    it("writes integers whole, the largest and smallest too", function()
      assert.equal("9223372036854775807", json.encode(math.maxinteger))
      assert.equal("-9223372036854775808", json.encode(math.mininteger))
      assert.equal("[0,-1,1234567890123456789]", json.encode({ 0, -1, 1234567890123456789 }))
    end)

    it("writes NaN and the infinities as null (number_text as %.17g writes them)", function()
      assert.equal("[null,null,null]", json.encode(json.array { 0 / 0, math.huge, -math.huge }))
      assert.equal("inf", json.number_text(math.huge))
      assert.equal("-inf", json.number_text(-math.huge))
      assert.equal("35", json.number_text(35))
      assert.equal("98.5", json.number_text(98.5))
    end)

    it("writes nil as null", function()
      assert.equal("null", json.encode(nil))
    end)

    it("writes empty arrays nested in arrays and objects as []", function()
      assert.equal("[[],[[]],{}]", json.encode(json.array { json.array(), json.array { json.array() }, {} }))
      assert.equal('{"a":[],"b":{"c":[]}}', json.encode({ a = json.array(), b = { c = json.array() } }))
    end)

    it("writes a table with keys besides 1..n as an object, number keys as tostring writes them", function()
      assert.equal('{"1":"a","2":"b","x":true}', json.encode({ "a", "b", x = true }))
      assert.equal('{"1":"a","3":"c"}', json.encode({ [1] = "a", [3] = "c" }))
      assert.equal('{"-1":0,"0":1,"10":2,"2":3,"2.5":4}', json.encode({ [-1] = 0, [0] = 1, [10] = 2, [2] = 3, [2.5] = 4 }))
    end)

    it("sorts keys byte by byte, a prefix first", function()
      assert.equal('{"":1,"A":2,"a":3,"a\\u0000":4,"ab":5,"é":6}', json.encode({ ["é"] = 6, ab = 5, ["a\0"] = 4, a = 3, A = 2, [""] = 1 }))
    end)

    it("sorts the keys of small and large objects alike, shared first bytes and prefixes too", function()
      for _, count in ipairs({ 2, 23, 24, 25, 200 }) do
        local value, keys = {}, {}
        for i = count, 1, -1 do
          local key = (i % 3 == 0 and "k" or "j") .. string.rep("x", i % 4) .. i
          value[key] = i
          keys[#keys + 1] = key
        end
        table.sort(keys)
        local members = {}
        for i, key in ipairs(keys) do
          members[i] = string.format("%q:%d", key, value[key])
        end
        assert.equal("{" .. table.concat(members, ",") .. "}", json.encode(value))
      end
    end)

    it("writes only the items 1..n of a marked array", function()
      assert.equal('["a","b"]', json.encode(json.array { "a", "b", x = 1 }))
    end)

    it("indents arrays and objects at every level, empty ones on one line", function()
      local value = { a = json.array { 1, { b = json.array() } }, c = {}, d = "x" }
      assert.equal('{\n  "a": [\n    1,\n    {\n      "b": []\n    }\n  ],\n  "c": {},\n  "d": "x"\n}', json.encode(value, "  "))
      assert.equal('[\n\t1,\n\t2\n]', json.encode({ 1, 2 }, "\t"))
      assert.equal('{\n"a": 1\n}', json.encode({ a = 1 }, ""))
    end)

    it("leaves out the keys omit names, at every level, but not array items", function()
      local value = { a = 1, b = { a = 2, c = 3 }, list = json.array { "a", { a = 4 } } }
      assert.equal('{"b":{"c":3},"list":["a",{}]}', json.encode(value, nil, { a = true }))
      assert.equal('{\n "b": {\n  "c": 3\n }\n}', json.encode({ a = 1, b = { c = 3 } }, " ", { a = true }))
    end)

    it("writes a read-only view of the sandbox as the table behind it", function()
      local ledger = { node = "n", entries = json.array { { index = 0, tenants = json.array { { pids = { 1, 2 } } } } }, at = 1.5 }
      assert.equal(json.encode(ledger), json.encode(sandbox.readonly(ledger)))
      assert.equal('{"at":1.5,"entries":[{"index":0,"tenants":[{"pids":[1,2]}]}],"node":"n"}', json.encode(sandbox.readonly(ledger)))
    end)
  end)

  describe("encode and decode", function()
    -- Random values JSON holds: valid UTF-8 strings (keys too), integers
    -- under 1e15 (lua-cjson reads numbers as floats, and a float from 1e15
    -- up is written with an exponent), floats, booleans, arrays (marked or
    -- not) and objects, a few levels deep.
    local PIECES = { "a", "Z", "0", " ", '"', "\\", "/", "<", ">", "&", "\n", "\t", "\0", "\31", "\127", "é", "—",
      "\u{2028}", "\u{2029}", "\u{FFFD}", "\u{1F600}", "\u{10FFFF}", "1" }

    local function random_string(random)
      return H.random_string(random, PIECES)
    end

    local function random_value(random, depth)
      local kind = random(depth >= 4 and 4 or 7)
      if kind == 1 then
        return random_string(random)
      elseif kind == 2 then
        return random(-999999999999999, 999999999999999)
      elseif kind == 3 then
        local floats = { 0.1, -2.5, 1e15, 1e-300, 1e300, 123.456, 1 / 3 }
        return random(2) == 1 and floats[random(#floats)] or (random() - 0.5) * 10 ^ random(-30, 30)
      elseif kind == 4 then
        return random(2) == 1
      elseif kind == 5 or kind == 6 then
        local list = kind == 5 and json.array() or {}
        for i = 1, random(kind == 5 and 0 or 1, 4) do
          list[i] = random_value(random, depth + 1)
        end
        return list
      end
      local object = {}
      for _ = 1, random(0, 4) do
        object[random_string(random) .. "k"] = random_value(random, depth + 1)
      end
      return object
    end

    it("reads back what it wrote, and writes that again byte for byte", function()
      local generator = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 21)
      for _ = 1, tonumber(os.getenv("GPULEDGER_FUZZ_CASES")) or 300 do
        local value = random_value(generator, 0)
        local text = json.encode(value)
        assert.same(value, json.decode(text), text)
        assert.equal(text, json.encode(json.decode(text)))
        assert.same(value, json.decode(json.encode(value, "  ")), text)
      end
    end)
  end)

  describe("decode", function()
    it("round-trips what encode writes", function()
      local value = { a = { 1, 2, 3 }, b = "x<y", c = { d = 0.5, e = true }, f = "°C" }
      assert.same(value, json.decode(json.encode(value)))
    end)

    it("strips JSON null, so a null array reads as absent", function()
      local doc = json.decode('{"tenants":null,"x":{"y":null,"z":1}}')
      assert.is_nil(doc.tenants)
      assert.is_nil(doc.x.y)
      assert.equal(1, doc.x.z)
    end)

    it("reads an empty array as an array, so it is written back as [] (and {} as {})", function()
      local text = '{"DeviceRequests":[],"Env":[ ],"Labels":{},"a":[[],{"b":[\n]}],"s":"[]"}'
      local doc = json.decode(text)
      assert.is_true(json.is_array(doc.DeviceRequests))
      assert.is_false(json.is_array(doc.Labels))
      assert.equal('{"DeviceRequests":[],"Env":[],"Labels":{},"a":[[],{"b":[]}],"s":"[]"}', json.encode(doc))
      assert.is_true(json.is_array(json.decode("[]")))
      assert.equal("[]", json.encode(json.decode(" [ ] ")))
    end)

    it("leaves [] inside strings alone, escaped quotes and backslashes included", function()
      local text = '{"a":"x\\"[]","b":"\\\\","c":[],"d":"[ ]\\\\[]"}'
      local doc = json.decode(text)
      assert.equal('x"[]', doc.a)
      assert.equal("\\", doc.b)
      assert.equal("[ ]\\[]", doc.d)
      assert.is_true(json.is_array(doc.c))
    end)

    it("tells strings from arrays across long texts without quotes, as rendered pages are", function()
      local page = string.rep("<td>[ ]</td>", 2000)
      local text = '{"html":"' .. page .. '","quoted":"a \\"[ ]\\" b","a":[ ],"tail":"' .. page .. '"}'
      local doc = json.decode(text)
      assert.equal(page, doc.html)
      assert.equal('a "[ ]" b', doc.quoted)
      assert.is_true(json.is_array(doc.a))
      assert.equal(page, doc.tail)
    end)

    it("reads a compact document's empty arrays as arrays, a [] in a key or string and odd arrays alike", function()
      local doc = json.decode('{"a":[],"b":[[],{}],"c":{"d":[]},"e":null}')
      assert.equal('{"a":[],"b":[[],{}],"c":{"d":[]}}', json.encode(doc))
      assert.is_true(json.is_array(doc.c.d))
      local text = '{"k[]":[],"s":"a[]b","t":[true,null,false,null,true],"u":[1,null]}'
      assert.equal('{"k[]":[],"s":"a[]b","t":{"1":true,"3":false,"5":true},"u":[1]}', json.encode(json.decode(text)))
      assert.equal('[{"x":[]}]', json.encode(json.decode('[{"x":[]}]')))
    end)

    it("says why a text is not JSON", function()
      local value, err = json.decode("{not json")
      assert.is_nil(value)
      assert.is_string(err)
      assert.matches("character", err)
    end)

    it("reads a document that is only a string, a number or a boolean", function()
      assert.equal("x", json.decode('"x"'))
      assert.equal(1.5, json.decode("1.5"))
      assert.is_true(json.decode("true"))
      assert.is_false(json.decode("false"))
      assert.is_false(json.decode(" false "))
    end)

    it("refuses a document that is only null", function()
      local value, err = json.decode("null")
      assert.is_nil(value)
      assert.is_string(err)
    end)
  end)

  -- json.decode's marking of empty arrays and its walk are C's now; the Lua
  -- rule they replaced, written here as it was, is what they must agree with:
  -- each empty array outside a string written as a one-element array of a
  -- private-use string (found by counting the quotes before it, escapes
  -- aside), then cjson's nulls taken out and each such array made a
  -- json.array() by a walk of the decoded value.
  describe("decode, against the Lua rule it replaced", function()
    local MARK = "\u{F8FF}gpuledger-empty-array"
    local MARK_TEXT = '["' .. MARK .. '"]'

    local function unescaped(s)
      local parts, from = {}, 1
      local at = s:find("\\", 1, true)
      while at do
        parts[#parts + 1] = s:sub(from, at - 1) .. (at < #s and "\1\1" or "\1")
        from = at + 2
        at = s:find("\\", from, true)
      end
      parts[#parts + 1] = s:sub(from)
      return table.concat(parts)
    end

    local function lua_marked(s)
      local plain = unescaped(s)
      local parts, from, counted, in_string = {}, 1, 1, false
      local open, close = plain:find("%[%s*%]")
      while open do
        local _, quotes = plain:sub(counted, open - 1):gsub('"', "")
        in_string = in_string ~= (quotes % 2 == 1)
        counted = open
        if not in_string then
          parts[#parts + 1] = s:sub(from, open - 1) .. MARK_TEXT
          from = close + 1
        end
        open, close = plain:find("%[%s*%]", close + 1)
      end
      parts[#parts + 1] = s:sub(from)
      return table.concat(parts)
    end

    local function is_mark(v)
      return #v == 1 and v[1] == MARK and next(v, next(v)) == nil
    end

    local function lua_normalised(value)
      if type(value) ~= "table" then
        return value
      end
      if is_mark(value) then
        return json.array()
      end
      local function walk(t)
        for k, v in pairs(t) do
          if v == json.NULL then
            t[k] = nil
          elseif type(v) == "table" then
            if is_mark(v) then
              t[k] = json.array()
            else
              walk(v)
            end
          end
        end
      end
      walk(value)
      return value
    end

    local function lua_decode(s)
      local value, why = json.decode_raw(lua_marked(s))
      if value == nil then
        return nil, why
      end
      return lua_normalised(value)
    end

    -- Asserts that json.decode(s) gives what the Lua rule gives: the same
    -- value, arrays marked alike, or the same message.
    local function agrees(s)
      local want, want_why = lua_decode(s)
      local got, got_why = json.decode(s)
      assert(H.same_tree(want, got) and want_why == got_why, string.format("decoding %q", s))
    end

    -- A random JSON text: nulls, empty arrays (blanks in some) and stand-in
    -- values at any depth, strings and keys holding brackets, quotes and
    -- backslashes, keys that are integers, white space between tokens.
    local BLANKS = { "", "", " ", "\n", "\t ", "\r\n" }
    local PIECES = { "a", "[]", "[ ]", "[\t]", '\\"', "\\\\", "\\n", "é", "[", "]", '\\"[]\\"', "[true,null,false,null,true]" }
    local KEYS = { "a", "b", "1", "2", "10", "k[]", 'q\\"', "[ ]", "" }
    local function random_text(random, depth)
      local blank = function() return BLANKS[random(#BLANKS)] end
      local kind = random(depth > 5 and 5 or 10)
      if kind == 1 then
        return "null"
      elseif kind == 2 then
        return ({ "true", "false", "0", "-1.5", "12" })[random(5)]
      elseif kind <= 4 then
        return '"' .. H.random_string(random, PIECES) .. '"'
      elseif kind == 5 then
        return "[" .. blank() .. "]"
      elseif kind == 6 then
        return ({ "[true,null,false,null,true]", "[ true, null, false, null, true ]", "[true,null,false,null]" })[random(3)]
      elseif kind <= 8 then
        local items = {}
        for i = 1, random(1, 4) do
          items[i] = blank() .. random_text(random, depth + 1) .. blank()
        end
        return "[" .. table.concat(items, ",") .. "]"
      end
      local members = {}
      for i = 1, random(0, 4) do
        members[i] = string.format('%s"%s"%s:%s', blank(), KEYS[random(#KEYS)], blank(), random_text(random, depth + 1))
      end
      return "{" .. table.concat(members, ",") .. "}"
    end

    it("gives the same values on thousands of random documents", function()
      local random = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 21)
      for _ = 1, 3000 do
        agrees(random_text(random, 0))
      end
    end)

    it("gives the same values or messages when a random document is cut short or has a byte put in", function()
      local random = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 22)
      local bytes = { '"', "\\", "[", "]", ",", " ", "x", "\v" }
      for _ = 1, 2000 do
        local s = random_text(random, 0)
        local at = random(0, #s)
        if random(2) == 1 then
          agrees(s:sub(1, at))
        else
          agrees(s:sub(1, at) .. bytes[random(#bytes)] .. s:sub(at + 1))
        end
      end
    end)

    it("marks where the Lua rule marks in any bytes at all, valid JSON or not", function()
      local random = math.random
      math.randomseed(tonumber(os.getenv("GPULEDGER_FUZZ_SEED")) or 23)
      local bytes = { "[", "]", '"', "\\", " ", "\t", "\n", "\v", "\f", "\r", "a", "{", ",", "\0", "\xC3" }
      local writer = require "gpuledger.json_write"
      for _ = 1, 5000 do
        local parts = {}
        for i = 1, random(0, 30) do
          parts[i] = bytes[random(#bytes)]
        end
        local s = table.concat(parts)
        local want = lua_marked(s)
        assert(want == writer.mark_empty_arrays(s, "mark"), string.format("marking %q", s))
        local stand_ins = want:gsub(MARK_TEXT:gsub("%p", "%%%0"), "[true,null,false,null,true]")
        assert(stand_ins == writer.mark_empty_arrays(s, "stand-in"), s)
      end
    end)

    it("reads a stand-in's value outside a string and a [] inside one, in the same document", function()
      local doc = json.decode('{"s":"[]","t":[true, null, false, null, true],"e":[]}')
      assert.equal("[]", doc.s)
      assert.same({ [1] = true, [3] = false, [5] = true }, doc.t)
      assert.is_false(json.is_array(doc.t))
      assert.is_true(json.is_array(doc.e))
      agrees('{"s":"[]","t":[true, null, false, null, true],"e":[]}')
      local writer = require "gpuledger.json_write"
      assert.is_nil(writer.mark_empty_arrays('{"t":[ true,null , false,null,true\n]}', "stand-in"))
      local in_string = '{"t":"[true,null,false,null,true]","e":[]}'
      assert.equal('{"t":"[true,null,false,null,true]","e":[true,null,false,null,true]}',
        writer.mark_empty_arrays(in_string, "stand-in"))
    end)

    it("reads nulls and empty arrays 1000 deep, as the Lua walk did, and refuses deeper as cjson does", function()
      local deep = string.rep('[null,[],{"a":', 499) .. "[[]]" .. string.rep("}]", 499)
      agrees(deep)
      local value = json.decode(deep)
      for _ = 1, 499 do
        assert.is_nil(value[1])
        assert.is_true(json.is_array(value[2]))
        value = value[3].a
      end
      assert.is_true(json.is_array(value[1]))
      local too_deep = string.rep("[", 1001) .. string.rep("]", 1001)
      agrees(too_deep)
      assert.is_nil(json.decode(too_deep))
    end)

    it("reads a text of megabytes, mostly one string, with the same value", function()
      local long = string.rep('a[ ]\\"[]', 200000)
      agrees('{"s":"' .. long .. '","e":[],"n":null}')
      assert.equal(long:gsub('\\"', '"'), json.decode('["' .. long .. '"]')[1])
    end)

    -- json.decode reads the common text in one pass (src/json_read.c) and
    -- leaves the rest to cjson: both ways must give cjson's values.
    it("reads numbers, escapes and repeated keys in one pass as cjson reads them", function()
      local writer = require "gpuledger.json_write"
      local array_mt = getmetatable(json.array())
      local one_pass = {
        '{"n":[0,-0,12,-7,4242,123456789012345,1234567890123456789,9007199254740993,1.5,-0.25,1e3,1E+2,2e-3,1e400]}',
        '{"s":["\\u00e9\\u20ac\\ud83d\\ude00","\\"\\\\\\/\\b\\f\\n\\r\\t","\\u0000x","\255\254 raw bytes","é"]}',
        '{"a":1,"a":2,"b":3,"b":null,"c":null,"c":[]}',
        ' [ {"x" : [ 1 , null , 3 ] } , [ ] , { } ]\r\n',
        "[1,2,null]",
      }
      for _, s in ipairs(one_pass) do
        assert(writer.read(s, array_mt) ~= nil, s)
        agrees(s)
      end
      -- texts repeated, and texts alike at their ends, middle and length
      local items = {}
      for i = 1, 600 do
        items[i] = string.format('{"a%03db":"x%03dy","a%03db":"x%03dy","long":"%s"}', i % 7, i, i % 7, i % 7,
          string.rep("z", 90 + i % 50))
      end
      local many = "[" .. table.concat(items, ",") .. "]"
      assert(writer.read(many, array_mt) ~= nil)
      agrees(many)
      local doc = json.decode(one_pass[1])
      assert.equal("float", math.type(doc.n[5]))
      assert.equal(1 / 0, doc.n[14])
      assert.equal(math.huge, 1 / doc.n[1])
      assert.equal(-math.huge, 1 / doc.n[2])
      assert.same({ a = 2, c = {} }, json.decode(one_pass[3]))
      -- left to cjson: not RFC 8259's, a scalar at the top, a control byte or
      -- a lone surrogate in a string, too deep
      local left = {
        '{"n":01}', '{"n":1.}', '{"n":.5}', '{"n":+1}', '{"n":0x10}', '{"s":"a\1b"}',
        '{"s":"\\ud83d"}', '{"s":"\\ude00"}', '{"s":"\\x"}', '{"a":1,}', "[1]x", "\f[]", '"x"', "12", "null",
        string.rep("[", 1001) .. string.rep("]", 1001),
      }
      for _, s in ipairs(left) do
        assert(writer.read(s, array_mt) == nil, s)
        agrees(s)
      end
    end)
  end)

  describe("whole", function()
    it("makes a float with a whole value an integer, and leaves every other value as it is", function()
      assert.equal("integer", math.type(json.whole(4242.0)))
      assert.equal(4242, json.whole(4242.0))
      assert.equal(98.5, json.whole(98.5))
      assert.equal(7, json.whole(7))
      for _, name in ipairs { "8", "1e3", "0x10", " 12 " } do
        assert.equal(name, json.whole(name))
      end
      assert.is_nil(json.whole(nil))
      assert.is_false(json.whole(false))
      assert.equal(math.huge, json.whole(math.huge))
    end)
  end)

  describe("decode_raw", function()
    it("keeps JSON null as json.NULL and marks only an array at the top", function()
      local doc = json.decode_raw('{"tenants":null,"x":{"y":null,"z":1},"e":[]}')
      assert.equal(json.NULL, doc.tenants)
      assert.equal(json.NULL, doc.x.y)
      assert.equal(1, doc.x.z)
      assert.is_false(json.is_array(doc.e))
      assert.is_false(json.is_array(doc))
      assert.is_true(json.is_array(json.decode_raw(" []")))
      assert.is_true(json.is_array(json.decode_raw("[1, 2]")))
    end)

    it("says why a text is not JSON, or is only null, as decode does", function()
      assert.same({ json.decode("{not json") }, { json.decode_raw("{not json") })
      assert.same({ nil, "null where a value was expected" }, { json.decode_raw(" null") })
    end)
  end)

  describe("arrays", function()
    it("is_array tells marked arrays", function()
      assert.is_true(json.is_array(json.array({ 1 })))
      assert.is_false(json.is_array({ 1 }))
    end)
  end)
end)
