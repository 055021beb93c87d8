-- Example site rule that sees the whole fleet (fleet check, fleet serve):
-- more than a share of the cluster's GPUs (10 %) are reserved by Nomad and
-- held by nothing. One node's reserved-idle GPU is a WARN of that node; this
-- says when, all nodes together, the cluster is paying for too many of them,
-- and names the jobs that hold the most reservations idle.
--
-- Install: copy to /etc/gpuledger/rules.d/fleet_reserved_idle.lua on the
-- host that runs `fleet serve` (or `fleet check`); the node agents ignore a
-- rule with only evaluate_fleet. Threshold: fleet_reserved_idle_share in the
-- site's thresholds.lua (default 0.10).
return {
  code = "fleet-reserved-idle",
  level = "WARN",
  doc = "more than fleet_reserved_idle_share (10 %) of the fleet's GPUs are reserved by Nomad and held by nothing",
  ["for"] = "30m",
  evaluate_fleet = function(fleet, policy, emit)
    local total = fleet.total
    local share = policy.fleet_reserved_idle_share or 0.10
    if total.gpus == 0 or total.reservedIdle / total.gpus <= share then
      return
    end
    local idle_jobs = {}
    for _, job in ipairs(fleet.jobs) do
      if job.reserved > job.held then
        idle_jobs[#idle_jobs + 1] = { name = job.namespace .. "/" .. job.job, idle = job.reserved - job.held }
      end
    end
    table.sort(idle_jobs, function(a, b)
      if a.idle ~= b.idle then
        return a.idle > b.idle
      end
      return a.name < b.name
    end)
    local named = {}
    for i = 1, math.min(3, #idle_jobs) do
      named[i] = string.format("%s (%d)", idle_jobs[i].name, idle_jobs[i].idle)
    end
    emit {
      message = string.format("%d of %d GPUs (%.0f%%) are reserved by Nomad and held by nothing, over %g%%%s",
        total.reservedIdle, total.gpus, 100 * total.reservedIdle / total.gpus, 100 * share,
        #named > 0 and (": most idle reservations " .. table.concat(named, ", ")) or ""),
    }
  end,
}
