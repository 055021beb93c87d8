local shape = require "gpuledger.sources.shape"
local json = require "gpuledger.json"

describe("sources.shape", function()
  it("names a JSON null inside a list, which ipairs would stop at", function()
    local rows = json.decode('[["0", null, "x"], ["1", "y", 5]]')
    assert.equal("rows[1][2] is null, want a string", shape.check(rows, { list = { list = "string" } }, "rows"))
  end)

  it("reads lua-cjson's null as absent, and as a null in a list", function()
    local cjson = require "cjson"
    local record = { text = shape.required "string", at = "string", pids = { list = "number" } }
    assert.is_nil(shape.check(cjson.decode('{"text":"x","at":null,"pids":null}'), record, "r"))
    assert.equal("r.text is missing, want a string", shape.check(cjson.decode('{"text":null}'), record, "r"))
    assert.equal("r.pids[2] is null, want a number", shape.check(cjson.decode('{"text":"x","pids":[1,null]}'), record, "r"))
  end)

  it("checks every item of a list, those after a null too", function()
    local env = { "A=1" }
    env[3] = 5
    assert.equal("Env[2] is null, want a string", shape.check(env, { list = "string" }, "Env"))
  end)

  it("calls an object where a list is wanted an object; an empty one is an empty list", function()
    assert.equal("Env is an object, want a list", shape.check({ x = "y" }, { list = "string" }, "Env"))
    assert.is_nil(shape.check({}, { list = "string" }, "Env"))
  end)

  it("names a required field that is missing", function()
    local record = { text = shape.required "string", at = "string" }
    assert.equal("records[1].text is missing, want a string", shape.check({ at = "2026-11-29T07:00:00Z" }, record, "records[1]"))
    assert.equal("records[1].text is a number, want a string", shape.check({ text = 5 }, record, "records[1]"))
    assert.is_nil(shape.check({ text = "NVRM: x" }, record, "records[1]"))
  end)

  it("keeps the items of a list that have the shape, and says why of each other one", function()
    local kept, whys = shape.items({ { text = "a" }, { at = "x" }, { text = "b" } }, { text = shape.required "string" }, "records")
    assert.same({ { text = "a" }, { text = "b" } }, kept)
    assert.same({ "records[2].text is missing, want a string" }, whys)
  end)

  it("keeps the items after a JSON null, and says the null is not an item", function()
    local records = json.decode('[{"text": "a"}, null, 5, {"text": "b"}]')
    assert.is_nil(shape.check(records, { list = "any" }, "records"))
    local kept, whys, path_of = shape.items(records, { text = shape.required "string" }, "records")
    assert.same({ { text = "a" }, { text = "b" } }, kept)
    assert.same({ "records[2] is null, want an object", "records[3] is a number, want an object" }, whys)
    assert.same({ "records[1]", "records[4]" }, { path_of(1), path_of(2) })
  end)

  it("words an answer's error as every source's is worded", function()
    assert.equal("docker unix:///d.sock: unexpected answer: containers[1] is a number, want an object",
      shape.unexpected("docker unix:///d.sock", "containers[1] is a number, want an object"))
  end)

  it("takes a list of anything, but not an object, for a list of any", function()
    assert.is_nil(shape.check({ 1, "x", { y = 1 } }, { list = "any" }, "records"))
    assert.equal("records is an object, want a list", shape.check({ x = 1 }, { list = "any" }, "records"))
    assert.equal("records is a number, want a list", shape.check(5, { list = "any" }, "records"))
  end)

  it("takes a number within its range, a whole one where it must be, and names one that is not", function()
    local count = shape.whole(0, shape.MAX_WHOLE)
    assert.is_nil(shape.check(23034.0, count, "memoryTotalMiB")) -- JSON's 23034, as lua-cjson decodes it
    assert.equal("memoryTotalMiB is 23034.5, want a whole number from 0 to 9007199254740992",
      shape.check(23034.5, count, "memoryTotalMiB"))
    assert.equal("memoryTotalMiB is 1e+20, want a whole number from 0 to 9007199254740992",
      shape.check(1e20, count, "memoryTotalMiB"))
    assert.equal("memoryTotalMiB is -1, want a whole number from 0 to 9007199254740992", shape.check(-1, count, "memoryTotalMiB"))
    assert.equal("memoryTotalMiB is a string, want a whole number from 0 to 9007199254740992",
      shape.check("23034", count, "memoryTotalMiB"))
    assert.is_nil(shape.check(16.5, shape.number(0, 1000), "powerW"))
    assert.equal("powerW is 1e+308, want a number from 0 to 1000", shape.check(1e308, shape.number(0, 1000), "powerW"))
    assert.truthy(shape.check(0 / 0, shape.number(0, 1000), "powerW"):find("nan, want a number from 0 to 1000", 1, true))
  end)

  it("names a list longer than its max", function()
    assert.is_nil(shape.check({ 1, 2 }, { list = "number", max = 2 }, "entries"))
    assert.equal("entries has 3 items, want at most 2", shape.check({ 1, 2, 3 }, { list = "number", max = 2 }, "entries"))
  end)

  it("checks a record of few of its shape's many fields as one of all of them", function()
    local record = {
      a = "string", b = "string", c = "string", d = "string", e = "string", f = "number",
      g = { list = "number" }, id = shape.required "string",
    }
    assert.is_nil(shape.check({ id = "x", f = 1 }, record, "pids.1"))
    assert.equal("pids.1.f is a string, want a number", shape.check({ id = "x", f = "1" }, record, "pids.1"))
    assert.equal("pids.1.g[2] is a string, want a number", shape.check({ id = "x", g = { 1, "2" } }, record, "pids.1"))
    assert.equal("pids.1.id is missing, want a string", shape.check({ a = "x" }, record, "pids.1"))
    local many = { id = "x", f = "1" } -- more fields than the shape names
    for i = 1, 10 do
      many["extra" .. i] = i
    end
    assert.equal("pids.1.f is a string, want a number", shape.check(many, record, "pids.1"))
    many.f = 1
    assert.is_nil(shape.check(many, record, "pids.1"))
  end)
end)
