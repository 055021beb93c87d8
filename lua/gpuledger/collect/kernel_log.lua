-- Collecting this boot's NVRM lines from the kernel log (docs/health.md#xid-events-the-kernel-log):
-- --kernel-log auto tries the journal (journalctl -k -b, spawned without a
-- shell, bounded), then /dev/kmsg (read without blocking), then
-- /var/log/kern.log; journal, kmsg or a FILE of log lines asks for one.
-- None readable is a failed source that says what to grant.
local json = require "gpuledger.json"
local kernel_log = require "gpuledger.sources.kernel_log"

local M = {}

M.JOURNALCTL = { "journalctl", "-k", "-b", "-o", "json", "--no-pager" }
M.KMSG = "/dev/kmsg"
M.KERN_LOG = "/var/log/kern.log"
M.TIMEOUT_MS = 3000 -- journalctl -k reads an indexed journal; past it, auto reads /dev/kmsg
M.MAX_BYTES = 64 * 1024 * 1024

-- The boot time (seconds since the epoch) from <proc_root>/uptime, or nil.
local function boot_time(core, proc_root, now)
  local uptime = core.read_file(proc_root .. "/uptime", 4096)
  local seconds = uptime and tonumber(uptime:match("^(%d+%.?%d*)"))
  return seconds and now - seconds
end

-- The first line of a command's complaint, kept short.
local function first_line(s)
  return (s:match("^%s*([^\n]*)") or ""):sub(1, 200)
end

local function from_journal(core)
  local out, err, status = core.spawn(M.JOURNALCTL, { timeout_ms = M.TIMEOUT_MS, max_bytes = M.MAX_BYTES })
  if not out then
    return nil, "journalctl -k: " .. err
  elseif status ~= 0 then
    local said = first_line(err) ~= "" and first_line(err) or first_line(out)
    return nil, string.format("journalctl -k: exit status %s%s", tostring(status), said ~= "" and (": " .. said) or "")
  end
  local records, dropped, oversized = kernel_log.from_journal(out)
  if not records then
    return nil, "journalctl -k: " .. dropped
  end
  return records, dropped, oversized
end

local function from_kmsg(core, boot)
  local out, err = core.read_kmsg(M.KMSG, M.MAX_BYTES)
  if not out then
    return nil, err
  end
  return kernel_log.from_kmsg(out, boot)
end

local function from_file(core, path, boot, reader)
  local out, err = core.read_file(path, M.MAX_BYTES)
  if not out then
    return nil, err
  end
  return reader(out, boot)
end

-- What to grant when nothing could be read, with the dmesg_restrict setting.
local function grant_hint(core, proc_root)
  local restrict = core.read_file(proc_root .. "/sys/kernel/dmesg_restrict", 64)
  restrict = restrict and restrict:match("%d")
  return string.format("add gpuledger's user to the systemd-journal group, or grant it CAP_SYSLOG%s",
    restrict == "1" and " (kernel.dmesg_restrict is 1)" or "")
end

-- Collects the kernel log source with core as mode says ("auto", "journal",
-- "kmsg", "off" or a file path), now being core.now(). Returns nil for
-- "off", else {ok=true, via, records, dropped?, oversized?} (records:
-- [{text, at?, repeated?}], NVRM lines only, bounded as
-- sources/kernel_log.lua says; dropped: how many lines did not fit, when
-- any; oversized: how many were too long to be read, when any) or
-- {ok=false, via, error}.
function M.collect(core, mode, proc_root, now)
  if mode == "off" then
    return nil
  end
  local boot = boot_time(core, proc_root, now)
  local readers = {
    journal = function() return from_journal(core) end,
    kmsg = function() return from_kmsg(core, boot) end,
    ["kern.log"] = function() return from_file(core, M.KERN_LOG, boot, kernel_log.from_text) end,
  }
  local order = mode == "auto" and { "journal", "kmsg", "kern.log" } or { mode }
  local reasons = {}
  for _, via in ipairs(order) do
    local read = readers[via] or function() return from_file(core, via, nil, kernel_log.from_file) end
    local records, why, oversized = read()
    if records then
      return { ok = true, via = readers[via] and via or "file", path = not readers[via] and via or nil,
               records = json.array(records), dropped = why > 0 and why or nil,
               oversized = oversized > 0 and oversized or nil }
    end
    reasons[#reasons + 1] = why
  end
  local error = "kernel log: " .. table.concat(reasons, "; ")
  if mode ~= "journal" and mode ~= "auto" and mode ~= "kmsg" then
    return { ok = false, via = "file", path = mode, error = error }
  end
  return { ok = false, via = mode, error = error .. " — " .. grant_hint(core, proc_root) }
end

return M
