-- Every tenant of the GPU (or MIG slice) is a Nomad task it was reserved
-- for: as it should be. Utilisation is per GPU (not measured under MIG).
return {
  code = "held",
  level = "OK",
  doc = "a GPU is held only by the Nomad tasks it is reserved for",
  order = 60,
  rank = 90,
  evaluate = function(ledger, _, emit)
    for _, unit in ipairs(gl.units(ledger)) do
      if unit.state == "held" then
        local pct = unit.gpu.utilizationPct
        local util = pct and string.format("%d%% util", pct)
          or (gl.mig_mode(unit.gpu) and "util n/a under MIG" or "unknown util")
        emit {
          gpu = unit.gpu,
          mig = unit.mig,
          message = string.format("%d tenant(s), all reserved by Nomad, %s", #unit.tenants, util),
        }
      end
    end
  end,
}
