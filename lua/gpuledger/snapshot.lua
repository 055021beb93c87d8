-- The snapshot document (schema 1): what `gpuledger snapshot` prints and
-- --replay and --demo read back. Every source's raw answer or error, with
-- no token, no process argument and no environment value but
-- NVIDIA_VISIBLE_DEVICES in it.
local json = require "gpuledger.json"

local M = {}

M.SCHEMA = 1
M.KIND = "gpuledger-snapshot"
M.MAX_BYTES = 64 * 1024 * 1024

-- A snapshot of node at time `at` (RFC 3339) from sources.
function M.new(node, at, sources)
  return { schema = M.SCHEMA, kind = M.KIND, node = node, at = at, sources = sources }
end

-- Checks a decoded document. Returns it, or nil and why.
function M.validate(doc, where)
  if type(doc) ~= "table" or doc.kind ~= M.KIND then
    return nil, string.format("%s: not a gpuledger snapshot (want \"kind\": %q)", where, M.KIND)
  end
  if doc.schema ~= M.SCHEMA then
    return nil, string.format("%s: snapshot schema %s, this gpuledger reads schema %d", where, tostring(doc.schema), M.SCHEMA)
  end
  if type(doc.at) ~= "string" or type(doc.sources) ~= "table" then
    return nil, string.format("%s: a snapshot needs \"at\" and \"sources\"", where)
  end
  doc.node = type(doc.node) == "string" and doc.node or ""
  return doc
end

-- Reads a snapshot file with core. Returns the snapshot, or nil and why.
function M.load(core, path)
  local content, why = core.read_file(path, M.MAX_BYTES)
  if not content then
    return nil, why
  end
  local doc, err = json.decode(content)
  if not doc then
    return nil, string.format("%s: %s", path, err)
  end
  return M.validate(doc, path)
end

-- The embedded demo node: a plausible 5-GPU node (one GPU in MIG mode, two
-- slices) that gives every finding.
function M.demo(core)
  local content = assert(core.embedded_text("lua/gpuledger/demo/snapshot.json"))
  return assert(M.validate(assert(json.decode(content)), "demo snapshot"))
end

return M
