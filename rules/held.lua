-- Every tenant of the GPU is a Nomad task it was reserved for: as it should be.
return {
  code = "held",
  level = "OK",
  doc = "a GPU is held only by the Nomad tasks it is reserved for",
  order = 60,
  rank = 90,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.state == "held" then
        emit {
          gpu = gpu,
          message = string.format("%d tenant(s), all reserved by Nomad, %d%% util",
            #gpu.tenants, gpu.utilizationPct),
        }
      end
    end
  end,
}
