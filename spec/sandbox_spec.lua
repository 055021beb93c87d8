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

    it("gives the same view for the same table, and the original back", function()
      assert.equal(view, sandbox.readonly(original))
      assert.equal(view.list, view.list)
      assert.equal(original, sandbox.original(view))
      assert.equal(original.list, sandbox.original(view.list))
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

    it("hides the string metatable", function()
      assert.is_not_table(getmetatable(""))
    end)
  end)

  it("can be loaded again (a reload of the scripts, a fresh require) without failing", function()
    local saved = package.loaded["gpuledger.sandbox"]
    package.loaded["gpuledger.sandbox"] = nil
    local ok, err = pcall(require, "gpuledger.sandbox")
    package.loaded["gpuledger.sandbox"] = saved
    assert.is_true(ok, err)
  end)
end)
