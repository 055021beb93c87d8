-- The rule set a server judges with (`serve` and `fleet serve` alike),
-- kept across SIGHUPs: read at start, read again on each SIGHUP and taken
-- only when it has no error. A refused set leaves the last good one in use,
-- and its errors stay among the rule set's errors (so they show as
-- rule-error findings, in the metrics, /healthz and the page) until a
-- reload succeeds. Every step is one line on stderr.
local judge = require "gpuledger.judge"
local ruleset = require "gpuledger.ruleset"
local server = require "gpuledger.server"

local M = {}

-- The rule set of the site directory dir under the operator's policy
-- choices given (config.policy), its load errors said on stderr. Returns
-- {sources (ruleset.read, what the judge takes), reload() for SIGHUP,
-- refused() the errors of the last refused reload as the set's extra
-- errors, nil after a good one}.
function M.load(core, dir, given)
  local served = { sources = ruleset.read(core, dir) }
  local set = judge.rules(core, served.sources, given, {})
  for _, err in ipairs(set.errors) do
    server.warn("rule-error: " .. err)
  end
  local refused -- the errors of the last refused reload, until a good one

  function served.reload()
    local fresh = ruleset.read(core, dir)
    local fresh_set = judge.rules(core, fresh, given, {})
    if #fresh_set.errors > 0 then
      server.warn(string.format("SIGHUP: the rules in %s have %d error(s); keeping the last good rule set (%d rules)",
        dir, #fresh_set.errors, #set.rules))
      for _, err in ipairs(fresh_set.errors) do
        server.warn("rule-error: " .. err)
      end
      refused = fresh_set.errors
      return
    end
    served.sources, set, refused = fresh, fresh_set, nil
    server.warn(string.format("SIGHUP: reloaded the rule set from %s (%d rules)", dir, #set.rules))
  end

  function served.refused()
    if not refused then
      return nil
    end
    local texts = {}
    for i, err in ipairs(refused) do
      texts[i] = "SIGHUP reload refused, the last good rule set stays in use: " .. err
    end
    return texts
  end

  return served
end

return M
