-- The seams of docs/architecture.md, checked from the require lines of
-- lua/gpuledger/ so that they stay true: cli.lua only dispatches, each
-- command is its module in cmd/, only the commands bring a collector, the
-- judge and a renderer together, a renderer decides nothing (no findings
-- engine, rule, judge or collector), and only the judge runs rules (so
-- site rules run in children, isolated.lua).
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

  -- A command module: cmd.lua (what the commands share) or cmd/<name>.lua.
  local function is_command(file)
    return file == "cmd.lua" or file:match("^cmd/") ~= nil
  end

  it("cli.lua only parses and dispatches: it requires the core, the options and the sandbox, no more", function()
    local allowed = { ["gpuledger.core"] = true, ["gpuledger.options"] = true, ["gpuledger.sandbox"] = true,
      ["gpuledger.cmd."] = true } -- the dispatch: require("gpuledger.cmd." .. name)
    for _, name in ipairs(requires("cli.lua")) do
      assert.is_true(allowed[name], "cli.lua requires " .. name)
    end
  end)

  it("every command has its module cmd/<name>.lua, with a run, and cmd/ holds only commands", function()
    local options = require "gpuledger.options"
    for name in pairs(options.COMMANDS) do
      assert.equal("function", type(require("gpuledger.cmd." .. name).run), name)
    end
    for _, file in ipairs(files) do
      local name = file:match("^cmd/([%w_]+)%.lua$")
      if name then
        assert.truthy(options.COMMANDS[name], file .. " is no command")
      end
    end
  end)

  it("a command does not require another: what they share is in cmd.lua or server.lua", function()
    for _, file in ipairs(files) do
      if file:match("^cmd/") then
        for _, name in ipairs(requires(file)) do
          assert.is_falsy(name:match("^gpuledger%.cmd%."), file .. " requires " .. name)
        end
      end
    end
  end)

  it("only collect/ and the commands require a collect/ module; only cli.lua and the commands options.lua", function()
    for _, file in ipairs(files) do
      for _, name in ipairs(requires(file)) do
        if not (is_command(file) or file:match("^collect/")) then
          assert.is_falsy(name:match("^gpuledger%.collect%."), file .. " requires " .. name)
        end
        if not (is_command(file) or file == "cli.lua") then
          assert.is_falsy(name == "gpuledger.options", file .. " requires " .. name)
        end
      end
    end
  end)

  it("only the commands bring together two of a collector, the judge and a renderer", function()
    for _, file in ipairs(files) do
      if not is_command(file) then
        local reaches = {}
        for _, name in ipairs(requires(file)) do
          local part = (name:match("^gpuledger%.collect%.") and "collect") or (name == "gpuledger.judge" and "judge")
            or (name:match("^gpuledger%.render%.") and "render")
          if part then
            reaches[part] = true
          end
        end
        local count = 0
        for _ in pairs(reaches) do
          count = count + 1
        end
        assert.is_true(count < 2, file .. " requires " .. table.concat(requires(file), ", "))
      end
    end
  end)

  it("a renderer decides nothing: it requires no findings engine, rule, judge, collector, command or option", function()
    local refused = { ["gpuledger.findings"] = true, ["gpuledger.judge"] = true, ["gpuledger.options"] = true, ["gpuledger.cli"] = true, ["gpuledger.cmd"] = true, ["gpuledger.server"] = true }
    for _, file in ipairs(files) do
      if file:match("^render/") then
        for _, name in ipairs(requires(file)) do
          assert.is_falsy(refused[name] or name:match("^rules%.") or name:match("^gpuledger%.collect%.")
            or name:match("^gpuledger%.cmd%."), file .. " requires " .. name)
        end
      end
    end
  end)

  it("spec/cmd/ and spec/render/ mirror lua/gpuledger/cmd/ and render/: each spec names its module", function()
    local spec_root = (os.getenv("GPULEDGER_SOURCE_DIR") or ".") .. "/spec"
    for _, dir in ipairs { "cmd", "render" } do
      for _, name in ipairs(H.core.listdir(spec_root .. "/" .. dir) or {}) do
        local module = name:match("^(.+)_spec%.lua$")
        assert.truthy(module, dir .. "/" .. name .. " is no spec")
        assert.equal("file", H.core.stat(ROOT .. "/" .. dir .. "/" .. module .. ".lua"), dir .. "/" .. name .. " has no module")
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

  it("only sources/list.lua lists the sources", function()
    for _, file in ipairs(files) do
      if file ~= "sources/list.lua" then
        assert.is_falsy(source(file):find('"docker", "podman"', 1, true), file .. " lists the sources")
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

  it("no module a site script may require reaches the machine, through any chain of requires", function()
    local sandbox = require "gpuledger.sandbox"
    local by_module = {}
    for _, file in ipairs(files) do
      by_module["gpuledger." .. file:gsub("%.lua$", ""):gsub("/", ".")] = requires(file)
    end
    -- The first module of the machine's that name reaches, with the chain.
    local function machine_reached(name, seen, chain)
      for _, required in ipairs(by_module[name] or {}) do
        if sandbox.reaches_machine(required) then
          return chain .. " → " .. required
        elseif not seen[required] then
          seen[required] = true
          local found = machine_reached(required, seen, chain .. " → " .. required)
          if found then
            return found
          end
        end
      end
    end
    local checked = 0
    for name in pairs(by_module) do
      if not sandbox.reaches_machine(name) then
        checked = checked + 1
        assert.is_nil(machine_reached(name, {}, name))
      end
    end
    assert.is_true(checked > 20)
  end)
end)
