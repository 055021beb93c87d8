-- The program as a user runs it (cli.main), on the embedded demo node so no
-- GPU, Docker or Nomad is needed: what reaches stdout and stderr, and the
-- exit status.
local H = require "helper"
local cli = require "gpuledger.cli"
local json = require "gpuledger.json"

-- Runs cli.main(args); returns status, stdout, stderr.
local function run(args)
  local out, err = {}, {}
  local function sink(buffer)
    return {
      write = function(self, ...)
        for i = 1, select("#", ...) do
          buffer[#buffer + 1] = tostring((select(i, ...)))
        end
        return self
      end,
      flush = function() end,
    }
  end
  local saved_out, saved_err, saved_searchers = io.stdout, io.stderr, package.searchers
  io.stdout, io.stderr = sink(out), sink(err)
  local ok, status = pcall(cli.main, args)
  io.stdout, io.stderr = saved_out, saved_err
  package.searchers = saved_searchers -- main, as the host's entry point, installs the site scripts' searcher
  assert(ok, status)
  return status, table.concat(out), table.concat(err)
end

describe("gpuledger.cli", function()
  it("version prints gpuledger <version>", function()
    local status, out = run { "version" }
    assert.equal(0, status)
    assert.equal("gpuledger " .. H.core.version .. "\n", out)
  end)

  it("help prints the usage to stdout, exit 0", function()
    local status, out, err = run { "help" }
    assert.equal(0, status)
    assert.matches("usage: gpuledger", out)
    assert.equal("", err)
  end)

  it("-h prints the command's usage to stdout, exit 0", function()
    local status, out, err = run { "check", "-h" }
    assert.equal(0, status)
    assert.equal("", err)
    assert.matches("usage: gpuledger check %[flags%]", out)
  end)

  it("--version and -v print the version, exit 0", function()
    for _, flag in ipairs { "--version", "-v" } do
      local status, out = run { flag }
      assert.equal(0, status)
      assert.equal("gpuledger " .. H.core.version .. "\n", out)
    end
  end)

  it("a usage error is one gpuledger: line on stderr, exit 2", function()
    local status, out, err = run { "--json", "check" }
    assert.equal(2, status)
    assert.equal("", out)
    assert.matches("^gpuledger: unexpected argument \"check\"", err)
  end)

  it("--exit-on Bad is exit 2", function()
    assert.equal(2, (run { "check", "--demo", "--exit-on", "Bad" }))
  end)

  it("an unknown command is exit 2, saying so on stderr", function()
    local status, out, err = run { "frobnicate" }
    assert.equal(2, status)
    assert.equal("", out)
    assert.matches('^gpuledger: unknown command "frobnicate"', err)
  end)

  it("an unknown command is one line, like every usage error (no usage dump)", function()
    local _, _, err = run { "frobnicate" }
    assert.equal(1, select(2, err:gsub("\n", "")))
  end)

  it("a rules directory named but missing is a usage error", function()
    local status, _, err = run { "check", "--demo", "--rules", "/nonexistent/rules.d" }
    assert.equal(2, status)
    assert.matches("/nonexistent/rules.d", err, 1, true)
  end)

  it("--demo and --replay together are a usage error", function()
    assert.equal(2, (run { "ls", "--demo", "--replay", "/tmp/x.json" }))
  end)

  describe("on the demo node", function()
    it("ls prints the table", function()
      local status, out = run { "ls", "--demo" }
      assert.equal(0, status)
      assert.matches("^gpuledger · gpu%-demo%-01 · 5 GPU%(s%) · 2026%-11%-29 08:00:00Z · driver 580%.95%.05 · CUDA 13%.0 · "
        .. "nomad dc1 · pool default · class gpu\n", out)
      assert.truthy(out:find("│ reserved-idle ", 1, true))
      assert.truthy(out:find("docker:ffmpeg-manual (1024 MiB) !unmanaged", 1, true))
      assert.truthy(out:find("sources: nvidia read", 1, true))
    end)

    it("ls --json prints the ledger, [] for an empty tenants list", function()
      local status, out = run { "ls", "--demo", "--json" }
      assert.equal(0, status)
      local doc = assert(json.decode(out))
      assert.equal(1, doc.schema)
      assert.equal("gpu-demo-01", doc.node)
      assert.equal(5, #doc.entries)
      assert.truthy(out:find('"tenants":[]', 1, true))
      assert.is_nil(out:find("null", 1, true))
    end)

    it("--node renames it", function()
      local _, out = run { "ls", "--demo", "--node", "other" }
      assert.matches("^gpuledger · other · ", out)
    end)

    it("check prints findings worst first and the counts, exit 0 without --exit-on", function()
      local status, out = run { "check", "--demo" }
      assert.equal(0, status)
      assert.matches("^ERROR source%-unavailable", out) -- not a terminal: no glyph
      assert.matches("\n%d+ findings: %d+ OK, %d+ WARN, %d+ BAD, 1 ERROR\n$", out)
    end)

    it("check --exit-on warn / bad / error exit 3 (its worst is ERROR)", function()
      assert.equal(3, (run { "check", "--demo", "--exit-on", "warn" }))
      assert.equal(3, (run { "check", "--demo", "--exit-on", "bad" }))
      assert.equal(3, (run { "check", "--demo", "--exit-on", "error" }))
    end)

    it("check --json prints the findings document", function()
      local status, out = run { "check", "--demo", "--json" }
      assert.equal(0, status)
      local doc = assert(json.decode(out))
      assert.equal("ERROR", doc.worst)
      assert.equal("gpu-demo-01", doc.node)
      assert.equal(1, doc.schema)
      assert.is_true(#doc.findings >= 9)
    end)

    it("check --no-idle drops the idle finding", function()
      local _, out = run { "check", "--demo", "--json", "--no-idle" }
      for _, f in ipairs(assert(json.decode(out)).findings) do
        assert.are_not.equal("idle", f.code)
      end
    end)

    it("check --allow-unmanaged makes unmanaged tenants WARN", function()
      local _, out = run { "check", "--demo", "--json", "--allow-unmanaged" }
      for _, f in ipairs(assert(json.decode(out)).findings) do
        if f.code == "unmanaged-tenant" then
          assert.equal("WARN", f.level)
        end
      end
    end)
  end)

  it("rules lists the default rules, exit 0", function()
    local status, out = run { "rules", "--json" }
    assert.equal(0, status)
    local doc = assert(json.decode(out))
    assert.equal(#H.DEFAULT_CODES, #doc.rules)
    assert.same({}, doc.errors)
  end)
end)
