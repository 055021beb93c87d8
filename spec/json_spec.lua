local json = require "gpuledger.json"

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

    it("refuses a document that is only null", function()
      local value, err = json.decode("null")
      assert.is_nil(value)
      assert.is_string(err)
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
