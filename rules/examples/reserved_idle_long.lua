-- Example site rule: a GPU that Nomad reserved and that nothing has held
-- for 6 hours or more is BAD (the default reserved-idle is WARN from the
-- first minute). How long comes from gpu.stateSince, which only the history
-- knows (`serve --history FILE` writes it, `ls`/`check --history FILE` read
-- it): a GPU whose start is unknown is not judged here.
--
-- Install: copy to /etc/gpuledger/rules.d/reserved_idle_long.lua (a new
-- code next to reserved-idle). Threshold: reserved_idle_long_hours in the
-- site's thresholds.lua (default 6).
return {
  code = "reserved-idle-long",
  level = "BAD",
  doc = "Nomad reserved a GPU and nothing has held it for reserved_idle_long_hours (6 h)",
  order = 10,
  ["for"] = "10m",
  evaluate = function(ledger, policy, emit)
    if ledger.processesRead == false then
      return -- without the process list, nothing is known to be idle
    end
    local hours = policy.reserved_idle_long_hours or 6
    for _, gpu in ipairs(ledger.entries) do
      local seconds = gl.state_seconds(ledger, gpu)
      if gpu.state == "reserved-idle" and seconds and seconds >= hours * 3600 then
        local first = gpu.reservations[1]
        emit {
          gpu = gpu,
          message = string.format("reserved by %s (alloc %s) and held by nothing for %s (%g h or more)",
            gl.job_task(first), gl.alloc8(first.allocId), gl.human(seconds), hours),
        }
      end
    end
  end,
}
