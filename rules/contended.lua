-- More than one tenant on a GPU (or MIG slice): they share its memory and its time.
-- Processes /proc could not place (an unidentified tenant without a
-- container id) may be any tenant's, so they are not counted as one of
-- their own; a container no engine knows is still a container of its own.
return {
  code = "contended",
  level = "WARN",
  doc = "more than one tenant shares a GPU",
  order = 30,
  rank = 40,
  evaluate = function(ledger, _, emit)
    for _, unit in ipairs(gl.units(ledger)) do
      local names = {}
      for _, tenant in ipairs(unit.tenants) do
        if not (tenant.verdict == "unidentified" and not tenant.containerId) then
          names[#names + 1] = gl.who(tenant)
        end
      end
      if #names > 1 then
        emit { gpu = unit.gpu, mig = unit.mig,
          message = string.format("%d tenants share this %s: %s", #names, unit.noun, gl.list(names)) }
      end
    end
  end,
}
