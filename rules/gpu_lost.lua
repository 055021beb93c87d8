-- A GPU the driver has lost: nvidia-smi no longer lists it (while Nomad's
-- device list or this boot's Xid 79 still names it), or its cells read
-- [GPU is lost]. Nothing placed on it can run until the node reboots.
return {
  code = "gpu-lost",
  level = "BAD",
  health = true,
  doc = "a GPU fell off the bus: nvidia-smi no longer lists it, or reads [GPU is lost]",
  order = 1,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      local what
      if gpu.missing then
        local seen = {}
        if gpu.nomadDevice then
          seen[#seen + 1] = "Nomad still lists it"
        end
        for _, group in ipairs(gpu.xids or {}) do
          if group.xid == 79 then
            seen[#seen + 1] = "Xid 79 this boot" .. (group.last and (" at " .. group.last) or "")
          end
        end
        what = string.format("nvidia-smi no longer lists the GPU at %s (%s)", gpu.busId, table.concat(seen, "; "))
      elseif gpu.health and gpu.health.lost then
        what = "the driver reports [GPU is lost]"
      end
      if what then
        emit { gpu = gpu, message = what .. " — drain the node and reboot it; if it repeats, check the card's seating, riser and power" .. gl.tenancy(gpu) }
      end
    end
  end,
}
