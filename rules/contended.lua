-- More than one tenant on a GPU: they share its memory and its time.
return {
  code = "contended",
  level = "WARN",
  doc = "more than one tenant shares a GPU",
  order = 30,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if #gpu.tenants > 1 then
        local names = {}
        for i, tenant in ipairs(gpu.tenants) do
          names[i] = gl.tenant_name(tenant)
        end
        emit { gpu = gpu, message = string.format("%d tenants share this GPU: %s", #gpu.tenants, gl.list(names)) }
      end
    end
  end,
}
