-- Instants and durations as gpuledger reads and writes them: RFC 3339 in
-- UTC, Go-style durations (500ms, 15s, 1m30s, 2h; d, w, y for
-- --since) and the short human form of findings (<1m, 45m, 6h12m, 2d1h).
local M = {}

local UNIT_SECONDS = {
  ns = 1e-9, us = 1e-6, ["µs"] = 1e-6, ms = 1e-3, s = 1, m = 60, h = 3600,
}
local LONG_UNIT_SECONDS = { d = 86400, w = 7 * 86400, y = 365 * 86400 }

-- The longest duration Go's time.Duration holds (2^63 - 1 ns, about 292
-- years): past it Go refuses a duration, and so does parse_duration.
M.MAX_DURATION_SECONDS = 9223372036.854775807

-- Parses a Go duration ("1m30s", "500ms", "-5s"; with long_units also d, w
-- and y). Returns seconds (a float), or nil and why.
function M.parse_duration(s, long_units)
  if type(s) ~= "string" or s == "" then
    return nil, "empty duration"
  end
  local sign, rest = s:match("^([+-]?)(.*)$")
  if rest == "0" then
    return 0
  end
  local total, pos = 0, 1
  if rest == "" then
    return nil, string.format("invalid duration %q", s)
  end
  while pos <= #rest do
    local number, unit, next_pos = rest:match("^(%d*%.?%d*)([a-zµ]+)()", pos)
    local seconds_per = unit and (UNIT_SECONDS[unit] or (long_units and LONG_UNIT_SECONDS[unit]))
    if not number or number == "" or number == "." or not seconds_per then
      return nil, string.format("invalid duration %q", s)
    end
    total = total + tonumber(number) * seconds_per
    pos = next_pos
  end
  if total > M.MAX_DURATION_SECONDS then -- inf too, from a number of hundreds of digits
    return nil, string.format("invalid duration %q: longer than the longest, about 292 years", s)
  end
  return sign == "-" and -total or total
end

-- Formats seconds the way Go prints a duration: 15s, 1m30s, 2h0m0s, 500ms.
function M.format_duration(seconds)
  if seconds == 0 then
    return "0s"
  elseif seconds < 0 then
    return "-" .. M.format_duration(-seconds)
  end
  if seconds < 1 then
    return string.format("%gms", seconds * 1000)
  end
  local h = math.floor(seconds / 3600)
  local m = math.floor((seconds % 3600) / 60)
  local s = seconds % 60
  local s_text = s == math.floor(s) and string.format("%ds", s) or string.format("%gs", s)
  if h > 0 then
    return string.format("%dh%dm%s", h, m, s_text)
  elseif m > 0 then
    return string.format("%dm%s", m, s_text)
  end
  return s_text
end

-- The short form of a span: <1m, 45m, 6h12m, 2d1h.
function M.human(seconds)
  if seconds < 60 then
    return "<1m"
  elseif seconds < 3600 then
    return string.format("%dm", seconds // 60)
  elseif seconds < 48 * 3600 then
    return string.format("%dh%dm", seconds // 3600, (seconds % 3600) // 60)
  end
  return string.format("%dd%dh", seconds // 86400, (seconds % 86400) // 3600)
end

-- Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
-- days_from_civil), so that parsing never depends on the local time zone.
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

-- Parses an RFC 3339 instant ("2026-11-29T08:00:00Z", with fractions or an
-- offset). Returns seconds since the epoch, or nil and why.
function M.parse_time(s)
  if type(s) ~= "string" then
    return nil, "not a time"
  end
  local y, mo, d, h, mi, sec, frac, zone =
    s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)[Tt ](%d%d):(%d%d):(%d%d)(%.?%d*)(.*)$")
  if not y then
    return nil, string.format("invalid time %q", s)
  end
  local offset = 0
  if zone ~= "Z" and zone ~= "z" then
    local zsign, zh, zm = zone:match("^([+-])(%d%d):(%d%d)$")
    if not zsign then
      return nil, string.format("invalid time zone in %q", s)
    end
    offset = (tonumber(zh) * 3600 + tonumber(zm) * 60) * (zsign == "-" and -1 or 1)
  end
  local days = days_from_civil(tonumber(y), tonumber(mo), tonumber(d))
  local seconds = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
  if frac ~= "" and frac ~= "." then
    seconds = seconds + tonumber("0" .. frac)
  end
  return seconds - offset
end

-- RFC 3339 in UTC with the fraction Go would print (trailing zeros dropped,
-- at most microseconds here): 2026-11-29T08:00:00.25Z.
function M.format_time(epoch)
  local whole = math.floor(epoch)
  local micros = math.floor((epoch - whole) * 1e6 + 0.5)
  if micros >= 1000000 then
    whole, micros = whole + 1, 0
  end
  local stamp = os.date("!%Y-%m-%dT%H:%M:%S", whole)
  if micros > 0 then
    stamp = stamp .. (string.format(".%06d", micros):gsub("0+$", ""))
  end
  return stamp .. "Z"
end

-- The UTC stamp of headers: 2026-11-29 08:00:00Z.
function M.format_stamp(epoch)
  return os.date("!%Y-%m-%d %H:%M:%SZ", math.floor(epoch))
end

return M
