local shape = require "gpuledger.sources.shape"
local walk = require "gpuledger.shape_check"
local cjson = require "cjson"
local json = require "gpuledger.json"
local docker = require "gpuledger.sources.docker"
local kernel_log = require "gpuledger.sources.kernel_log"
local node_ledger = require "gpuledger.sources.node_ledger"
local nomad = require "gpuledger.sources.nomad"
local nomad_node = require "gpuledger.sources.nomad_node"
local source_list = require "gpuledger.sources.list"

-- The checker in Lua that the walk in C (src/shape_check.c) replaced, kept
-- here as the rule the walk must follow to the byte: compile(shape) is a
-- function of a value giving nil, or below and what.
local ORACLE = {}
do
  local NULL = cjson.null
  local ARTICLE = { list = "a list", map = "an object", object = "an object" }
  local function want_of(s)
    if type(s) == "string" then
      return "a " .. s
    elseif s.required then
      return want_of(s.required)
    elseif s.range then
      return string.format("a %snumber from %d to %d", s.whole and "whole " or "", s.range[1], s.range[2])
    end
    return ARTICLE[s.list and "list" or s.map and "map" or "object"]
  end
  local function list_length(value)
    local length = 0
    for key in pairs(value) do
      if math.type(key) ~= "integer" or key < 1 then
        return nil
      end
      length = math.max(length, key)
    end
    return length
  end
  -- check of a table value, absent values taken and others refused
  -- the keys of t as the walk orders them: by type (booleans, numbers,
  -- strings, tables, …), numbers and strings by value, others in pairs order
  local TYPE_ORDER = { boolean = 1, number = 3, string = 4, table = 5, ["function"] = 6, userdata = 7, thread = 8 }
  local function before(a, b)
    local ta, tb = TYPE_ORDER[type(a)], TYPE_ORDER[type(b)]
    if ta ~= tb then
      return ta < tb
    end
    return (type(a) == "number" or type(a) == "string") and a < b
  end
  local function sorted_keys(t)
    local keys = {}
    for key in pairs(t) do
      local j = #keys
      while j > 0 and before(key, keys[j]) do
        keys[j + 1] = keys[j]
        j = j - 1
      end
      keys[j + 1] = key
    end
    return keys
  end
  local function of_tables(want, check)
    return function(value)
      if value == nil or value == NULL then
        return nil
      elseif type(value) ~= "table" then
        return "", string.format(" is a %s, want %s", type(value), want)
      end
      return check(value)
    end
  end
  local compile
  local function table_checker(s)
    local want = want_of(s)
    if s.list then
      local check, max = compile(s.list), s.max
      local null_why = s.list ~= "any" and " is null, want " .. want_of(s.list)
      return of_tables(want, function(value)
        local length = #value
        if next(value, length > 0 and length or nil) ~= nil then
          length = list_length(value)
          if not length then
            return "", " is an object, want a list"
          end
        end
        if max and length > max then
          return "", string.format(" has %d items, want at most %d", length, max)
        end
        if not null_why then
          return nil
        end
        for i = 1, length do
          local item = value[i]
          local below, what
          if item == nil or item == NULL then
            below, what = "", null_why
          else
            below, what = check(item)
          end
          if below then
            return "[" .. i .. "]" .. below, what
          end
        end
        return nil
      end)
    elseif s.map then
      local check = compile(s.map)
      return of_tables(want, function(value)
        for _, key in ipairs(sorted_keys(value)) do
          local below, what = check(value[key])
          if below then
            return "." .. tostring(key) .. below, what
          end
        end
        return nil
      end)
    end
    local keys, checks = sorted_keys(s), {}
    for i, key in ipairs(keys) do
      checks[i] = compile(s[key])
    end
    return of_tables(want, function(value)
      for i = 1, #keys do
        local below, what = checks[i](value[keys[i]])
        if below then
          return "." .. keys[i] .. below, what
        end
      end
      return nil
    end)
  end
  compile = function(s)
    if s == "any" then
      return function()
        return nil
      end
    elseif type(s) == "string" then
      local want = want_of(s)
      return function(value)
        if value ~= nil and value ~= NULL and type(value) ~= s then
          return "", string.format(" is a %s, want %s", type(value), want)
        end
        return nil
      end
    elseif s.required then
      local check, missing = compile(s.required), " is missing, want " .. want_of(s)
      return function(value)
        if value == nil or value == NULL then
          return "", missing
        end
        return check(value)
      end
    elseif s.range then
      local want = want_of(s)
      return function(value)
        if value == nil or value == NULL then
          return nil
        elseif type(value) ~= "number" then
          return "", string.format(" is a %s, want %s", type(value), want)
        end
        local min, max = s.range[1], s.range[2]
        if value ~= value or value < min or value > max or (s.whole and value ~= math.floor(value)) then
          return "", string.format(" is %.14g, want %s", value, want)
        end
        return nil
      end
    end
    return table_checker(s)
  end
  ORACLE.compile = compile
  -- As compile, for an item of a list: a null has no shape but "any".
  function ORACLE.item(s)
    local check = compile(s)
    if s == "any" then
      return check
    end
    local null_why = " is null, want " .. want_of(s)
    return function(item)
      if item == nil or item == NULL then
        return "", null_why
      end
      return check(item)
    end
  end
  ORACLE.length = list_length
end

describe("sources.shape", function()
  it("names a JSON null inside a list, which ipairs would stop at", function()
    local rows = json.decode('[["0", null, "x"], ["1", "y", 5]]')
    assert.equal("rows[1][2] is null, want a string", shape.check(rows, { list = { list = "string" } }, "rows"))
  end)

  it("reads lua-cjson's null as absent, and as a null in a list", function()
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

  it("names the first wrong field by name, of an object and of a map, whatever the table's hash order", function()
    local fields, record = {}, {}
    for byte = string.byte("z"), string.byte("a"), -1 do
      fields[string.char(byte)], record[string.char(byte)] = "string", byte
    end
    assert.equal("r.a is a number, want a string", shape.check(record, fields, "r"))
    assert.equal("r.a is a number, want a string", shape.check(record, { map = "string" }, "r"))
    record.a = "fine"
    assert.equal("r.b is a number, want a string", shape.check(record, { map = "string" }, "r"))
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

  it("names a value that is not what a message wants as the checks do, an absent one by the message's word", function()
    assert.equal("a table", shape.what_is({}, "missing"))
    assert.equal("a boolean", shape.what_is(false, "missing"))
    assert.equal("missing", shape.what_is(nil, "missing"))
    assert.equal("null", shape.what_is(cjson.null, "null"))
  end)

  it("names an answer that is no list, or no object, by what it is", function()
    local source = "nomad http://127.0.0.1:4646: GET /v1/agent/self"
    assert.is_nil(shape.not_a_list(source, json.decode("[]")))
    assert.equal(source .. ": unexpected answer: the answer is an object, want a list", shape.not_a_list(source, { a = 1 }))
    assert.equal(source .. ": unexpected answer: the answer is a boolean, want a list", shape.not_a_list(source, false))
    assert.is_nil(shape.not_an_object(source, json.decode("{}")))
    assert.equal(source .. ": unexpected answer: the answer is a list, want an object",
      shape.not_an_object(source, json.decode("[1]")))
    assert.equal(source .. ": unexpected answer: the answer is a boolean, want an object", shape.not_an_object(source, false))
    assert.equal(source .. ": unexpected answer: the answer is a number, want an object", shape.not_an_object(source, 5))
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

-- Every shape the program checks with (sources/list.lua's, the records'
-- and the fleet's ledger, prometheus.lua's series and value), and hostile
-- ones: deep, integer and string keys, type names no JSON value has,
-- lists of required items, bounds of every kind.
local function all_shapes()
  local shapes = {}
  for _, source in ipairs(source_list.SOURCES) do
    shapes[#shapes + 1] = { source.name, source.shape }
  end
  for name, s in pairs {
    docker = docker.SHAPE, nomad = nomad.SHAPE, group = nomad_node.GROUP, instance = nomad_node.INSTANCE,
    record = kernel_log.RECORD, ledger = node_ledger.SHAPE, rows = shape.ROWS, row = { list = "string" },
    series = { metric = { map = "string" }, value = shape.required { list = "any" } },
    seconds = shape.number(0, shape.MAX_WHOLE),
    keys = { [1] = "string", [2] = { list = "number" }, [2.5] = "boolean", x = shape.required "table", [-3] = "any" },
    required_items = { list = shape.required "string", max = 3 },
    required_map = { map = shape.required { list = "any" } },
    odd_names = { a = "userdata", b = "nil", c = "function", d = { list = "userdata" }, e = { list = "nil" }, f = "thread" },
    any = "any", required_any = shape.required "any", any_items = { list = shape.required "any" },
    bounds = {
      a = shape.whole(-5, 5), b = shape.number(-shape.MAX_WHOLE, shape.MAX_WHOLE), c = { range = { 0.0, 10.0 } },
      d = { range = { 1, 2 }, whole = false }, e = shape.whole(math.mininteger, math.maxinteger),
    },
    nested = { list = { list = { list = "string" } }, max = 2 },
    false_list = { list = false, map = "string" },
    many = {
      a = "string", b = "number", c = "boolean", d = "table", e = shape.whole(0, 9), f = { list = "any" },
      g = { map = "number" }, h = shape.required "string", i = { j = "string" },
    },
  } do
    shapes[#shapes + 1] = { name, s }
  end
  local deep = "string"
  for i = 1, 60 do
    deep = i % 3 == 0 and { list = deep } or i % 3 == 1 and { f = deep, g = "number" } or { map = deep }
  end
  shapes[#shapes + 1] = { "deep", deep }
  table.sort(shapes, function(a, b)
    return a[1] < b[1]
  end)
  return shapes
end

-- Values that are not what a shape wants, at any depth.
local ODD = {
  function() return nil end,
  function() return cjson.null end,
  function() return 0 / 0 end,
  function() return -1 end,
  function() return 1.5 end,
  function() return 2 ^ 53 + 2 end,
  function() return 1e308 end,
  function() return math.huge end,
  function() return -math.huge end,
  function() return math.mininteger end,
  function() return math.maxinteger end,
  function() return 23034.0 end,
  function() return "x" end,
  function() return "" end,
  function() return true end,
  function() return false end,
  function() return {} end,
  function() return json.array() end,
  function() return { 1, 2 } end,
  function() return { x = "y" } end,
  function() return { "a", nil, "c" } end,
  function() return { [0] = "z" } end,
  function() return { [-1] = 1 } end,
  function() return { [1.5] = 1 } end,
  function() return { [true] = 1 } end,
  function() return { [2 ^ 40] = "far" } end,
  function() return { "a", x = 1 } end,
  function() return print end,
  function() return { { { { { "deep" } } } } } end,
}

local function odd()
  return ODD[math.random(#ODD)]()
end

-- A value of shape s most of the time; at any depth, odds in a thousand of
-- a value of ODD instead, of a hole in a list, of a field no shape names.
local function value_of(s, odds, depth)
  if depth > 70 or math.random(1000) <= odds then
    return odd()
  end
  if type(s) == "string" then
    local plain = { string = "s" .. math.random(9), number = math.random(-3, 3), boolean = math.random(2) == 1, table = {} }
    if plain[s] ~= nil then
      return plain[s]
    end
    return odd()
  elseif s.required then
    return value_of(s.required, odds, depth + 1)
  elseif s.range then
    local min, max = s.range[1], s.range[2]
    local picks = { min, max, min + 1, max - 1, (min + max) // 2, min - 1, max + 1, min + 0.5, (min + max) / 2, 0 / 0 }
    return picks[math.random(#picks)]
  elseif s.list then
    local items = {}
    local most = depth > 3 and 1 or math.min(s.max or 4, 5) + 1 -- past a short max; few deep down
    for i = 1, math.random(0, most) do
      items[i] = value_of(s.list, odds, depth + 1)
    end
    if math.random(1000) <= odds then
      items[#items + 2] = value_of(s.list, odds, depth + 1) -- a hole
    end
    return math.random(2) == 1 and json.array(items) or items
  elseif s.map then
    local items = {}
    for _ = 1, math.random(0, depth > 3 and 1 or 4) do
      local key = math.random(3) == 1 and math.random(5) or "k" .. math.random(9)
      items[key] = value_of(s.map, odds, depth + 1)
    end
    return items
  end
  local record = {}
  for key, field in pairs(s) do
    if math.random(10) <= 7 then
      record[key] = value_of(field, odds, depth + 1)
    end
  end
  if math.random(1000) <= odds then
    record["extra" .. math.random(20)] = odd()
  end
  return record
end

-- Asserts that the walk and the Lua checker answer alike for value, as a
-- value and as a list's item.
local function same(value, s, name, case)
  for _, pair in ipairs { { ORACLE.compile, walk.check, "" }, { ORACLE.item, walk.check_item, " as an item" } } do
    local lua_below, lua_what = pair[1](s)(value)
    local c_below, c_what = pair[2](value, s)
    assert(lua_below == c_below and lua_what == c_what, string.format("%s, case %s%s: Lua %s%s, C %s%s", name, case,
      pair[3], tostring(lua_below), tostring(lua_what), tostring(c_below), tostring(c_what)))
  end
end

describe("sources.shape's walk in C, against the Lua checker it replaced", function()
  it("answers as it for every shape the program uses and hostile ones, over generated values", function()
    math.randomseed(21)
    local failed, cases = 0, 0
    for _, named in ipairs(all_shapes()) do
      local name, s = named[1], named[2]
      for case = 1, 200 do
        local value = value_of(s, ({ 0, 5, 30, 150 })[case % 4 + 1], 0)
        same(value, s, name, case)
        cases = cases + 1
        failed = failed + (ORACLE.compile(s)(value) and 1 or 0)
      end
      same(nil, s, name, "nil")
      same(cjson.null, s, name, "null")
    end
    -- both ways, often enough to compare the messages
    assert.is_true(failed > cases // 5 and failed < cases - cases // 5, failed .. " of " .. cases .. " failed")
  end)

  it("keeps the items the Lua checker kept, and says why of the others alike", function()
    math.randomseed(22)
    for _, named in ipairs(all_shapes()) do
      local name, s = named[1], named[2]
      for case = 1, 40 do
        local list = value_of({ list = s }, 40, 0)
        if type(list) == "table" and (ORACLE.length(list) or math.huge) < 1000 then -- not { [2 ^ 40] = "far" }
          local kept, whys, path_of = shape.items(list, s, "items")
          local check, want_kept, want_whys, places = ORACLE.item(s), {}, {}, {}
          for i = 1, ORACLE.length(list) do
            local below, what = check(list[i])
            if below then
              want_whys[#want_whys + 1] = string.format("items[%d]%s%s", i, below, what)
            else
              want_kept[#want_kept + 1], places[#places + 1] = list[i], i
            end
          end
          assert.same(want_whys, whys, name .. ", case " .. case)
          assert.equal(#want_kept, #kept)
          for k = 1, #kept do
            local item = kept[k]
            assert(rawequal(want_kept[k], item) or item ~= item, name .. ": the same item kept") -- NaN is not NaN
            assert.equal(string.format("items[%d]", places[k]), path_of(k))
          end
        end
      end
    end
  end)

  it("reads huge lists, holes far out and keys of every type as the Lua checker does", function()
    local long = {}
    for i = 1, 100000 do
      long[i] = "GPU-" .. i
    end
    local wrong = table.move(long, 1, #long, 1, {})
    wrong[99999] = 5
    local far = { "a", "b" }
    far[2 ^ 40] = "far"
    local cases = {
      { long, { list = "string" } }, { long, { list = "string", max = 99999 } }, { long, { list = "any", max = 10 } },
      { wrong, { list = "string" } }, { far, { list = "string" } }, { far, { list = "any" } },
      { { "a", [3] = "c", x = "y" }, { list = "string" } }, { { [0] = "a" }, { list = "string" } },
      { { [1.5] = "a", [true] = 1 }, { map = "string" } }, { { [2 ^ 53] = 1 }, { map = "string" } },
      { { [1] = 5, [2.5] = 1, x = {}, [-3] = 1 }, { [1] = "string", [2.5] = "boolean", x = shape.required "table" } },
      { { a = 0 / 0 }, { a = shape.number(0, 1) } }, { { a = -0.0 }, { a = shape.whole(0, 1) } },
      { { b = 2 ^ 53 + 2, c = math.maxinteger }, { b = shape.whole(0, shape.MAX_WHOLE), c = shape.whole(0, shape.MAX_WHOLE) } },
    }
    for i, case in ipairs(cases) do
      same(case[1], case[2], "case", i)
    end
    assert.equal("[99999] is a number, want a string", table.concat { walk.check(wrong, { list = "string" }) })
    assert.equal("[3] is null, want a string", table.concat { walk.check(far, { list = "string" }) })
    assert.equal(2 ^ 40, walk.length(far))
    assert.is_nil(walk.length { "a", x = 1 })
  end)

  it("refuses a shape that is none, or one that holds itself, with an error rather than a crash", function()
    local loop = {}
    loop.next = loop
    assert.error_matches(function() walk.check({ next = {} }, loop) end, "nested deeper than 100 shapes")
    assert.error_matches(function() walk.check({}, { a = 5 }) end, "a shape is a type name or a table, not a number")
    assert.error_matches(function() walk.check(1, { range = { 0.5, 2 } }) end, "a range's min is a whole number, not 0.5")
    assert.error_matches(function() walk.check({}, { list = "string", max = "many" }) end, "a list's max is a whole number")
    assert.error_matches(function() walk.check({}) end, "bad argument #2")
  end)
end)
