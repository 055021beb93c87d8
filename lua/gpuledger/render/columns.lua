-- The columns of `ls`, left to right: each a header and a cell function
-- (ledger, gpu) → a text, or a list of texts shown one per line; `shrink`
-- marks a column whose texts may be abbreviated on a narrow terminal. A
-- site changes the table by putting its own copy at
-- gpuledger/render/columns.lua in the scripts directory (--scripts,
-- GPULEDGER_SCRIPTS): reorder, drop or add columns; the cells of the
-- default columns are in gpuledger.render.table's `cells`
-- (rules/examples/scripts/gpuledger/render/columns.lua adds power).
local cells = require("gpuledger.render.table").cells

local M = {}

M.columns = {
  { header = "gpu", cell = cells.gpu },
  { header = "model", cell = cells.model, shrink = true },
  { header = "util", cell = cells.util },
  { header = "memory", cell = cells.memory },
  { header = "temp", cell = cells.temp },
  { header = "enc", cell = cells.enc },
  { header = "state", cell = cells.state },
  { header = "health", cell = cells.health },
  { header = "reserved by (nomad)", cell = cells.reserved },
  { header = "tenants", cell = cells.tenants },
}

return M
