-- The command line (docs/contract.md#command-line): one flag set, each flag
-- taken only by the commands that read it (FLAG_COMMANDS), parsed the way
-- Go's flag package does (-x or --x, --x=v or --x v, bools take no
-- value, parsing stops at the first non-flag), with environment defaults and
-- validation. parse() never prints and never exits: it returns the options,
-- or an error for the caller to report with exit status 2.
local clock = require "gpuledger.clock"
local consul = require "gpuledger.sources.consul"

local M = {}

-- name, kind, default, environment variable that supplies the default, help.
local FLAGS = {
  { "nomad-addr", "string", "http://127.0.0.1:4646", "NOMAD_ADDR", "Nomad agent address" },
  { "nomad-token-env", "string", "NOMAD_TOKEN", nil, "NAME of the variable holding the Nomad ACL token" },
  { "nomad-node-id", "string", "", nil, "this node's Nomad id; skips /v1/agent/self" },
  { "nomad-ca-cert", "string", "", "NOMAD_CACERT", "CA file for Nomad TLS" },
  { "nomad-ca-path", "string", "", "NOMAD_CAPATH", "directory of .pem/.crt CA files for Nomad TLS" },
  { "nomad-client-cert", "string", "", "NOMAD_CLIENT_CERT", "client certificate for Nomad mTLS" },
  { "nomad-client-key", "string", "", "NOMAD_CLIENT_KEY", "client key for Nomad mTLS" },
  { "nomad-tls-server-name", "string", "", "NOMAD_TLS_SERVER_NAME", "name to verify Nomad's certificate against" },
  { "docker", "string", "unix:///var/run/docker.sock", "DOCKER_HOST", "Docker endpoint: unix://PATH or http://host:port" },
  { "podman", "string", "auto", nil, "Podman endpoint: auto, off, or unix://PATH / http://host:port" },
  { "nvidia-smi", "string", "nvidia-smi", nil, "nvidia-smi binary" },
  { "no-health", "bool", false, nil, "do not run nvidia-smi's health query" },
  { "kernel-log", "string", "auto", "GPULEDGER_KERNEL_LOG", "Xid events from: auto (journal, /dev/kmsg, kern.log), journal, kmsg, off, or a FILE of kernel log lines" },
  { "proc", "string", "/proc", nil, "procfs root" },
  { "cgroup-parent", "string", "", nil, "cgroups (comma-separated) besides the system's own where only Nomad or an engine creates cgroups: a custom Nomad cgroup_parent or cgroup_v2_override, Docker's cgroup-parent" },
  { "node", "string", "", nil, "node name in the ledger (default: hostname)" },
  { "json", "bool", false, nil, "JSON output" },
  { "wide", "bool", false, nil, "ls and fleet ls: the full table, check and fleet check: one line per finding, even on a narrower terminal" },
  { "exit-on", "string", "", nil, "check's exit status: warn, bad or error" },
  { "encoder-max", "int", 0, nil, "encoder sessions limit: 0 the card's cap, N every card, -1 off" },
  { "temp-max", "int", 85, nil, "°C when the driver reports no thermal margin; 0 off" },
  { "allow-unmanaged", "bool", false, nil, "unmanaged tenants are WARN, not BAD" },
  { "no-idle", "bool", false, nil, "no idle findings" },
  { "no-nomad", "bool", false, nil, "do not ask Nomad" },
  { "no-docker", "bool", false, nil, "do not ask Docker or Podman" },
  { "listen", "string", ":9877", nil, "serve's address (fleet serve: :9878)" },
  { "interval", "duration", 15, nil, "serve's refresh period (ls and check with --history: that of the serve writing it); the history's max gap is 3x" },
  { "history", "string", "", nil, "history file: serve writes it, ls and check read it" },
  { "targets", "string", "", nil, "fleet: host:port,..." },
  { "nomad-service", "string", "", nil, "fleet: Nomad service name to discover nodes" },
  { "nomad-namespace", "string", "default", nil, "fleet: namespace of --nomad-service" },
  { "consul", "string", "", "CONSUL_HTTP_ADDR", "fleet: Consul address" },
  { "consul-service", "string", "gpuledger", nil, "fleet: Consul service name" },
  { "consul-token-env", "string", "CONSUL_HTTP_TOKEN", nil, "NAME of the variable holding the Consul token" },
  { "consul-ca-cert", "string", "", "CONSUL_CACERT", "CA file for Consul TLS" },
  { "consul-ca-path", "string", "", "CONSUL_CAPATH", "directory of CA files for Consul TLS" },
  { "consul-client-cert", "string", "", "CONSUL_CLIENT_CERT", "client certificate for Consul mTLS" },
  { "consul-client-key", "string", "", "CONSUL_CLIENT_KEY", "client key for Consul mTLS" },
  { "consul-tls-server-name", "string", "", "CONSUL_TLS_SERVER_NAME", "name to verify Consul's certificate against" },
  { "fleet-ca-cert", "string", "", nil, "fleet: CA file for the nodes' https:// addresses" },
  { "fleet-basic-auth-file", "string", "", nil, "fleet: FILE of one line, user:password, for the nodes' basic authentication" },
  { "timeout", "duration", 5, nil, "fleet: per-node read timeout; report: Prometheus' (30s unless given)" },
  { "prometheus", "string", "", "PROMETHEUS_URL", "report: Prometheus base URL" },
  { "prometheus-token-env", "string", "", nil, "report: NAME of the variable holding a bearer token" },
  { "prometheus-ca-cert", "string", "", nil, "report: CA file for Prometheus TLS" },
  { "prometheus-ca-path", "string", "", nil, "report: directory of .pem/.crt CA files for Prometheus TLS" },
  { "prometheus-client-cert", "string", "", nil, "report: client certificate for Prometheus mTLS" },
  { "prometheus-client-key", "string", "", nil, "report: client key for Prometheus mTLS" },
  { "prometheus-tls-server-name", "string", "", nil, "report: name to verify Prometheus' certificate against" },
  { "since", "string", "7d", nil, "report: window (e.g. 24h, 7d, 4w)" },
  { "web.config.file", "string", "", nil, "serve, fleet serve: web configuration (YAML, as the Prometheus exporters take it): tls_server_config (cert_file, key_file), basic_auth_users (bcrypt hashes)" },
  { "grafana-url", "string", "", nil, "serve, fleet serve: link each node (and GPU) of the page to gpuledger's Grafana dashboard there" },
  { "nomad-ui-url", "string", "", nil, "serve, fleet serve: link allocations, jobs and the node to Nomad's web UI there (without it the page shows the nomad alloc status command)" },
  { "rules", "string", "/etc/gpuledger/rules.d", "GPULEDGER_RULES", "site rules directory" },
  { "scripts", "string", "/etc/gpuledger/scripts", "GPULEDGER_SCRIPTS", "site scripts directory" },
  { "demo", "bool", false, nil, "run on the embedded demo node (no GPU needed)" },
  { "replay", "string", "", nil, "run on a snapshot file saved by `gpuledger snapshot`" },
}

-- The commands that read each flag, a sub-command of fleet by its two words
-- (`fleet check`): `help COMMAND` shows a command's own, and `help` only the
-- flags of the commands this version has.
local NODE = { "ls", "check", "serve", "snapshot" } -- the commands that read a node
-- fleet's sub-commands, fleet ls the default, each with what it does.
local FLEET_SUBCOMMANDS = {
  { "ls", "one row per node with its verdict, worst first, the totals and the jobs (the default)" },
  { "check", "every node's findings judged by one rule set, with a node column; exit status per --exit-on" },
  { "serve", "serve the fleet's page, /fleet, /metrics and /healthz on --listen" },
}
-- They as flags are read by (`fleet ls`, …), in order, and what each does
-- by that name.
local FLEET, FLEET_ABOUT, fleet_words = {}, {}, {}
for i, subcommand in ipairs(FLEET_SUBCOMMANDS) do
  FLEET[i] = "fleet " .. subcommand[1]
  FLEET_ABOUT[FLEET[i]] = subcommand[2]
  fleet_words[i] = subcommand[1]
end
-- How the usage writes the commands that are no "NAME [flags]".
local SYNOPSIS = {
  fleet = "fleet " .. table.concat(fleet_words, "|") .. " [flags]",
  help = "help [COMMAND] | -h | --help | COMMAND -h",
  version = "version | -v | --version",
}
local POLICY = { "check", "serve", "rules", FLEET } -- the commands that judge
local FLAG_COMMANDS = {
  ["nomad-addr"] = { NODE, FLEET }, ["nomad-token-env"] = { NODE, FLEET }, ["nomad-node-id"] = { NODE },
  ["nomad-ca-cert"] = { NODE, FLEET }, ["nomad-ca-path"] = { NODE, FLEET },
  ["nomad-client-cert"] = { NODE, FLEET }, ["nomad-client-key"] = { NODE, FLEET },
  ["nomad-tls-server-name"] = { NODE, FLEET },
  docker = { NODE }, podman = { NODE }, ["nvidia-smi"] = { NODE }, proc = { NODE }, ["cgroup-parent"] = { NODE },
  node = { NODE },
  ["no-nomad"] = { NODE }, ["no-docker"] = { NODE }, ["no-health"] = { NODE }, ["kernel-log"] = { NODE },
  ["grafana-url"] = { "serve", "fleet serve" }, ["nomad-ui-url"] = { "serve", "fleet serve" },
  ["web.config.file"] = { "serve", "fleet serve" },
  json = { "ls", "check", "rules", "fleet ls", "fleet check", "report" },
  wide = { "ls", "check", "fleet ls", "fleet check" }, ["exit-on"] = { "check", "fleet check" },
  ["encoder-max"] = { POLICY }, ["temp-max"] = { POLICY }, ["allow-unmanaged"] = { POLICY }, ["no-idle"] = { POLICY },
  listen = { "serve", "fleet serve" }, interval = { "ls", "check", "serve", "fleet serve" }, history = { "ls", "check", "serve" },
  targets = { FLEET }, ["fleet-ca-cert"] = { FLEET }, ["fleet-basic-auth-file"] = { FLEET },
  ["nomad-service"] = { FLEET }, ["nomad-namespace"] = { FLEET },
  consul = { FLEET }, ["consul-service"] = { FLEET }, ["consul-token-env"] = { FLEET },
  ["consul-ca-cert"] = { FLEET }, ["consul-ca-path"] = { FLEET }, ["consul-client-cert"] = { FLEET },
  ["consul-client-key"] = { FLEET }, ["consul-tls-server-name"] = { FLEET }, timeout = { FLEET, "report" },
  prometheus = { "report" }, ["prometheus-token-env"] = { "report" }, since = { "report" },
  ["prometheus-ca-cert"] = { "report" }, ["prometheus-ca-path"] = { "report" },
  ["prometheus-client-cert"] = { "report" }, ["prometheus-client-key"] = { "report" },
  ["prometheus-tls-server-name"] = { "report" },
  -- (snapshot checks a named site directory like every node command, and its
  -- output goes through the one script lookup)
  rules = { POLICY, NODE }, scripts = { NODE, POLICY }, demo = { NODE, "rules" }, replay = { NODE, "rules" },
}

-- Adds to set the commands of a FLAG_COMMANDS entry (its groups flattened);
-- returns set.
local function command_set(entry, set)
  for _, item in ipairs(entry) do
    if type(item) == "table" then
      command_set(item, set)
    else
      set[item] = true
    end
  end
  return set
end

local BY_NAME = {}
for _, flag in ipairs(FLAGS) do
  BY_NAME[flag[1]] = {
    name = flag[1], kind = flag[2], default = flag[3], env = flag[4], help = flag[5],
    commands = command_set(assert(FLAG_COMMANDS[flag[1]], flag[1]), {}),
  }
end

-- Flags of one command only, or that mean something else there (for
-- report, --prometheus is Prometheus' URL; for rules, a bool).
local COMMAND_FLAGS = {
  rules = {
    check = { name = "check", kind = "bool", default = false,
              help = "rules --check [DIR]: run DIR's rules (default --rules) on the demo node and each --replay FILE; exit 1 on a rule-error" },
    prometheus = { name = "prometheus", kind = "bool", default = false,
                   help = "rules --prometheus: print a Prometheus rule group, one alert per finding code" },
  },
  ["fleet check"] = {
    summary = { name = "summary", kind = "bool", default = false,
                help = "fleet check --summary: the findings grouped by level and code, worst first: how many GPUs on how many nodes, and which" },
  },
}
-- The order the help lists each command's own flags in.
local COMMAND_FLAG_ORDER = { rules = { "check", "prometheus" }, ["fleet check"] = { "summary" } }

-- The commands, in the order the help lists them, each with what it does.
local COMMAND_LIST = {
  { "ls", "print the ledger: who reserved and who holds each GPU (default)" },
  { "check", "judge the ledger: findings worst first, exit status per --exit-on" },
  { "serve", "serve /metrics, /ledger, /findings, /healthz and a page on --listen" },
  { "fleet", "fleet ls|check|serve: the same for every node of a cluster (--targets, --nomad-service or --consul)" },
  { "report", "GPU-hours per job, node and MIG slice, and used without a reservation, from Prometheus over --since" },
  { "snapshot", "print this node's raw source answers as JSON (for --replay)" },
  { "rules", "list the effective finding rules and where each came from" },
  { "version", "print the version" },
  { "help", "print this help" },
}
-- COMMAND_LIST by name (what each command does), and its names in order.
M.COMMANDS = {}
local COMMAND_ORDER = {}
for i, command in ipairs(COMMAND_LIST) do
  M.COMMANDS[command[1]] = command[2]
  COMMAND_ORDER[i] = command[1]
end

-- What reads the flags of a command: fleet's sub-commands, or the command.
local function readers_of(command)
  return command == "fleet" and FLEET or { command }
end

-- The command of a reader (readers_of): fleet for `fleet check`.
local function command_of(reader)
  return (reader:match("^%S+"))
end

-- Whether reader (readers_of) takes --name.
local function reads(reader, name)
  return (COMMAND_FLAGS[reader] or {})[name] ~= nil or (BY_NAME[name] ~= nil and BY_NAME[name].commands[reader] == true)
end
local EXIT_ON = { warn = true, bad = true, error = true } -- given; without it, "" (exit 0)
local BOOL_VALUES = {
  ["1"] = true, t = true, T = true, ["true"] = true, TRUE = true, True = true,
  ["0"] = false, f = false, F = false, ["false"] = false, FALSE = false, False = false,
}

-- One flag's lines in the usage: "--name KIND", then its help, default
-- and environment variable.
local function flag_lines(f)
  local default = ""
  if f.kind == "duration" then
    default = " (default " .. clock.format_duration(f.default) .. ")"
  elseif f.kind ~= "bool" and f.default ~= "" and f.default ~= 0 then
    default = " (default " .. tostring(f.default) .. ")"
  end
  local env = f.env and (" [$" .. f.env .. "]") or ""
  local value = f.kind == "bool" and "" or (" " .. f.kind:upper())
  return string.format("  --%s%s\n        %s%s%s", f.name, value, f.help, default, env)
end

-- Appends to lines a section of the help: a blank line, "title:" and the
-- items; nothing when there are none.
local function add_section(lines, title, items)
  if #items > 0 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = title .. ":"
    table.move(items, 1, #items, #lines + 1, lines)
  end
end

-- The usage text (help, -h, --help: on stdout). available: the set of
-- commands this version has (the others, and the flags only they read,
-- are left out). topic: nil for the whole usage, or a command or fleet
-- sub-command whose flags alone are shown (`help ls`, `ls -h`, `help fleet
-- check`; for fleet, those of each of its sub-commands).
function M.usage(available, topic)
  local function shown(reader)
    if topic == nil then
      return available[command_of(reader)] == true
    end
    return reader == topic or command_of(reader) == topic
  end
  local lines = {
    "gpuledger: who is on each NVIDIA GPU of this Nomad node, and should they be.",
    "",
  }
  if topic then
    lines[#lines + 1] = "usage: gpuledger " .. (SYNOPSIS[topic] or (topic .. " [flags]"))
    lines[#lines + 1] = ""
    lines[#lines + 1] = string.format("%s: %s", topic, M.COMMANDS[topic] or FLEET_ABOUT[topic])
    if topic == "fleet" then
      local subcommands = {}
      for i, subcommand in ipairs(FLEET_SUBCOMMANDS) do
        subcommands[i] = string.format("  %-9s %s", subcommand[1], subcommand[2])
      end
      add_section(lines, "sub-commands", subcommands)
      lines[#lines + 1] = "`gpuledger help fleet SUB-COMMAND` shows a sub-command's flags only."
    end
  else
    lines[#lines + 1] = "usage: gpuledger [command] [flags]   (the command comes first, then its flags)"
    for _, name in ipairs { "help", "version" } do
      if available[name] then
        lines[#lines + 1] = "       gpuledger " .. SYNOPSIS[name]
      end
    end
    lines[#lines + 1] = ""
    lines[#lines + 1] = "commands:"
    for _, name in ipairs(COMMAND_ORDER) do
      if available[name] then
        lines[#lines + 1] = string.format("  %-9s %s", name, M.COMMANDS[name])
      end
    end
    lines[#lines + 1] = "`gpuledger help COMMAND` shows a command's flags only (`help fleet check`: a sub-command's)."
  end
  for _, owning in ipairs(COMMAND_ORDER) do
    for _, owner in ipairs(readers_of(owning)) do
      local own = {}
      for _, name in ipairs(COMMAND_FLAG_ORDER[owner] or {}) do
        if shown(owner) then
          own[#own + 1] = "  " .. COMMAND_FLAGS[owner][name].help
        end
      end
      add_section(lines, owner .. " flags", own)
    end
  end
  local flags = {}
  for _, flag in ipairs(FLAGS) do
    local f = BY_NAME[flag[1]]
    local any = false
    for reader in pairs(f.commands) do
      any = any or shown(reader)
    end
    if any then
      flags[#flags + 1] = flag_lines(f)
    end
  end
  add_section(lines, "flags", flags)
  return table.concat(lines, "\n") .. "\n"
end

local function convert(flag, raw)
  if flag.kind == "string" then
    return raw
  elseif flag.kind == "bool" then
    local value = BOOL_VALUES[raw]
    if value == nil then
      return nil, string.format("invalid boolean value %q for flag --%s", raw, flag.name)
    end
    return value
  elseif flag.kind == "int" then
    local value = math.tointeger(tonumber(raw))
    if not value or not raw:match("^[+-]?%d+$") then -- 1e3 and 0x10 are no integers a user means
      return nil, string.format("invalid value %q for flag --%s: want an integer", raw, flag.name)
    end
    return value
  end
  local seconds, why = clock.parse_duration(raw)
  if not seconds then
    return nil, string.format("invalid value %q for flag --%s: %s (want e.g. 15s, 1m30s, 500ms)", raw, flag.name, why)
  end
  return seconds
end

-- Validates a --targets list: each entry host:port or http(s)://host:port
-- and nothing more (but the root's "/"), the host one a registration may
-- name (an IPv6 address in brackets), the port 1 to 65535. Returns the
-- targets {node, url}, each named host:port until its ledger names it and
-- each address once, or nil, why.
function M.parse_targets(list)
  local targets, seen = {}, {}
  for raw in (list .. ","):gmatch("([^,]*),") do
    local item = raw:gsub("^%s+", ""):gsub("%s+$", "")
    if item ~= "" then
      local url = item:find("://", 1, true) and item or ("http://" .. item)
      local scheme, host, port = url:match("^(https?)://(%[[^%]]*%]):(%d+)/?$")
      if not scheme then
        scheme, host, port = url:match("^(https?)://([^/:]*):(%d+)/?$")
      end
      if not scheme or not consul.is_host(host) or #port > 5 or tonumber(port) < 1 or tonumber(port) > 65535 then
        return nil, string.format("target %q: want host:port or http(s)://host:port, the port 1 to 65535", item)
      end
      url = scheme .. "://" .. host .. ":" .. port
      if not seen[url] then
        seen[url] = true
        targets[#targets + 1] = { node = host .. ":" .. port, url = url }
      end
    end
  end
  if #targets == 0 then
    return nil, "no targets"
  end
  return targets
end

-- Checks a --listen address by the C side's rule (http_split_listen in
-- src/http_server.c; testdata/listen.txt holds both to the same cases):
-- ":PORT", "HOST:PORT" (HOST without a colon) or "[IPV6]:PORT", HOST under
-- 256 bytes, PORT 1 to 7 decimal digits of at most 65535. Returns true, or
-- nil, why.
function M.check_listen(listen)
  local host, port
  if listen:sub(1, 1) == "[" then
    host, port = listen:match("^%[([^%]]*)%]:(.*)$")
  else
    host, port = listen:match("^([^:]*):(.*)$")
  end
  if not host or #host >= 256 or not port:match("^%d+$") or #port >= 8 or tonumber(port) > 65535 then
    return nil, string.format("--listen %q: want :PORT, HOST:PORT or [IPV6]:PORT", listen)
  end
  return true
end

-- The most --cgroup-parent paths (the C core's bound).
M.CGROUP_PARENTS_MAX = 16

-- Validates a --cgroup-parent list: absolute cgroup paths, none of them the
-- root or under a user's own slice (a user names those cgroups as they
-- like). Returns the paths without their trailing slashes, or nil, why.
function M.parse_cgroup_parents(list)
  local parents = {}
  for raw in (list .. ","):gmatch("([^,]*),") do
    local path = raw:gsub("^%s+", ""):gsub("%s+$", ""):gsub("/+$", "")
    if raw:match("%S") then
      if path:sub(1, 1) ~= "/" or path:find("//", 1, true) then
        return nil, string.format("--cgroup-parent %q: want an absolute cgroup path such as /gpu-jobs.slice", raw)
      elseif path == "/user.slice" or path:find("^/user%.slice/") then
        return nil, string.format("--cgroup-parent %q: a user's own slice proves nothing (a user names its cgroups)", raw)
      end
      parents[#parents + 1] = path
    end
  end
  if #parents > M.CGROUP_PARENTS_MAX then
    return nil, string.format("--cgroup-parent: %d paths, at most %d", #parents, M.CGROUP_PARENTS_MAX)
  end
  return parents
end

-- How the value of flag name was given, for a message about it: `--name
-- value` from the command line, else `VARIABLE=value` from the flag's
-- environment variable, else `--name value` (its default).
-- shown: the value to write instead of the flag's (one masked).
function M.given_as(opts, name, shown)
  local flag = BY_NAME[name]
  local value = tostring(shown or opts[name])
  if not opts.set[name] and flag.env then
    return string.format("%s=%s", flag.env, value)
  end
  return string.format("--%s %s", name, value)
end

-- The flags that take an address, each with where its credentials go
-- instead (false: none; a page's links are seen by whoever opens it).
local ADDRESSES = {
  { "nomad-addr", "the token goes in the variable --nomad-token-env names" },
  { "consul", "the token goes in the variable --consul-token-env names" },
  { "prometheus", "a token goes in the variable --prometheus-token-env names" },
  { "docker", false }, { "podman", false }, { "grafana-url", false }, { "nomad-ui-url", false },
}

-- address without the user and password it names ("http://…@host:port"),
-- or nil when it names none.
local function without_credentials(address)
  local masked, n = address:gsub("^(%a[%w+.-]*://)[^/?#]*@", "%1…@")
  return n > 0 and masked or nil
end

local function validate(opts)
  local parents, parents_problem = M.parse_cgroup_parents(opts["cgroup-parent"])
  if not parents then
    return parents_problem
  end
  opts.cgroup_parents = parents
  if opts.set["exit-on"] and not EXIT_ON[opts["exit-on"]] then
    return string.format("--exit-on %q: want warn, bad or error", opts["exit-on"])
  end
  if opts["kernel-log"] == "" then
    return "--kernel-log \"\": want auto, journal, kmsg, off or a FILE of kernel log lines"
  end
  if opts.interval <= 0 then
    return string.format("--interval %s: must be more than 0", clock.format_duration(opts.interval))
  end
  if opts.set.interval and opts.history == "" and (opts.command == "ls" or opts.command == "check") then
    return opts.command .. " --interval needs --history: it is the refresh period of the serve writing the history"
  end
  if opts.timeout <= 0 then
    return string.format("--timeout %s: must be more than 0", clock.format_duration(opts.timeout))
  end
  for _, address in ipairs(ADDRESSES) do
    local name, instead = address[1], address[2]
    local value = opts[name] -- (rules --prometheus is a bool of its own)
    local masked = reads(opts.reader, name) and type(value) == "string" and without_credentials(value)
    if masked then
      return string.format("%s: no user or password in an address: an address is shown in errors and output%s",
        M.given_as(opts, name, masked), instead and ("; " .. instead) or "")
    end
  end
  local listen_ok, listen_problem = M.check_listen(opts.listen)
  if not listen_ok then
    return listen_problem
  end
  for _, name in ipairs { "rules", "scripts" } do
    local dir = opts[name]
    if reads(opts.reader, name) and dir ~= "" and dir:sub(1, 1) ~= "/" then
      return string.format("%s: want an absolute path", M.given_as(opts, name))
    end
  end
  for _, name in ipairs { "demo", "replay" } do
    if opts.command == "rules" and opts.set[name] and not opts.check then
      return string.format("rules --%s needs --check: only rules --check runs the rules on a node", name)
    end
  end
  if opts.demo and opts.replay ~= "" and not opts.check then
    return "--demo and --replay go one at a time"
  end
  if #opts.replays > 1 and not (opts.command == "rules" and opts.check) then
    return "--replay goes once (only rules --check reads several)"
  end
  if opts.command == "rules" then
    if opts.check and opts.prometheus then
      return "rules --check and --prometheus go one at a time"
    end
    if opts.prometheus and opts.json then
      return "rules --prometheus prints YAML: --json does not apply"
    end
    if opts.check_dir and opts.check_dir:sub(1, 1) ~= "/" then
      return string.format("rules --check %s: want an absolute path (in CI: \"$PWD/%s\")", opts.check_dir, opts.check_dir)
    end
  end
  if opts.targets ~= "" then
    local targets, why = M.parse_targets(opts.targets)
    if not targets then
      return why
    end
    opts.target_list = targets
  end
  if opts.command == "fleet" and opts.targets == "" and opts.consul == "" and opts["nomad-service"] == "" then
    return "fleet needs --targets, --consul (or CONSUL_HTTP_ADDR) or --nomad-service to find the nodes"
  end
  local grafana_base, grafana_problem = require("gpuledger.grafana").base(opts["grafana-url"])
  if not grafana_base then
    return grafana_problem
  end
  opts["grafana-url"] = grafana_base
  local nomad_ui_base, nomad_ui_problem = require("gpuledger.nomad_ui").base(opts["nomad-ui-url"])
  if not nomad_ui_base then
    return nomad_ui_problem
  end
  opts["nomad-ui-url"] = nomad_ui_base
  if opts.command == "report" and opts.prometheus == "" then
    return "report needs --prometheus (or PROMETHEUS_URL)"
  end
  opts["nomad-addr"] = opts["nomad-addr"]:gsub("/+$", "")
  if opts["nomad-addr"] == "" then
    opts["nomad-addr"] = BY_NAME["nomad-addr"].default
  end
  if opts.command == "fleet" and opts.subcommand == "serve" then
    opts.listen = opts.set.listen and opts.listen or ":9878"
    opts.interval = opts.set.interval and opts.interval or 30
  end
end

-- The number of single-character edits (insert, delete, replace) that
-- make a into b.
local function edit_distance(a, b)
  local previous = {}
  for j = 0, #b do
    previous[j] = j
  end
  for i = 1, #a do
    local current = { [0] = i }
    for j = 1, #b do
      local replace = previous[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1)
      current[j] = math.min(previous[j] + 1, current[j - 1] + 1, replace)
    end
    previous = current
  end
  return previous[#b]
end

-- The candidate closest to word (a mistyped flag or command), or nil when
-- none is within a third of its length (at least two edits): what `did you
-- mean` offers. Ties go to the first candidate.
function M.closest(word, candidates)
  local best, best_distance = nil, math.max(2, #word // 3) + 1
  for _, candidate in ipairs(candidates) do
    local distance = edit_distance(word, candidate)
    if distance < best_distance then
      best, best_distance = candidate, distance
    end
  end
  return best
end

-- The usage error for --name, a flag no command has: the closest flag of
-- reader (readers_of; else of any command) offered.
local function unknown_flag(reader, name)
  local own, all = {}, {}
  for flag_name in pairs(COMMAND_FLAGS[reader] or {}) do
    own[#own + 1] = flag_name
  end
  for _, flag in ipairs(FLAGS) do
    all[#all + 1] = flag[1]
    if BY_NAME[flag[1]].commands[reader] then
      own[#own + 1] = flag[1]
    end
  end
  table.sort(own)
  local closest = M.closest(name, own) or M.closest(name, all)
  return string.format("unknown flag --%s%s", name, closest and string.format(" (did you mean --%s?)", closest) or "")
end

-- Whether --name is one command's own flag (rules --check, fleet --summary).
local function another_commands_flag(name)
  for _, own in pairs(COMMAND_FLAGS) do
    if own[name] then
      return true
    end
  end
  return false
end

-- The usage error for --name given to a reader (readers_of) that does not
-- read it, naming those that do (fleet for all of its sub-commands).
local function not_read_by(reader, name)
  local takers = {}
  for _, command in ipairs(COMMAND_ORDER) do
    local readers, taking = readers_of(command), {}
    for _, taker in ipairs(readers) do
      if reads(taker, name) then
        taking[#taking + 1] = taker
      end
    end
    if #readers > 1 and #taking == #readers then
      takers[#takers + 1] = command
    else
      table.move(taking, 1, #taking, #takers + 1, takers)
    end
  end
  local last = table.remove(takers)
  local names = #takers > 0 and (table.concat(takers, ", ") .. " and " .. last) or last
  return string.format("--%s is not a flag of %s: %s %s it", name, reader, names, #takers > 0 and "take" or "takes")
end

-- The usage error for `words SUBCOMMAND` (words: fleet, or help fleet)
-- when fleet has no such sub-command.
local function not_a_fleet_subcommand(words, subcommand)
  return string.format("%s %q: want %s or %s", words, subcommand, table.concat(FLEET, ", ", 1, #FLEET - 1), FLEET[#FLEET])
end

-- Parses args (argv without the program name). getenv reads the
-- environment. Returns opts (opts.topic: the command of `help COMMAND`, or
-- the fleet sub-command of `help fleet SUB-COMMAND`, as `fleet check`), or
-- nil plus {help=true, topic=…} when -h or --help asked for help (about
-- the command or fleet sub-command given before it, if any),
-- {version=true} for -v or --version, or {message=…} for a usage error.
-- opts.set[name] is true for every flag given on the command line;
-- opts.reader is the command, or the fleet sub-command (`fleet check`), that
-- reads them.
function M.parse(args, getenv)
  local opts = { set = {}, command = "ls" }
  for name, flag in pairs(BY_NAME) do
    local from_env = flag.env and getenv(flag.env)
    if from_env and from_env ~= "" then
      local value = convert(flag, from_env)
      opts[name] = value == nil and flag.default or value
    else
      opts[name] = flag.default
    end
  end

  local i = 1
  if args[1] and args[1]:sub(1, 1) ~= "-" then
    opts.command = args[1]
    opts.command_given = true
    i = 2
  end
  if opts.command == "help" and args[i] and args[i]:sub(1, 1) ~= "-" then
    opts.topic = args[i] -- help COMMAND
    if not M.COMMANDS[opts.topic] then
      return nil, { message = string.format("help %q: no such command: `gpuledger help` lists them", opts.topic) }
    end
    i = i + 1
    if opts.topic == "fleet" and args[i] and args[i]:sub(1, 1) ~= "-" then -- help fleet SUB-COMMAND
      if not FLEET_ABOUT["fleet " .. args[i]] then
        return nil, { message = not_a_fleet_subcommand("help fleet", args[i]) }
      end
      opts.topic = "fleet " .. args[i]
      i = i + 1
    end
  end
  if not M.COMMANDS[opts.command] then
    local closest = M.closest(opts.command, COMMAND_ORDER)
    return nil, { message = string.format("unknown command %q%s: `gpuledger help` lists the commands", opts.command,
      closest and string.format(" (did you mean %s?)", closest) or "") }
  end
  opts.replays = {}
  if opts.command == "fleet" then
    opts.subcommand = "ls"
    if args[i] and args[i]:sub(1, 1) ~= "-" then
      opts.subcommand = args[i]
      opts.subcommand_given = true
      i = i + 1
    end
    if not FLEET_ABOUT["fleet " .. opts.subcommand] then
      return nil, { message = not_a_fleet_subcommand("fleet", opts.subcommand) }
    end
  end
  opts.reader = opts.subcommand and (opts.command .. " " .. opts.subcommand) or opts.command
  for name, flag in pairs(COMMAND_FLAGS[opts.reader] or {}) do
    opts[name] = flag.default
  end

  while i <= #args do
    local arg = args[i]
    if arg == "--" then
      i = i + 1
      break
    end
    if arg:sub(1, 1) ~= "-" or arg == "-" then
      if not (opts.command == "rules" and opts.check and opts.check_dir == nil) then
        break
      end
      opts.check_dir = arg -- rules --check DIR: its one positional argument
      i = i + 1
      goto continue
    end
    local name, value = arg:match("^%-%-?([^=]+)=(.*)$")
    if not name then
      name = arg:match("^%-%-?(.+)$")
    end
    if name == "h" or name == "help" then
      local about = opts.subcommand_given and opts.reader or opts.command
      return nil, { help = true, topic = opts.topic or (opts.command_given and opts.command ~= "help" and about or nil) }
    end
    if name == "v" or name == "version" then
      return nil, { version = true }
    end
    local flag = (COMMAND_FLAGS[opts.reader] or {})[name] or BY_NAME[name]
    if not flag and not another_commands_flag(name) then
      return nil, { message = unknown_flag(opts.reader, name) }
    end
    if not reads(opts.reader, name) then
      local why = not_read_by(opts.reader, name)
      if not opts.command_given then -- `gpuledger --exit-on bad check`: ls is only the default
        why = why .. " (the command comes first, then its flags)"
      end
      return nil, { message = why }
    end
    if value == nil and flag.kind ~= "bool" then
      i = i + 1
      value = args[i]
      if value == nil then
        return nil, { message = string.format("flag needs an argument: --%s", name) }
      end
    end
    local converted, why = convert(flag, value or "true")
    if converted == nil then
      return nil, { message = why }
    end
    opts[name] = converted
    opts.set[name] = true
    if name == "replay" then
      opts.replays[#opts.replays + 1] = converted
    end
    i = i + 1
    ::continue::
  end
  if args[i] then
    return nil, { message = string.format("unexpected argument %q: the command comes first, then its flags", args[i]) }
  end

  local why = validate(opts)
  if why then
    return nil, { message = why }
  end
  return opts
end

-- The policy choices the operator made on the command line, named as the
-- policy names them (rules/thresholds.lua): only flags given, so that a
-- site's thresholds stay where no flag was given.
function M.policy(opts)
  local policy = {}
  if opts.set["encoder-max"] then
    policy.encoder_max = opts["encoder-max"]
  end
  if opts.set["temp-max"] then
    policy.temp_max = opts["temp-max"]
  end
  if opts["allow-unmanaged"] then
    policy.allow_unmanaged = true
  end
  if opts["no-idle"] then
    policy.idle = false
  end
  return policy
end

-- How text output looks, from where it goes: terminal_columns is the width
-- of the terminal standard output is (nil when it is not one). columns:
-- the width ls fits (nil: the full table, for a pipe, a file or --wide);
-- glyphs: check marks levels with coloured emoji, only on a terminal and
-- without NO_COLOR (https://no-color.org: set and not empty).
local function output(opts, getenv, terminal_columns)
  return {
    columns = not opts.wide and terminal_columns or nil,
    glyphs = terminal_columns ~= nil and (getenv("NO_COLOR") or "") == "",
  }
end

-- The typed configuration of the parsed options (docs/architecture.md):
-- one section per part of the program, so that no flag name reaches past
-- this module. getenv tells whether a site directory was named in the
-- environment (such a directory must exist; the built-in default may not)
-- and NO_COLOR; terminal_columns, the width of the terminal standard output
-- is, or nil.
function M.config(opts, getenv, terminal_columns)
  -- How a site directory was named (M.given_as), for a command that reads
  -- it; nil when it is the default or the command does not read it.
  local function named(flag, variable)
    if reads(opts.reader, flag) and (opts.set[flag] == true or (getenv(variable) or "") ~= "") then
      return M.given_as(opts, flag)
    end
    return nil
  end
  local asks_engines = not opts["no-docker"]
  return {
    command = opts.command,
    subcommand = opts.subcommand,
    topic = opts.topic,
    format = opts.json and "json" or "text", -- the key of a command's renderers (cmd/)
    output = output(opts, getenv, terminal_columns),
    exit_on = opts["exit-on"],
    node = opts.node,
    input = {
      demo = opts.demo, replay = opts.replay ~= "" and opts.replay or nil, replays = opts.replays,
      node_given = opts.set.node == true,
    },
    nvidia = { binary = opts["nvidia-smi"] },
    health = { enabled = not opts["no-health"] },
    kernel_log = { mode = opts["kernel-log"], proc_root = opts.proc },
    proc = { enabled = asks_engines, root = opts.proc, cgroup_parents = opts.cgroup_parents },
    docker = { enabled = asks_engines, endpoint = opts.docker },
    podman = { enabled = asks_engines, endpoint = opts.podman }, -- auto, off or an address: collect decides
    nomad = {
      enabled = not opts["no-nomad"], address = opts["nomad-addr"], token_env = opts["nomad-token-env"],
      token_named = opts.set["nomad-token-env"] == true,
      node_id = opts["nomad-node-id"], ca_cert = opts["nomad-ca-cert"], ca_path = opts["nomad-ca-path"],
      client_cert = opts["nomad-client-cert"], client_key = opts["nomad-client-key"],
      tls_server_name = opts["nomad-tls-server-name"],
    },
    serve = {
      listen = opts.listen, interval = opts.interval, history = opts.history ~= "" and opts.history or nil,
      grafana_url = opts["grafana-url"], nomad_ui_url = opts["nomad-ui-url"],
      web_config = opts["web.config.file"] ~= "" and opts["web.config.file"] or nil,
    },
    policy = M.policy(opts),
    site = {
      rules = opts.rules, scripts = opts.scripts,
      rules_named = named("rules", "GPULEDGER_RULES"), scripts_named = named("scripts", "GPULEDGER_SCRIPTS"),
    },
    rules = { check = opts.check, check_dir = opts.check_dir, prometheus = opts.command == "rules" and opts.prometheus },
    fleet = {
      summary = opts.summary == true, targets = opts.target_list, nomad_service = opts["nomad-service"], nomad_namespace = opts["nomad-namespace"],
      timeout = opts.timeout,
      ca_cert = opts["fleet-ca-cert"] ~= "" and opts["fleet-ca-cert"] or nil,
      basic_auth_file = opts["fleet-basic-auth-file"] ~= "" and opts["fleet-basic-auth-file"] or nil,
      consul = {
        address = opts.consul, service = opts["consul-service"], token_env = opts["consul-token-env"],
        token_named = opts.set["consul-token-env"] == true,
        ca_cert = opts["consul-ca-cert"], ca_path = opts["consul-ca-path"], client_cert = opts["consul-client-cert"],
        client_key = opts["consul-client-key"], tls_server_name = opts["consul-tls-server-name"],
      },
    },
    report = {
      prometheus = opts.command ~= "rules" and opts.prometheus or "", token_env = opts["prometheus-token-env"],
      token_named = opts.set["prometheus-token-env"] == true,
      since = opts.since, timeout_ms = opts.set.timeout and math.ceil(opts.timeout * 1000) or nil,
      ca_cert = opts["prometheus-ca-cert"], ca_path = opts["prometheus-ca-path"],
      client_cert = opts["prometheus-client-cert"], client_key = opts["prometheus-client-key"],
      tls_server_name = opts["prometheus-tls-server-name"],
    },
  }
end

return M
