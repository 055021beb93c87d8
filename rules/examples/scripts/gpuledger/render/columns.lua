-- Example renderer override: the columns of `gpuledger ls` with the power
-- draw added after the temperature.
--
-- Install: copy to /etc/gpuledger/scripts/gpuledger/render/columns.lua (or
-- run with --scripts DIR / GPULEDGER_SCRIPTS=DIR, this file at
-- DIR/gpuledger/render/columns.lua). Each column is a header and a cell
-- function(ledger, gpu) returning text; the default cells are in
-- gpuledger.render.table's `cells`. A MIG slice's row is given the slice's
-- view, whose sliceOf is its GPU: the power draw is the GPU's, so its
-- slices' cells are empty.
local cells = require("gpuledger.render.table").cells

local M = {}

M.columns = {
  { header = "gpu", cell = cells.gpu },
  { header = "model", cell = cells.model, shrink = true },
  { header = "util", cell = cells.util },
  { header = "memory", cell = cells.memory },
  { header = "temp", cell = cells.temp },
  { header = "power", cell = function(_, gpu) return gpu.sliceOf and "" or (gpu.powerW and string.format("%.0f W", gpu.powerW) or "?") end },
  { header = "enc", cell = cells.enc },
  { header = "state", cell = cells.state },
  { header = "health", cell = cells.health },
  { header = "reserved by (nomad)", cell = cells.reserved },
  { header = "tenants", cell = cells.tenants },
}

return M
