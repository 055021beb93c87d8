-- More than one tenant on a GPU: they share its memory and its time.
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
    for _, gpu in ipairs(ledger.entries) do
      local names = {}
      for _, tenant in ipairs(gpu.tenants) do
        if not (tenant.verdict == "unidentified" and not tenant.containerId) then
          names[#names + 1] = gl.tenant_name(tenant)
        end
      end
      if #names > 1 then
        emit { gpu = gpu, message = string.format("%d tenants share this GPU: %s", #names, gl.list(names)) }
      end
    end
  end,
}
