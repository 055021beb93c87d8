-- The seams of docs/architecture.md, checked from the require lines of
-- lua/gpuledger/ so that they stay true: only collect/, cli.lua and
-- serve.lua reach a collector or the option parser, no renderer requires
-- the findings engine or a rule, and only the judge runs rules (so site
-- rules run in children, isolated.lua).
local H = require "helper"

local ROOT = (os.getenv("GPULEDGER_SOURCE_DIR") or ".") .. "/lua/gpuledger"

-- Every Lua file under dir, as paths relative to ROOT ("render/table.lua").
local function lua_files(dir, prefix, out)
  for _, name in ipairs(H.core.listdir(dir) or {}) do
    local path, relative = dir .. "/" .. name, prefix .. name
    local kind = H.core.stat(path)
    if kind == "dir" then
      lua_files(path, relative .. "/", out)
    elseif name:match("%.lua$") then
      out[#out + 1] = relative
    end
  end
  return out
end

-- The text of a file, relative to ROOT.
local function source(relative)
  return assert(H.core.read_file(ROOT .. "/" .. relative, 1024 * 1024))
end

-- The modules a file requires: require "x", require("x") and require 'x'.
local function requires(relative)
  local text = source(relative)
  local names = {}
  for name in text:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do
    names[#names + 1] = name
  end
  return names
end

describe("the seams of the pipeline", function()
  local files = lua_files(ROOT, "", {})

  it("finds the modules it checks", function()
    assert.is_true(#files > 20)
  end)

  it("only collect/, cli.lua and serve.lua require a collect/ module or options.lua", function()
    local allowed = { ["cli.lua"] = true, ["serve.lua"] = true }
    for _, file in ipairs(files) do
      if not (allowed[file] or file:match("^collect/")) then
        for _, name in ipairs(requires(file)) do
          assert.is_falsy(name:match("^gpuledger%.collect%.") or name == "gpuledger.options",
            file .. " requires " .. name)
        end
      end
    end
  end)

  it("no renderer requires findings.lua or a rule", function()
    for _, file in ipairs(files) do
      if file:match("^render/") then
        for _, name in ipairs(requires(file)) do
          assert.is_falsy(name == "gpuledger.findings" or name:match("^rules%."), file .. " requires " .. name)
        end
      end
    end
  end)

  it("only the judge runs rules: no other module compiles a rule set, runs the engine or starts a rule's child", function()
    -- ruleset.lua and findings.lua define the engine; isolated.lua reads the site's data files in a child
    local allowed = { ["judge.lua"] = true, ["isolated.lua"] = true, ["ruleset.lua"] = true, ["findings.lua"] = true }
    for _, file in ipairs(files) do
      if not allowed[file] then
        local text = source(file)
        for _, call in ipairs { "%.compile%(", "%.evaluate%(", "%.evaluate_fleet%(", "findings[%w_]*%.run%(", "isolated%.call%(", "%.data_of%(" } do
          assert.is_falsy(text:find(call), file .. " calls " .. call)
        end
      end
    end
  end)

  it("the ledger and the findings engine reach nothing that can reach the machine", function()
    for _, file in ipairs { "ledger.lua", "findings.lua", "judge.lua", "ruleset.lua", "rule_schema.lua", "rule_data.lua", "rule_file.lua" } do
      for _, name in ipairs(requires(file)) do
        assert.is_falsy(name:match("^gpuledger%.collect"), file .. " requires " .. name)
      end
    end
  end)
end)
