local web_config = require "gpuledger.web_config"

local HASH = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

describe("web_config.parse", function()
  it("reads the TLS files and the users of an exporter-toolkit web configuration", function()
    local config = assert(web_config.parse(table.concat({
      "---",
      "# served behind TLS and a password",
      "tls_server_config:",
      "  cert_file: /etc/gpuledger/tls.crt   # the chain",
      "  key_file: '/etc/gpuledger/tls key.pem'",
      "",
      "basic_auth_users:",
      "  prometheus: " .. HASH,
      '  alice: "' .. HASH .. '"',
    }, "\n")))
    assert.same({ cert_file = "/etc/gpuledger/tls.crt", key_file = "/etc/gpuledger/tls key.pem" }, config.tls)
    assert.same({ { name = "prometheus", hash = HASH } }, { config.users[1] })
    assert.equal(2, #config.users)
  end)

  it("takes a file with only users, or only TLS", function()
    assert.is_nil(assert(web_config.parse("basic_auth_users:\n  p: " .. HASH .. "\n")).tls)
    assert.same({}, assert(web_config.parse("tls_server_config:\n  cert_file: a\n  key_file: b\n")).users)
  end)

  it("refuses what it would not apply, naming the key or the line", function()
    for text, want in pairs {
      ["tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n"] =
        "line 4: tls_server_config.client_auth_type: not a key gpuledger knows",
      ["http_server_config:\n  http2: false\n"] = "line 1: http_server_config: not a key gpuledger knows",
      ["tls_server_config:\n  cert_file: a\n"] = "tls_server_config: want both cert_file and key_file",
      ["basic_auth_users:\n  p: secret\n"] = "line 2: basic_auth_users.p: want a bcrypt hash",
      ["basic_auth_users:\n  p: " .. HASH .. "\n  p: " .. HASH .. "\n"] = "line 3: basic_auth_users.p: given twice",
      ["basic_auth_users: {p: x}\n"] = "line 1: a YAML construct gpuledger does not read",
      ["basic_auth_users:\n\tp: x\n"] = "line 2: want `key: value`",
      ["  cert_file: a\n"] = "line 1: cert_file: indented, but under no section",
      ["tls_server_config:\n  cert_file: 'a\n"] = "line 2: an unclosed or unfinished 'quoted' value",
    } do
      local config, why = web_config.parse(text)
      assert.is_nil(config, text)
      assert.equal(want, why:sub(1, #want), text)
    end
  end)
end)
