-- PCI addresses as each source writes them (docs/health.md#matching-addresses): nvidia-smi's
-- "00000000:3B:00.0", the kernel log's "PCI:0000:3b:00" or "0000:3b:00.0",
-- Nomad's "00000000:3B:00.0" padded with NUL bytes, an old driver's
-- "3b:00". All come down to one key, "0000:3b:00" (domain:bus:device; the
-- function is dropped, as Xid lines never carry it).
local M = {}

-- The key of an address's domain, bus and device (hex digits, any case).
local function key_of(domain, bus, device)
  return string.format("%s:%02x:%02x", ("0000" .. domain):sub(-4):lower(), tonumber(bus, 16), tonumber(device, 16))
end

-- The key of a PCI address, or nil when it is not one.
function M.bus_key(address)
  if type(address) ~= "string" then
    return nil
  end
  -- nvidia-smi's own form ("00000000:3B:00.0"), the common case, read at once
  local domain, bus, device = address:match("^(%x+):(%x%x?):(%x%x?)%.%x+$")
  if domain then
    return key_of(domain, bus, device)
  end
  local s = address:gsub("%z", ""):gsub("%s", ""):lower()
  s = s:gsub("^pci:", ""):gsub("%.%x+$", "")
  local parts = {}
  for part in s:gmatch("[^:]+") do
    parts[#parts + 1] = part
  end
  if #parts == 2 then
    table.insert(parts, 1, "0000")
  end
  if #parts ~= 3 or s:find("::", 1, true) or s:sub(1, 1) == ":" or s:sub(-1) == ":" then
    return nil
  end
  domain, bus, device = parts[1], parts[2], parts[3]
  if not (domain:match("^%x+$") and bus:match("^%x%x?$") and device:match("^%x%x?$")) then
    return nil
  end
  return key_of(domain, bus, device)
end

return M
