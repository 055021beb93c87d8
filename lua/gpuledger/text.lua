-- Text that reaches a terminal, a JSON string or a URL: made valid UTF-8
-- (each bad byte becomes U+FFFD, as Go's encoders do) and, for terminals,
-- free of control characters; widths counted in characters for table
-- padding; percent-encoded for a URL's query.
local json_write = require "gpuledger.json_write"

local M = {}

local REPLACEMENT = "\u{FFFD}"

-- Returns s with every byte that is not part of valid UTF-8 replaced by
-- U+FFFD: the rule json.encode writes strings by, in C (src/json_text.c's
-- utf8_char_length), so that the two never disagree.
M.valid_utf8 = json_write.valid_utf8

-- True when run, a pattern "^[set]*", spans all of s: the matcher runs
-- along s once and stops at the first byte outside set (a search for such
-- a byte starts again at every byte, and "^[set]*$" walks back from where
-- the run stops).
function M.spans(s, run)
  local _, last = s:find(run)
  return last == #s
end

-- True when s holds the bytes lead followed by a byte from low to high,
-- looked for by plain search for lead (a pattern's search starts again at
-- every byte): most text that has lead has none of those after it (—, ·).
local function has_after(s, lead, low, high)
  local at = s:find(lead, 1, true)
  while at do
    local byte = s:byte(at + #lead)
    if byte and byte >= low and byte <= high then
      return true
    end
    at = s:find(lead, at + 1, true)
  end
  return false
end

-- Returns s safe to print on a terminal: valid UTF-8, with control characters
-- (escape sequences, newlines, DEL, C1) and the bidirectional controls that
-- reorder what follows (U+202A–U+202E, U+2066–U+2069) replaced by U+FFFD.
function M.printable(s)
  s = tostring(s)
  if M.spans(s, "^[ -~]*") then
    return s -- printable ASCII, the common case: nothing to replace
  end
  s = M.valid_utf8(s)
  if not M.spans(s, "^[ -~\128-\255]*") then -- (not a control: ranges are quicker to test than %c; s is valid UTF-8 by now)
    s = s:gsub("[%c\127]", REPLACEMENT)
  end
  if has_after(s, "\xE2\x80", 0xAA, 0xAE) then
    s = s:gsub("\xE2\x80[\xAA-\xAE]", REPLACEMENT)
  end
  if has_after(s, "\xE2\x81", 0xA6, 0xA9) then
    s = s:gsub("\xE2\x81[\xA6-\xA9]", REPLACEMENT)
  end
  if has_after(s, "\xC2", 0x80, 0x9F) then
    s = s:gsub("\xC2[\x80-\x9F]", REPLACEMENT)
  end
  return s
end

-- The mark a string cut by M.cut ends with: "…[cut]".
M.CUT_MARK = json_write.CUT_MARK

-- s when it has at most max bytes; else its first max bytes or fewer (never
-- half a character) followed by M.CUT_MARK, so that a reader sees it was
-- cut. In C (src/json_tree.c), the rule M.cut_strings cuts by.
M.cut = json_write.cut

-- The longest name or label (a container's, a job's, a model, a node's …)
-- and the longest source error that gpuledger keeps from any source (this
-- node's, another node's ledger, Prometheus' labels), in bytes: longer
-- ones are cut (M.cut), so that no source can make every output huge.
M.NAME_MAX = 256
M.ERROR_MAX = 1024

-- value with every string in it (recursively, keys aside) cut to max
-- bytes (M.cut), in place; returns it. With drop (lua-cjson's null, for
-- one), every value equal to it is taken out of its table too (value
-- itself: nil). A table met twice is walked twice. In C (src/json_tree.c).
M.cut_strings = json_write.cut_strings

-- Number of characters (code points) in a valid UTF-8 string.
function M.width(s)
  return utf8.len(s) or #s
end

-- s padded with spaces on the right to `width` characters.
function M.pad(s, width)
  return s .. string.rep(" ", width - M.width(s))
end

-- The bytes Lua's %s matches: space, tab, LF, VT, FF, CR.
local BLANK = { [32] = true, [9] = true, [10] = true, [11] = true, [12] = true, [13] = true }

local byte = string.byte

-- Trims blanks (space, tab, CR, LF) at both ends.
function M.trim(s)
  if not (BLANK[byte(s, 1)] or BLANK[byte(s, -1)]) then
    return s -- most text has none: no copy made
  end
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

-- The first line of s, printable and trimmed, cut to max bytes with "…"
-- (the gist of an answer in an error message).
function M.one_line(s, max)
  local line = M.printable(M.trim(s or ""):match("^[^\n]*") or "")
  if #line > max then
    line = line:sub(1, max) .. "…"
  end
  return line
end

-- The base of a URL flag that links the pages elsewhere (--grafana-url,
-- --nomad-ui-url): "" stays "" (no links); an http(s) URL without white
-- space or quotes loses its trailing slashes; anything else is nil.
function M.http_base(url)
  if url == "" then
    return ""
  elseif not url:match("^https?://[^/%s\"'<>]+[^%s\"'<>]*$") then
    return nil
  end
  return (url:gsub("/+$", ""))
end

-- s percent-encoded for a URL query (RFC 3986: unreserved characters stay).
function M.urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

return M
