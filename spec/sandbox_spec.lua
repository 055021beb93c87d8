local H = require "helper"
local sandbox = require "gpuledger.sandbox"

describe("gpuledger.sandbox", function()
  describe("readonly", function()
    local original = { a = 1, list = { "x", "y" }, nested = { deep = { v = 2 } } }
    local view = sandbox.readonly(original)

    it("reads like the table: index, #, ipairs, pairs", function()
      assert.equal(1, view.a)
      assert.equal(2, #view.list)
      local items = {}
      for i, v in ipairs(view.list) do
        items[i] = v
      end
      assert.same({ "x", "y" }, items)
      local keys = {}
      for k in pairs(view) do
        keys[#keys + 1] = k
      end
      table.sort(keys)
      assert.same({ "a", "list", "nested" }, keys)
      assert.equal(2, view.nested.deep.v)
    end)

    it("refuses assignment at any depth", function()
      assert.has_error(function() view.a = 2 end)
      assert.has_error(function() view.nested.deep.v = 3 end)
      assert.has_error(function() table.insert(view.list, "z") end)
      assert.equal(1, original.a)
      assert.equal(2, #original.list)
    end)

    it("refuses setmetatable", function()
      assert.has_error(function() setmetatable(view, nil) end)
    end)

    it("gives one view per table within a view, and the original back", function()
      local shared = { v = 1 }
      local both = sandbox.readonly({ a = shared, b = { shared } })
      assert.equal(both.a, both.b[1])
      assert.equal(view.list, view.list)
      assert.equal(view, sandbox.readonly(view))
      assert.equal(original, sandbox.original(view))
      assert.equal(original.list, sandbox.original(view.list))
    end)

    it("next and pairs give the nested views that indexing gives", function()
      local seen = {}
      for k, v in pairs(view) do
        seen[k] = v
      end
      assert.equal(view.list, seen.list)
      assert.equal(view.nested, seen.nested)
      local env = sandbox.environment()
      local key, value = env.next(view.nested)
      assert.equal("deep", key)
      assert.equal(view.nested.deep, value)
    end)

    it("a new view shows the table as it is now", function()
      local t = { a = 1, list = { "x" } }
      local first = sandbox.readonly(t)
      assert.equal(1, first.a)
      t.a, t.list[2] = 2, "y"
      local second = sandbox.readonly(t)
      assert.equal(2, second.a)
      assert.equal(2, #second.list)
      assert.equal("y", second.list[2])
    end)

    it("passes non-tables through", function()
      assert.equal(5, sandbox.readonly(5))
      assert.equal("s", sandbox.original("s"))
    end)
  end)

  describe("environment", function()
    it("has the pure libraries and not io, os.execute, require, debug", function()
      local env = sandbox.environment()
      assert.is_table(env.string)
      assert.is_table(env.table)
      assert.is_table(env.math)
      assert.is_table(env.utf8)
      assert.is_function(env.os.time)
      assert.is_nil(env.io)
      assert.is_nil(env.os.execute)
      assert.is_nil(env.os.getenv)
      assert.is_nil(env.require)
      assert.is_nil(env.debug)
      assert.is_nil(env.package)
      assert.is_nil(env.dofile)
      assert.is_nil(env.loadfile)
      assert.is_nil(env.collectgarbage)
      assert.is_nil(env.rawset)
    end)

    it("adds the extra names it is given", function()
      assert.equal(42, sandbox.environment({ answer = 42 }).answer)
    end)

    it("refuses new globals", function()
      local env = sandbox.environment()
      local chunk = load("x = 1", "=t", "t", env)
      assert.has_error(chunk)
    end)

    it("loads text only, into the same sandbox", function()
      local env = sandbox.environment()
      local f, err = env.load(function() end)
      assert.is_nil(f)
      assert.matches("string", err)
      assert.is_nil(env.load(string.dump(function() end)))
      local g = assert(env.load("return io"))
      assert.is_nil(g())
    end)

    it("gives each environment its own copy of the libraries", function()
      local a, b = sandbox.environment(), sandbox.environment()
      a.string.format = nil
      assert.is_function(b.string.format)
      assert.is_function(string.format)
    end)

    it("setup (the host's) hides the string metatable, and may run again", function()
      sandbox.setup()
      sandbox.setup()
      assert.is_not_table(getmetatable(""))
    end)
  end)

  it("can be loaded again (a reload of the scripts, a fresh require), and loading changes nothing global", function()
    local saved = package.loaded["gpuledger.sandbox"]
    local searchers = package.searchers
    package.loaded["gpuledger.sandbox"] = nil
    local ok, err = pcall(require, "gpuledger.sandbox")
    package.loaded["gpuledger.sandbox"] = saved
    assert.is_true(ok, err)
    assert.equal(searchers, package.searchers)
  end)

  describe("searcher", function()
    local dir
    before_each(function()
      dir = H.tempdir()
      os.execute("mkdir -p '" .. dir .. "/gpuledger/site'")
    end)
    after_each(function()
      H.remove(dir)
    end)

    it("runs a site script in the script sandbox, given at load: no io.open, require of gpuledger.* only", function()
      H.write(dir .. "/gpuledger/site/probe.lua", "return { io_open = io.open, has_require = require ~= nil, os = os.execute }")
      local loader, where = sandbox.searcher(H.core, dir)("gpuledger.site.probe")
      assert.equal(dir .. "/gpuledger/site/probe.lua", where)
      local probe = loader()
      assert.is_nil(probe.io_open)
      assert.is_nil(probe.os)
      assert.is_true(probe.has_require)
    end)

    it("runs an embedded module as the program, and says where it looked for a missing one", function()
      local loader, where = sandbox.searcher(H.core, dir)("gpuledger.text")
      assert.equal("[embedded] lua/gpuledger/text.lua", where)
      assert.is_function(loader().trim)
      local why = sandbox.searcher(H.core, dir)("gpuledger.nothing")
      assert.matches("no script 'gpuledger.nothing' in " .. dir:gsub("%p", "%%%0"), why)
    end)

    it("a site script with a syntax error fails the require, naming its file", function()
      H.write(dir .. "/gpuledger/site/broken.lua", "return {")
      local ok, err = pcall(sandbox.searcher(H.core, dir), "gpuledger.site.broken")
      assert.is_false(ok)
      assert.matches("broken%.lua:1:", err)
    end)
  end)
end)
