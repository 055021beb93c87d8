-- An Xid of the catalogue's memory class this boot: a memory error the card
-- contained, or a repair it recorded (rules/xid_catalogue.lua).

local MEMORY = { memory = true } -- the catalogue's class of these Xids

return {
  code = "xid-memory",
  level = "WARN",
  health = true,
  doc = "a memory Xid (contained error, remap or retirement event) was logged this boot",
  order = 14,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, group in ipairs(gl.xids_of_class(gpu, MEMORY)) do
        emit { gpu = gpu, message = gl.xid_text(group, gpu) .. " — " .. group.action .. gl.tenancy(gpu) }
      end
    end
  end,
}
