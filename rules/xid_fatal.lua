-- An Xid of the catalogue's reset or reboot class in this boot's kernel
-- log: the GPU needs a reset or the node a reboot (rules/xid_catalogue.lua).

local FATAL = { reset = true, reboot = true } -- the catalogue's classes of these Xids

return {
  code = "xid-fatal",
  level = "BAD",
  health = true,
  doc = "an Xid that needs a GPU reset or a node reboot was logged this boot",
  order = 4,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, group in ipairs(gl.xids_of_class(gpu, FATAL)) do
        emit { gpu = gpu, message = gl.xid_text(group, gpu) .. " — " .. group.action .. gl.tenancy(gpu) }
      end
    end
  end,
}
