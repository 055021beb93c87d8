local options = require "gpuledger.options"

-- A getenv over a literal environment.
local function env(vars)
  return function(name)
    return (vars or {})[name]
  end
end

local function parse(args, vars)
  return options.parse(args, env(vars))
end

-- Asserts args are a usage error; returns its message.
local function usage_error(args, vars)
  local opts, problem = parse(args, vars)
  assert.is_nil(opts, table.concat(args, " "))
  assert.is_table(problem)
  assert.is_string(problem.message)
  assert.is_falsy(problem.help)
  return problem.message
end

describe("gpuledger.options", function()
  describe("the command", function()
    it("defaults to ls", function()
      local opts = assert(parse({}))
      assert.equal("ls", opts.command)
    end)

    it("is the first argument", function()
      assert.equal("check", assert(parse({ "check" })).command)
    end)

    it("defaults to ls when the first argument is a flag", function()
      local opts = assert(parse({ "--json" }))
      assert.equal("ls", opts.command)
      assert.is_true(opts.json)
    end)

    it("must come first: --json check is an error, not ls", function()
      assert.matches("unexpected argument \"check\"", usage_error({ "--json", "check" }))
    end)

    it("takes no argument after it: check extra is an error", function()
      assert.matches("the command comes first, then its flags", usage_error({ "check", "extra" }))
    end)

    it("stops at the first argument that is not a flag", function()
      assert.matches("\"x\"", usage_error({ "check", "--json", "x", "--no-idle" }))
    end)

    it("rejects an unknown command", function()
      local opts, problem = parse({ "frobnicate" })
      assert.is_nil(opts)
      assert.matches('^unknown command "frobnicate"', problem.message)
    end)

    it("rejects an unknown command even with valid flags after it", function()
      assert.matches('unknown command "nope"', usage_error({ "nope", "--json" }))
    end)

    it("knows help and version", function()
      assert.equal("help", assert(parse({ "help" })).command)
      assert.equal("version", assert(parse({ "version" })).command)
    end)
  end)

  describe("help", function()
    for _, flag in ipairs { "-h", "--help", "-help" } do
      it(flag .. " asks for help about the command given before it", function()
        local opts, problem = parse({ "check", "--json", flag })
        assert.is_nil(opts)
        assert.is_true(problem.help)
        assert.equal("check", problem.topic)
        local _, alone = parse({ flag })
        assert.is_true(alone.help)
        assert.is_nil(alone.topic)
      end)
    end

    it("-h after a fleet sub-command asks about it, after fleet alone about fleet", function()
      assert.equal("fleet check", select(2, parse({ "fleet", "check", "-h" })).topic)
      assert.equal("fleet", select(2, parse({ "fleet", "-h" })).topic)
      assert.is_nil(select(2, parse({ "help", "-h" })).topic)
      assert.equal("version", select(2, parse({ "help", "version", "-h" })).topic)
    end)

    it("help fleet SUB-COMMAND names a sub-command whose flags to show", function()
      assert.equal("fleet check", assert(parse({ "help", "fleet", "check" })).topic)
      assert.equal("fleet", assert(parse({ "help", "fleet" })).topic)
      assert.equal('help fleet "rm": want fleet ls, fleet check or fleet serve', usage_error({ "help", "fleet", "rm" }))
    end)

    for _, flag in ipairs { "-v", "--version" } do
      it(flag .. " asks for the version", function()
        local opts, problem = parse({ flag })
        assert.is_nil(opts)
        assert.is_true(problem.version)
      end)
    end

    it("help COMMAND names a command whose flags to show; an unknown one is a usage error", function()
      assert.equal("ls", assert(parse({ "help", "ls" })).topic)
      assert.matches('help "nope": no such command', usage_error({ "help", "nope" }))
    end)

    local ALL = { ls = true, check = true, serve = true, fleet = true, report = true, snapshot = true,
      rules = true, version = true, help = true }

    it("the usage names every command this version has and says the command comes first", function()
      local usage = options.usage(ALL)
      for command in pairs(ALL) do
        assert.matches("\n  " .. command .. " ", usage, 1, true)
      end
      assert.matches("the command comes first", usage, 1, true)
      assert.matches("--exit-on", usage, 1, true)
    end)

    it("leaves out the commands this version lacks, and the flags only they read", function()
      local usage = options.usage { ls = true, check = true, help = true }
      assert.is_nil(usage:find("\n  fleet ", 1, true))
      assert.is_nil(usage:find("\n  serve ", 1, true))
      for _, flag in ipairs { "--targets", "--consul ", "--timeout", "--since", "--prometheus ", "--listen" } do
        assert.is_nil(usage:find(flag, 1, true), flag)
      end
      assert.truthy(usage:find("--exit-on", 1, true))
      assert.truthy(options.usage(ALL):find("--targets", 1, true))
    end)

    it("fleet check takes --summary, fleet ls and serve refuse it; help fleet lists it", function()
      assert.is_true(options.config(assert(parse({ "fleet", "check", "--summary", "--targets", "a:1" })), function() end).fleet.summary)
      assert.equal("--summary is not a flag of fleet ls: fleet check takes it", usage_error({ "fleet", "--summary", "--targets", "a:1" }))
      assert.equal("--summary is not a flag of fleet serve: fleet check takes it",
        usage_error({ "fleet", "serve", "--summary", "--targets", "a:1" }))
      assert.matches("--summary is not a flag of check", usage_error({ "check", "--summary" }), 1, true)
      assert.truthy(options.usage(ALL, "fleet"):find("fleet check flags:\n  fleet check --summary:", 1, true))
      assert.truthy(options.usage(ALL):find("rules flags:\n  rules --check", 1, true))
      assert.is_nil(options.usage(ALL, "ls"):find("--summary", 1, true))
    end)

    it("the usage says how to ask for help and the version", function()
      local usage = options.usage(ALL)
      assert.truthy(usage:find("\n       gpuledger help [COMMAND] | -h | --help | COMMAND -h\n", 1, true))
      assert.truthy(usage:find("\n       gpuledger version | -v | --version\n", 1, true))
      assert.truthy(options.usage(ALL, "version"):find("\nusage: gpuledger version | -v | --version\n", 1, true))
      assert.truthy(options.usage(ALL, "help"):find("\nusage: gpuledger help [COMMAND] | -h | --help | COMMAND -h\n", 1, true))
    end)

    it("help fleet names its sub-commands, help fleet check shows that one's flags only", function()
      local fleet = options.usage(ALL, "fleet")
      assert.truthy(fleet:find("\nusage: gpuledger fleet ls|check|serve [flags]\n", 1, true))
      assert.truthy(fleet:find("\nsub-commands:\n  ls ", 1, true))
      for _, flag in ipairs { "--exit-on", "--listen", "--json", "--summary", "--targets" } do
        assert.truthy(fleet:find(flag, 1, true), flag)
      end
      local check = options.usage(ALL, "fleet check")
      assert.truthy(check:find("\nusage: gpuledger fleet check [flags]\n", 1, true))
      assert.truthy(check:find("\nfleet check: every node's findings", 1, true))
      for _, flag in ipairs { "--exit-on", "--summary", "--json", "--wide", "--targets" } do
        assert.truthy(check:find(flag, 1, true), flag)
      end
      for _, flag in ipairs { "--listen", "--interval", "--grafana-url" } do
        assert.is_nil(check:find(flag, 1, true), flag)
      end
      local serve = options.usage(ALL, "fleet serve")
      assert.truthy(serve:find("--listen", 1, true))
      assert.is_nil(serve:find("--exit-on", 1, true))
      assert.is_nil(serve:find("--json", 1, true))
    end)

    it("help COMMAND shows that command's flags only", function()
      local ls = options.usage(ALL, "ls")
      assert.truthy(ls:find("usage: gpuledger ls [flags]", 1, true))
      assert.truthy(ls:find("--wide", 1, true))
      assert.truthy(ls:find("--proc", 1, true))
      for _, flag in ipairs { "--exit-on", "--listen", "--targets", "--allow-unmanaged", "--since" } do
        assert.is_nil(ls:find(flag, 1, true), flag)
      end
      local report = options.usage(ALL, "report")
      assert.truthy(report:find("--since", 1, true))
      assert.is_nil(report:find("--proc", 1, true))
    end)
  end)

  describe("flags", function()
    it("take one or two dashes and = or a separate value", function()
      local opts = assert(parse({ "check", "-node", "a", "--exit-on=bad", "--temp-max", "80" }))
      assert.equal("a", opts.node)
      assert.equal("bad", opts["exit-on"])
      assert.equal(80, opts["temp-max"])
    end)

    it("record which were given", function()
      local opts = assert(parse({ "check", "--temp-max", "80" }))
      assert.is_true(opts.set["temp-max"])
      assert.is_nil(opts.set["encoder-max"])
    end)

    it("have the defaults gpuledger help lists", function()
      local opts = assert(parse({ "check" }))
      assert.equal("http://127.0.0.1:4646", opts["nomad-addr"])
      assert.equal("NOMAD_TOKEN", opts["nomad-token-env"])
      assert.equal("unix:///var/run/docker.sock", opts.docker)
      assert.equal("auto", opts.podman)
      assert.equal("nvidia-smi", opts["nvidia-smi"])
      assert.equal("/proc", opts.proc)
      assert.equal("", opts.node)
      assert.is_false(opts.json)
      assert.equal("", opts["exit-on"])
      assert.equal(0, opts["encoder-max"])
      assert.equal(85, opts["temp-max"])
      assert.is_false(opts["allow-unmanaged"])
      assert.is_false(opts["no-idle"])
      assert.equal(":9877", opts.listen)
      assert.equal(15, opts.interval)
      assert.equal(5, opts.timeout)
      assert.equal("default", opts["nomad-namespace"])
      assert.equal("gpuledger", opts["consul-service"])
      assert.equal("CONSUL_HTTP_TOKEN", opts["consul-token-env"])
      assert.equal("7d", opts.since)
    end)

    it("rejects an unknown flag, offering the closest of the command's own", function()
      assert.equal("unknown flag --bogus", usage_error({ "check", "--bogus" }))
      assert.equal("unknown flag --exit-onn (did you mean --exit-on?)", usage_error({ "check", "--exit-onn" }))
      assert.equal("unknown flag --intervall (did you mean --interval?)", usage_error({ "serve", "-intervall", "5s" }))
    end)

    it("rejects a flag the command does not read, naming those that do", function()
      assert.equal("--exit-on is not a flag of ls: check and fleet check take it", usage_error({ "ls", "--exit-on", "bad" }))
      assert.equal("--since is not a flag of ls: report takes it", usage_error({ "ls", "--since", "1d" }))
      assert.equal("--demo is not a flag of fleet serve: ls, check, serve, snapshot and rules take it",
        usage_error({ "fleet", "serve", "--demo" }))
      assert.is_truthy(parse({ "rules", "--check", "--demo" }))
    end)

    it("takes rules --demo and --replay with --check only", function()
      assert.equal("rules --demo needs --check: only rules --check runs the rules on a node", usage_error({ "rules", "--demo" }))
      assert.equal("rules --replay needs --check: only rules --check runs the rules on a node",
        usage_error({ "rules", "--json", "--replay", "/n.json" }))
      assert.equal("rules --demo needs --check: only rules --check runs the rules on a node",
        usage_error({ "rules", "--demo", "--replay", "/n.json" }))
      assert.equal(2, #assert(parse({ "rules", "--check", "--replay", "/a.json", "--replay", "/b.json" })).replays)
    end)

    it("refuses a user or password in any address, flag or variable, without showing it", function()
      local cases = {
        { { "report", "--prometheus", "http://u:s3cret@prom:9090" }, nil,
          "--prometheus http://…@prom:9090: no user or password in an address: an address is shown in errors and output; a token goes in the variable --prometheus-token-env names" },
        { { "check" }, { NOMAD_ADDR = "https://s3cret@nomad:4646/" },
          "NOMAD_ADDR=https://…@nomad:4646/: no user or password in an address: an address is shown in errors and output; the token goes in the variable --nomad-token-env names" },
        { { "fleet", "ls", "--consul", "http://a:s3cret@consul:8500" }, nil,
          "--consul http://…@consul:8500: no user or password in an address: an address is shown in errors and output; the token goes in the variable --consul-token-env names" },
        { { "check", "--docker", "tcp://u:s3cret@engine:2375" }, nil,
          "--docker tcp://…@engine:2375: no user or password in an address: an address is shown in errors and output" },
        { { "serve", "--podman", "http://u:s3cret@engine:8080" }, nil,
          "--podman http://…@engine:8080: no user or password in an address: an address is shown in errors and output" },
        { { "serve", "--grafana-url", "https://admin:s3cret@grafana/" }, nil,
          "--grafana-url https://…@grafana/: no user or password in an address: an address is shown in errors and output" },
        { { "fleet", "serve", "--nomad-ui-url", "https://admin:s3cret@nomad:4646/ui" }, nil,
          "--nomad-ui-url https://…@nomad:4646/ui: no user or password in an address: an address is shown in errors and output" },
      }
      for _, case in ipairs(cases) do
        local message = usage_error(case[1], case[2])
        assert.equal(case[3], message)
        assert.is_nil(message:find("s3cret", 1, true))
      end
      -- an @ after the host is a path's or a query's, not a user's
      assert(parse({ "report", "--prometheus", "http://prom:9090/a@b" }))
      assert(parse({ "check", "--nomad-addr", "http://nomad:4646/?who=a@b" }))
      -- a variable a command does not read binds nothing
      assert(parse({ "report", "--prometheus", "http://prom:9090" }, { NOMAD_ADDR = "http://u:p@nomad:4646" }))
    end)

    it("takes ls and check --interval, the period of the serve writing the history, with --history only", function()
      for _, command in ipairs { "ls", "check" } do
        local opts = assert(parse({ command, "--history", "/h.json", "--interval", "5m" }))
        assert.equal(300, opts.interval)
        assert.equal(300, options.config(opts, env()).serve.interval)
        assert.equal(command .. " --interval needs --history: it is the refresh period of the serve writing the history",
          usage_error({ command, "--interval", "5m" }))
      end
      assert.equal(15, assert(parse({ "check", "--history", "/h.json" })).interval)
    end)

    it("gives each fleet sub-command its own flags, naming the sub-command that refuses one", function()
      assert.equal("--exit-on is not a flag of fleet ls: check and fleet check take it",
        usage_error({ "fleet", "ls", "--exit-on", "bad", "--targets", "a:1" }))
      assert.equal("--exit-on is not a flag of fleet ls: check and fleet check take it",
        usage_error({ "fleet", "--exit-on", "bad", "--targets", "a:1" }))
      assert.equal("--exit-on is not a flag of fleet serve: check and fleet check take it",
        usage_error({ "fleet", "serve", "--exit-on", "bad", "--targets", "a:1" }))
      assert.equal("--listen is not a flag of fleet check: serve and fleet serve take it",
        usage_error({ "fleet", "check", "--listen", ":1", "--targets", "a:1" }))
      assert.equal("--interval is not a flag of fleet ls: ls, check, serve and fleet serve take it",
        usage_error({ "fleet", "ls", "--interval", "5s", "--targets", "a:1" }))
      assert.equal("--grafana-url is not a flag of fleet check: serve and fleet serve take it",
        usage_error({ "fleet", "check", "--grafana-url", "https://g", "--targets", "a:1" }))
      assert.equal("--json is not a flag of fleet serve: ls, check, fleet ls, fleet check, report and rules take it",
        usage_error({ "fleet", "serve", "--json", "--targets", "a:1" }))
      assert.equal("--wide is not a flag of fleet serve: ls, check, fleet ls and fleet check take it",
        usage_error({ "fleet", "serve", "--wide", "--targets", "a:1" }))
      -- what every sub-command reads is named as fleet's
      assert.equal("--targets is not a flag of ls: fleet takes it", usage_error({ "ls", "--targets", "a:1" }))
      assert.is_truthy(parse({ "fleet", "check", "--exit-on", "bad", "--wide", "--json", "--targets", "a:1" }))
      assert.is_truthy(parse({ "fleet", "ls", "--wide", "--json", "--allow-unmanaged", "--targets", "a:1" }))
      assert.is_truthy(parse({ "fleet", "serve", "--listen", ":1", "--interval", "5s", "--grafana-url", "https://g",
        "--targets", "a:1" }))
    end)

    it("offers the closest command for an unknown one", function()
      assert.matches('^unknown command "chek" %(did you mean check%?%)', usage_error({ "chek" }))
      assert.matches('^unknown command "frobnicate": ', usage_error({ "frobnicate" }))
    end)

    it("rejects a flag without its value", function()
      assert.matches("%-%-node", usage_error({ "check", "--node" }))
    end)

    describe("bool", function()
      it("takes no value", function()
        assert.is_true(assert(parse({ "check", "--json" })).json)
      end)

      it("accepts --json=false and --json=true", function()
        assert.is_false(assert(parse({ "check", "--json=false" })).json)
        assert.is_true(assert(parse({ "check", "--json=true" })).json)
      end)

      it("does not take the next argument as its value", function()
        usage_error({ "check", "--json", "false" })
      end)

      it("rejects --json=maybe", function()
        assert.matches("maybe", usage_error({ "check", "--json=maybe" }))
      end)
    end)

    describe("int", function()
      it("may be negative, as a separate value or after =", function()
        assert.equal(-1, assert(parse({ "check", "--encoder-max", "-1" }))["encoder-max"])
        for _, odd in ipairs { "1e3", "0x10", "8.0" } do
          assert.equal(string.format('invalid value "%s" for flag --encoder-max: want an integer', odd),
            usage_error({ "check", "--encoder-max", odd }))
        end
        local long = usage_error({ "serve", "--interval", "99999999999999h" })
        assert.matches("^invalid value \"99999999999999h\" for flag %-%-interval: invalid duration .*292 years", long)
        assert.equal(-1, assert(parse({ "check", "--encoder-max=-1" }))["encoder-max"])
      end)

      it("rejects what is not an integer", function()
        usage_error({ "check", "--temp-max", "hot" })
        usage_error({ "check", "--temp-max", "85.5" })
      end)
    end)

    describe("--exit-on", function()
      for _, value in ipairs { "warn", "bad", "error" } do
        it("accepts " .. value, function()
          assert.equal(value, assert(parse({ "check", "--exit-on", value }))["exit-on"])
        end)
      end

      it("refuses an empty value: given, it is warn, bad or error", function()
        assert.equal('--exit-on "": want warn, bad or error', usage_error({ "check", "--exit-on", "" }))
        assert.equal('--exit-on "": want warn, bad or error', usage_error({ "check", "--exit-on=" }))
        assert.equal("", assert(parse({ "check" }))["exit-on"])
      end)

      for _, value in ipairs { "Bad", "fatal", "WARN" } do
        it("rejects " .. value .. " (case-sensitive)", function()
          assert.matches(value, usage_error({ "check", "--exit-on", value }))
        end)
      end
    end)

    describe("--nomad-ui-url", function()
      it("is checked and kept without its trailing slash, for serve and fleet serve", function()
        local opts = assert(parse({ "serve", "--nomad-ui-url", "https://nomad.test:4646/" }))
        assert.equal("https://nomad.test:4646", options.config(opts, function() end).serve.nomad_ui_url)
        assert.matches("--nomad-ui-url", usage_error({ "serve", "--nomad-ui-url", "javascript:alert(1)" }), 1, true)
        assert.matches("--nomad-ui-url is not a flag of ls", usage_error({ "ls", "--nomad-ui-url", "https://n" }), 1, true)
      end)
    end)

    describe("--grafana-url", function()
      it("takes an http(s) URL, trailing slashes dropped", function()
        local opts = assert(parse({ "serve", "--grafana-url", "https://grafana.test/" }))
        assert.equal("https://grafana.test", options.config(opts, function() end).serve.grafana_url)
      end)

      it("refuses anything else as a usage error", function()
        assert.matches("--grafana-url", usage_error({ "serve", "--grafana-url", "javascript:alert(1)" }), 1, true)
      end)
    end)

    describe("report's flags", function()
      it("--prometheus from PROMETHEUS_URL; the TLS flags like Nomad's", function()
        local opts = assert(parse({ "report", "--prometheus-ca-cert", "/ca.pem", "--prometheus-token-env", "PROM_TOKEN" },
          { PROMETHEUS_URL = "http://prom:9090" }))
        local report = options.config(opts, function() end).report
        assert.equal("http://prom:9090", report.prometheus)
        assert.equal("/ca.pem", report.ca_cert)
        assert.equal("PROM_TOKEN", report.token_env)
        assert.is_nil(report.timeout_ms)
        local given = assert(parse({ "report", "--prometheus", "http://p:9090", "--timeout", "1500ms" }))
        assert.equal(1500, options.config(given, function() end).report.timeout_ms)
      end)

      it("report without a Prometheus is a usage error; --since is checked later (exit 1)", function()
        assert.matches("--prometheus", usage_error({ "report" }), 1, true)
        assert.equal("7 days", assert(parse({ "report", "--prometheus", "http://p:9090", "--since", "7 days" })).since)
      end)
    end)

    describe("durations", function()
      it("read Go syntax", function()
        assert.equal(90, assert(parse({ "serve", "--interval", "1m30s" })).interval)
        assert.equal(0.5, assert(parse({ "serve", "--interval=500ms" })).interval)
      end)

      it("--interval 0 is a usage error", function()
        assert.matches("interval", usage_error({ "serve", "--interval", "0" }))
      end)

      it("--interval -5s is a usage error", function()
        assert.matches("interval", usage_error({ "serve", "--interval", "-5s" }))
      end)

      it("--interval 15 (no unit) is a usage error", function()
        usage_error({ "serve", "--interval", "15" })
      end)

      it("--timeout 0 is a usage error for every command", function()
        assert.matches("timeout", usage_error({ "check", "--timeout", "0" }))
      end)
    end)
  end)

  describe("environment defaults", function()
    local vars = {
      NOMAD_ADDR = "https://nomad.example:4646",
      NOMAD_CACERT = "/etc/nomad/ca.pem",
      NOMAD_CAPATH = "/etc/nomad/cas",
      NOMAD_CLIENT_CERT = "/etc/nomad/cli.pem",
      NOMAD_CLIENT_KEY = "/etc/nomad/cli-key.pem",
      NOMAD_TLS_SERVER_NAME = "client.global.nomad",
      DOCKER_HOST = "http://127.0.0.1:2375",
      CONSUL_HTTP_ADDR = "consul.example:8500",
      CONSUL_CACERT = "/etc/consul/ca.pem",
      CONSUL_CAPATH = "/etc/consul/cas",
      CONSUL_CLIENT_CERT = "/etc/consul/cli.pem",
      CONSUL_CLIENT_KEY = "/etc/consul/cli-key.pem",
      CONSUL_TLS_SERVER_NAME = "consul.example",
      PROMETHEUS_URL = "http://prom:9090",
    }

    it("fill the flags", function()
      local opts = assert(parse({ "check" }, vars))
      assert.equal("https://nomad.example:4646", opts["nomad-addr"])
      assert.equal("/etc/nomad/ca.pem", opts["nomad-ca-cert"])
      assert.equal("/etc/nomad/cas", opts["nomad-ca-path"])
      assert.equal("/etc/nomad/cli.pem", opts["nomad-client-cert"])
      assert.equal("/etc/nomad/cli-key.pem", opts["nomad-client-key"])
      assert.equal("client.global.nomad", opts["nomad-tls-server-name"])
      assert.equal("http://127.0.0.1:2375", opts.docker)
      assert.equal("consul.example:8500", opts.consul)
      assert.equal("/etc/consul/ca.pem", opts["consul-ca-cert"])
      assert.equal("/etc/consul/cas", opts["consul-ca-path"])
      assert.equal("/etc/consul/cli.pem", opts["consul-client-cert"])
      assert.equal("/etc/consul/cli-key.pem", opts["consul-client-key"])
      assert.equal("consul.example", opts["consul-tls-server-name"])
      assert.equal("http://prom:9090", opts.prometheus)
    end)

    it("lose to an explicit flag, which changes only its own field", function()
      local opts = assert(parse({ "check", "--nomad-addr", "http://other:4646", "--nomad-ca-cert", "/tmp/ca.pem",
        "--docker", "unix:///tmp/d.sock" }, vars))
      assert.equal("http://other:4646", opts["nomad-addr"])
      assert.equal("/tmp/ca.pem", opts["nomad-ca-cert"])
      assert.equal("/etc/nomad/cli.pem", opts["nomad-client-cert"])
      assert.equal("unix:///tmp/d.sock", opts.docker)
    end)

    it("ignore an empty variable", function()
      local opts = assert(parse({ "check" }, { NOMAD_ADDR = "", DOCKER_HOST = "" }))
      assert.equal("http://127.0.0.1:4646", opts["nomad-addr"])
      assert.equal("unix:///var/run/docker.sock", opts.docker)
    end)

    it("a trailing slash of the Nomad address is trimmed (flag or variable)", function()
      assert.equal("http://n:4646", assert(parse({ "check", "--nomad-addr", "http://n:4646/" }))["nomad-addr"])
      assert.equal("http://n:4646", assert(parse({ "check" }, { NOMAD_ADDR = "http://n:4646/" }))["nomad-addr"])
    end)

    it("an empty Nomad address is the default", function()
      assert.equal("http://127.0.0.1:4646", assert(parse({ "check", "--nomad-addr", "" }))["nomad-addr"])
    end)
  end)

  describe("fleet", function()
    it("defaults to fleet ls", function()
      local opts = assert(parse({ "fleet", "--targets", "a:1" }))
      assert.equal("fleet", opts.command)
      assert.equal("ls", opts.subcommand)
    end)

    for _, sub in ipairs { "ls", "check", "serve" } do
      it("accepts fleet " .. sub, function()
        assert.equal(sub, assert(parse({ "fleet", sub, "--targets", "a:1" })).subcommand)
      end)
    end

    it("rejects fleet rm", function()
      assert.matches('fleet "rm": want fleet ls, fleet check or fleet serve', usage_error({ "fleet", "rm", "--targets", "a:1" }))
    end)

    it("rejects an argument after the sub-command", function()
      usage_error({ "fleet", "ls", "x", "--targets", "a:1" })
    end)

    it("needs something to discover the nodes with", function()
      assert.matches("%-%-targets", usage_error({ "fleet" }))
      assert.matches("%-%-targets", usage_error({ "fleet", "check" }))
      assert.matches("%-%-targets", usage_error({ "fleet", "serve" }))
    end)

    it("is valid with --nomad-service alone, namespace default", function()
      local opts = assert(parse({ "fleet", "--nomad-service", "gpuledger" }))
      assert.equal("gpuledger", opts["nomad-service"])
      assert.equal("default", opts["nomad-namespace"])
    end)

    it("is valid with CONSUL_HTTP_ADDR alone", function()
      local opts = assert(parse({ "fleet" }, { CONSUL_HTTP_ADDR = "127.0.0.1:8500" }))
      assert.equal("127.0.0.1:8500", opts.consul)
    end)

    it("rejects --timeout 0", function()
      usage_error({ "fleet", "--targets", "a:1", "--timeout", "0" })
    end)

    it("fleet serve listens on :9878 unless --listen is given", function()
      assert.equal(":9878", assert(parse({ "fleet", "serve", "--targets", "a:1" })).listen)
      assert.equal(":9000", assert(parse({ "fleet", "serve", "--targets", "a:1", "--listen", ":9000" })).listen)
      assert.equal(":9877", assert(parse({ "fleet", "serve", "--targets", "a:1", "--listen", ":9877" })).listen)
    end)

    it("fleet serve polls every 30s unless --interval is given", function()
      assert.equal(30, assert(parse({ "fleet", "serve", "--targets", "a:1" })).interval)
      assert.equal(5, assert(parse({ "fleet", "serve", "--targets", "a:1", "--interval", "5s" })).interval)
      assert.equal(15, assert(parse({ "fleet", "ls", "--targets", "a:1" })).interval)
    end)

    it("serve listens on :9877", function()
      assert.equal(":9877", assert(parse({ "serve" })).listen)
    end)

    it("fleet ls keeps :9877 (only fleet serve changes it)", function()
      assert.equal(":9877", assert(parse({ "fleet", "ls", "--targets", "a:1" })).listen)
    end)

    describe("--cgroup-parent", function()
      it("reads absolute cgroup paths, their trailing slashes dropped", function()
        local opts = assert(parse { "ls", "--cgroup-parent", "/gpu-jobs.slice/, /custom-docker" })
        assert.same({ "/gpu-jobs.slice", "/custom-docker" }, opts.cgroup_parents)
        assert.same({}, assert(options.parse_cgroup_parents("")))
      end)

      for _, bad in ipairs { "gpu-jobs.slice", "/", "/user.slice", "/user.slice/user-1000.slice", "/a//b" } do
        it("refuses " .. bad .. ": no user's own slice, no relative path, not the root", function()
          local opts, err = parse { "ls", "--cgroup-parent", bad }
          assert.is_nil(opts)
          assert.matches("^%-%-cgroup%-parent \"", err.message)
        end)
      end

      it("takes at most the C core's bound", function()
        local many = {}
        for i = 1, options.CGROUP_PARENTS_MAX + 1 do
          many[i] = "/p" .. i
        end
        local parents, err = options.parse_cgroup_parents(table.concat(many, ","))
        assert.is_nil(parents)
        assert.matches("at most", err)
      end)
    end)

    describe("--targets", function()
      it("reads host:port, a URL of the root (/), and a bracketed IPv6 address, each named host:port", function()
        local targets = assert(options.parse_targets("gpud:9877, http://10.0.0.5:9877/ ,[fd00::1]:9877"))
        assert.same({
          { node = "gpud:9877", url = "http://gpud:9877" },
          { node = "10.0.0.5:9877", url = "http://10.0.0.5:9877" },
          { node = "[fd00::1]:9877", url = "http://[fd00::1]:9877" },
        }, targets)
      end)

      it("keeps https", function()
        assert.same({ { node = "gpud:9877", url = "https://gpud:9877" } }, assert(options.parse_targets("https://gpud:9877")))
        assert.same({ { node = "gpud:9877", url = "http://gpud:9877" }, { node = "gpud:9877", url = "https://gpud:9877" } },
          assert(options.parse_targets("gpud:9877,http://gpud:9877/,https://gpud:9877")), "each address read once")
      end)

      it("are validated at parse time and kept on the options", function()
        local opts = assert(parse({ "fleet", "--targets", "gpud:9877,gpue:9877" }))
        assert.equal(2, #opts.target_list)
      end)

      it("an empty list is no targets", function()
        local targets, err = options.parse_targets("")
        assert.is_nil(targets)
        assert.equal("no targets", err)
        targets, err = options.parse_targets(" , ")
        assert.is_nil(targets)
        assert.equal("no targets", err)
      end)

      for _, bad in ipairs { "gpud", "ftp://gpud:1", "http://:9877", "gpud:", ":9877", "gpud:99999", "gpud:65536",
        "gpud:0", "gpud:+1", "gpud:0x50", "gpud:9877/ledger", "gpud:9877//", "gpud:9877x", "gpud:9877:1", "junk gpud:9877",
        "xhttp://gpud:9877", "user@gpud:9877", "[fd00::1]:9877]", "[fd00::1]", "fd00::1:9877", "[gpud]:9877", "[]:9877", "999.0.0.1:9877", "gpu..d:9877" } do
        it("rejects " .. bad, function()
          local targets, err = options.parse_targets(bad)
          assert.is_nil(targets)
          assert.equal(string.format("target %q: want host:port or http(s)://host:port, the port 1 to 65535", bad), err)
        end)
      end

      it("takes the ports 1 and 65535, and names with dots, dashes and underscores", function()
        assert.same({
          { node = "gpu-1.example:1", url = "http://gpu-1.example:1" },
          { node = "gpu_2:65535", url = "https://gpu_2:65535" },
        }, assert(options.parse_targets("gpu-1.example:1,https://gpu_2:65535")))
      end)

      it("a bad target is a usage error of fleet", function()
        assert.matches("gpud", usage_error({ "fleet", "--targets", "gpud" }))
        assert.matches("no targets", usage_error({ "fleet", "--targets", " , " }))
      end)
    end)
  end)

  describe("--listen", function()
    -- The cases the C side (http_split_listen) is tested on too.
    local cases = {}
    for line in io.lines(os.getenv("GPULEDGER_SOURCE_DIR") .. "/testdata/listen.txt") do
      local verdict, value = line:match("^(%a+) ?(.*)$")
      if verdict then
        cases[#cases + 1] = { ok = verdict == "ok", value = value }
      end
    end

    it("reads the shared cases", function()
      assert.is_true(#cases > 30)
    end)

    for _, case in ipairs(cases) do
      if case.ok then
        it(string.format("takes %q, as the C side does", case.value), function()
          assert.is_true(options.check_listen(case.value))
          assert.equal(case.value, assert(parse({ "serve", "--listen", case.value })).listen)
        end)
      else
        it(string.format("refuses %q at parse time, as the C side does", case.value), function()
          assert.equal(string.format("--listen %q: want :PORT, HOST:PORT or [IPV6]:PORT", case.value),
            usage_error({ "serve", "--listen", case.value }))
          assert.is_nil(options.check_listen(case.value))
          usage_error({ "fleet", "serve", "--targets", "a:1", "--listen", case.value })
        end)
      end
    end

    it("takes a host of 255 bytes, not one of 256, bracketed or not", function()
      for _, shape in ipairs { "%s:80", "[%s]:80" } do
        assert.is_true(options.check_listen(shape:format(("h"):rep(255))))
        assert.is_nil(options.check_listen(shape:format(("h"):rep(256))))
      end
    end)
  end)

  describe("report", function()
    it("needs --prometheus", function()
      assert.matches("prometheus", usage_error({ "report" }))
    end)

    it("takes PROMETHEUS_URL", function()
      assert.equal("http://p:9090", assert(parse({ "report" }, { PROMETHEUS_URL = "http://p:9090" })).prometheus)
    end)

    it("leaves --since to be checked when it runs", function()
      assert.equal("7 days", assert(parse({ "report", "--prometheus", "http://p", "--since", "7 days" })).since)
    end)
  end)

  describe("policy", function()
    it("names only the choices given, as the rules read them", function()
      assert.same({}, options.policy(assert(parse { "check" })))
      assert.same({ encoder_max = 8, temp_max = 70, allow_unmanaged = true, idle = false },
        options.policy(assert(parse { "check", "--encoder-max", "8", "--temp-max=70", "--allow-unmanaged", "--no-idle" })))
    end)

    it("a flag given at its default is still a choice (it wins over a site's thresholds)", function()
      assert.same({ temp_max = 85 }, options.policy(assert(parse { "check", "--temp-max", "85" })))
    end)
  end)

  describe("config", function()
    local function config(args, vars)
      return options.config(assert(parse(args, vars)), env(vars or {}))
    end

    it("gives each part of the program its section, with no flag name past options", function()
      local c = config { "check", "--no-nomad", "--podman", "unix:///p.sock", "--nomad-addr", "http://n:4646/",
        "--encoder-max", "8", "--history", "/var/lib/h.json", "--json" }
      assert.equal("check", c.command)
      assert.equal("json", c.format)
      assert.equal("nvidia-smi", c.nvidia.binary)
      assert.same({ enabled = true, root = "/proc", cgroup_parents = {} }, c.proc)
      assert.same({ enabled = true, endpoint = "unix:///p.sock" }, c.podman)
      assert.is_false(c.nomad.enabled)
      assert.equal("http://n:4646", c.nomad.address)
      assert.equal("NOMAD_TOKEN", c.nomad.token_env)
      assert.same({ encoder_max = 8 }, c.policy)
      assert.equal("/var/lib/h.json", c.serve.history)
      assert.equal(15, c.serve.interval)
    end)

    it("gives the health query and the kernel log their sections", function()
      assert.same({ enabled = true }, config({ "ls" }).health)
      assert.same({ enabled = false }, config({ "ls", "--no-health", "--nvidia-smi", "/opt/smi" }).health)
      assert.same({ mode = "auto", proc_root = "/proc" }, config({ "ls" }).kernel_log)
      assert.same({ mode = "/var/log/kern.log.1", proc_root = "/host/proc" },
        config({ "ls", "--kernel-log", "/var/log/kern.log.1", "--proc", "/host/proc" }).kernel_log)
      assert.equal("off", config({ "ls" }, { GPULEDGER_KERNEL_LOG = "off" }).kernel_log.mode)
      assert.matches("%-%-kernel%-log", usage_error({ "ls", "--kernel-log", "" }))
    end)

    it("a site directory is named by its flag or its variable, not by its default", function()
      assert.is_nil(config({ "ls" }).site.rules_named)
      assert.equal("--rules /r", config({ "ls", "--rules", "/r" }).site.rules_named)
      assert.equal("GPULEDGER_SCRIPTS=/s", config({ "ls" }, { GPULEDGER_SCRIPTS = "/s" }).site.scripts_named)
    end)

    it("a site directory's variable binds only the commands that read it, and an error names the variable", function()
      for _, args in ipairs { { "version" }, { "help" }, { "help", "ls" }, { "report", "--prometheus", "http://p:9090" } } do
        local site = config(args, { GPULEDGER_RULES = "relative", GPULEDGER_SCRIPTS = "/nonexistent" }).site
        assert.same({ nil, nil }, { site.rules_named, site.scripts_named }, table.concat(args, " "))
      end
      assert.equal("GPULEDGER_RULES=relative: want an absolute path",
        usage_error({ "check" }, { GPULEDGER_RULES = "relative" }))
      assert.equal("--rules relative: want an absolute path", usage_error({ "check", "--rules", "relative" }))
    end)
  end)
end)
