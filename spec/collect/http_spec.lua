-- collect.http's note on a request sent without a token: when it is said,
-- and that it is told by core.env_is_set alone, never by a token's value.
local real_core = require "gpuledger.core"
local http = require "gpuledger.collect.http"

-- A fake core where the variables of `set` are set (to a token no message
-- may show); it records the names asked and refuses core.getenv.
local function env_core(set)
  local fake = { asked = {} }
  function fake.env_is_set(name)
    fake.asked[#fake.asked + 1] = name
    return set[name] == true
  end
  function fake.getenv()
    error("a token variable is never read into Lua")
  end
  return fake
end

local ERR = 'consul http://127.0.0.1:8500: no passing instance of service "gpuledger"'

describe("gpuledger.collect.http.without_token", function()
  it("notes a variable named by its flag that is not set, on any error", function()
    local core = env_core({})
    assert.equal(ERR .. " (sent without a token: MY_TOKEN is not set)",
      http.without_token(core, ERR, { token_env = "MY_TOKEN", token_named = true }))
    assert.same({ "MY_TOKEN" }, core.asked)
  end)

  it("notes the default variable unset only on a 401 or 403", function()
    local default = { token_env = "NOMAD_TOKEN", token_named = false }
    assert.equal("x: HTTP 403 (Forbidden) (sent without a token: NOMAD_TOKEN is not set)",
      http.without_token(env_core({}), "x: HTTP 403 (Forbidden)", default, 403))
    assert.equal("x: HTTP 401 (Unauthorized) (sent without a token: NOMAD_TOKEN is not set)",
      http.without_token(env_core({}), "x: HTTP 401 (Unauthorized)", default, 401))
    local core = env_core({})
    assert.equal("x: HTTP 500", http.without_token(core, "x: HTTP 500", default, 500))
    assert.equal(ERR, http.without_token(core, ERR, default))
    assert.same({}, core.asked)
  end)

  it("says nothing when the token was sent or no variable is named", function()
    assert.equal("x: HTTP 403 (Forbidden)",
      http.without_token(env_core({ MY_TOKEN = true }), "x: HTTP 403 (Forbidden)", { token_env = "MY_TOKEN", token_named = true }, 403))
    local core = env_core({})
    assert.equal("x: HTTP 401 (Unauthorized)",
      http.without_token(core, "x: HTTP 401 (Unauthorized)", { token_env = "", token_named = true }, 401))
    assert.same({}, core.asked)
  end)
end)

describe("core.env_is_set", function()
  it("answers only whether a variable is set and not empty", function()
    assert.is_true(real_core.env_is_set("PATH"))
    assert.is_false(real_core.env_is_set("GPULEDGER_SPEC_NO_SUCH_VARIABLE"))
    assert.has_error(function() real_core.env_is_set() end)
  end)
end)
