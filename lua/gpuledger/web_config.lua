-- The file of --web.config.file, in the format of the Prometheus exporters'
-- (exporter-toolkit's web configuration): the part gpuledger serves with,
--
--   tls_server_config:
--     cert_file: /etc/gpuledger/tls.crt
--     key_file: /etc/gpuledger/tls.key
--   basic_auth_users:
--     prometheus: $2y$10$…        # bcrypt, as htpasswd -nBC 10 prints it
--
-- read as the YAML it is written in: block mappings by indentation, plain
-- or quoted scalars, comments. Any other key, or another YAML construct, is
-- refused with the key or line named, so that a setting gpuledger does not
-- apply (client certificates, a TLS version) is never ignored silently.
-- Pure: the caller reads the file.
local M = {}

-- What each section may hold; true: a mapping of any names (the users).
local KEYS = {
  tls_server_config = { cert_file = true, key_file = true },
  basic_auth_users = true,
}

-- The hashes crypt() checks as bcrypt.
local BCRYPT = "^%$2[aby]%$%d%d%$[./%w]+$"

-- A scalar's value: plain (a comment after " #" dropped), 'single' or
-- "double" quoted (only \\ and \" escapes). Returns it, or nil and why.
local function scalar(text)
  local quote = text:sub(1, 1)
  if quote == "'" then
    local value, rest = text:match("^'(.-)'%s*(.*)$")
    if value and (rest == "" or rest:match("^#")) then
      return value
    end
    return nil, "an unclosed or unfinished 'quoted' value"
  elseif quote == '"' then
    local value, i = {}, 2
    while i <= #text do
      local c = text:sub(i, i)
      if c == '"' then
        local rest = text:sub(i + 1):match("^%s*(.*)$")
        if rest == "" or rest:match("^#") then
          return table.concat(value)
        end
        break
      elseif c == "\\" and text:sub(i + 1, i + 1):match('["\\]') then
        c, i = text:sub(i + 1, i + 1), i + 1
      elseif c == "\\" then
        return nil, 'a "quoted" value with an escape other than \\" and \\\\'
      end
      value[#value + 1] = c
      i = i + 1
    end
    return nil, 'an unclosed or unfinished "quoted" value'
  elseif text:match("^[%[{&*!|>%%@`]") then
    return nil, "a YAML construct gpuledger does not read (flow collections, anchors, tags, block scalars)"
  end
  return (text:gsub("%s+#.*$", ""):gsub("%s+$", ""))
end

-- The lines of text as {indent, key, value (nil: a mapping follows), n},
-- or nil and why (naming the line).
local function entries(text)
  local list = {}
  local n = 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    line = line:gsub("\r$", "")
    if not (line:match("^%s*$") or line:match("^%s*#") or (n == 1 and line:match("^%-%-%-%s*$"))) then
      local indent, key, rest = line:match("^( *)([%w_.%-]+):%s*(.-)%s*$")
      if not indent then
        return nil, string.format("line %d: want `key: value` (tabs, lists and other YAML are not read): %s", n, line)
      end
      local value, why
      if rest ~= "" and not rest:match("^#") then
        value, why = scalar(rest)
        if not value then
          return nil, string.format("line %d: %s", n, why)
        end
      end
      list[#list + 1] = { indent = #indent, key = key, value = value, n = n }
    end
  end
  return list
end

-- Parses the file's text. Returns {tls = {cert_file, key_file} or nil,
-- users = {{name, hash}, …} in the file's order}, or nil and why: a key
-- gpuledger does not know (named), a section without what it needs, a
-- hash that is no bcrypt hash, another YAML construct.
function M.parse(text)
  local list, why = entries(text)
  if not list then
    return nil, why
  end
  local config, seen = { users = {} }, {}
  local section, section_indent
  for _, e in ipairs(list) do
    if section and e.indent > section_indent then
      local allowed = KEYS[section]
      if allowed ~= true and not allowed[e.key] then
        return nil, string.format("line %d: %s.%s: not a key gpuledger knows (it reads %s)", e.n, section, e.key,
          section == "tls_server_config" and "cert_file and key_file" or "user names")
      elseif e.value == nil or e.value == "" then
        return nil, string.format("line %d: %s.%s: want a value", e.n, section, e.key)
      elseif seen[section .. "." .. e.key] then
        return nil, string.format("line %d: %s.%s: given twice", e.n, section, e.key)
      end
      seen[section .. "." .. e.key] = true
      if section == "basic_auth_users" then
        if not e.value:match(BCRYPT) then
          return nil, string.format("line %d: basic_auth_users.%s: want a bcrypt hash ($2y$…, as htpasswd -nB prints it)",
            e.n, e.key)
        end
        config.users[#config.users + 1] = { name = e.key, hash = e.value }
      else
        config.tls = config.tls or {}
        config.tls[e.key] = e.value
      end
    elseif e.indent == 0 then
      if not KEYS[e.key] then
        return nil, string.format("line %d: %s: not a key gpuledger knows (it reads tls_server_config and basic_auth_users)",
          e.n, e.key)
      elseif e.value ~= nil or seen[e.key] then
        return nil, string.format("line %d: %s: want a mapping below it, once", e.n, e.key)
      end
      seen[e.key] = true
      section, section_indent = e.key, 0
    else
      return nil, string.format("line %d: %s: indented, but under no section", e.n, e.key)
    end
  end
  if config.tls and not (config.tls.cert_file and config.tls.key_file) then
    return nil, "tls_server_config: want both cert_file and key_file"
  end
  if seen.tls_server_config and not config.tls then
    return nil, "tls_server_config: want cert_file and key_file"
  end
  return config
end

return M
