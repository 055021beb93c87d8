-- An Xid of the catalogue's app class this boot: usually an application's
-- fault, a hardware one only when it repeats across jobs; also the codes the
-- catalogue does not list (rules/xid_catalogue.lua).

local APP = { app = true } -- the catalogue's class of these Xids

return {
  code = "xid-app",
  level = "WARN",
  health = true,
  doc = "an application Xid (or one the catalogue does not list) was logged this boot",
  order = 15,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      for _, group in ipairs(gl.xids_of_class(gpu, APP)) do
        emit { gpu = gpu, message = gl.xid_text(group, gpu) .. " — " .. group.action .. gl.tenancy(gpu) }
      end
    end
  end,
}
