-- The Xid catalogue: what each Xid code means and what the operator does
-- about it, from NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors,
-- its immediate and investigatory actions; docs/health.md#the-xid-catalogue).
-- A code whose immediate action is RESET_GPU (or one of the workflows that
-- start with a reset: WORKFLOW_XID_48, the NVLink ones) is "reset"; one whose
-- action is to restart the machine or look at it (RESTART_BM, RESTART_VM,
-- CHECK_UVM, CHECK_MECHANICALS) is "reboot"; IGNORE with an investigation
-- to follow (160, 161) is "app". Codes the catalogue lists without a bucket
-- are classed by what its notes on them say: 171 and 172 detail an Xid 48,
-- 169 is 62's halt in another micro-controller, 168 asks for ECC (memory),
-- 163–165 are power smoothing going off or wearing out (no reset: app),
-- 162 is it coming back (ignore). 166 and 170 (confidential computing
-- mode only) come with no action: they stay unlisted. The catalogue's last
-- code is 172; later codes are unlisted too (docs/health.md).
-- The class decides the finding: "reset" and "reboot" → xid-fatal (BAD),
-- "memory" → xid-memory (WARN), "app" → xid-app (WARN), "ignore" → none.
-- NVLink5 codes (144–150) print Fatal or Nonfatal: `nonfatal` is the class
-- of a line that says Nonfatal. A code missing here is an "app" event.
--
-- A site extends or regrades it with its own xid_catalogue.lua in the rules
-- directory: each code it names replaces the fields it sets, e.g.
--   return { [13] = { class = "ignore" }, [43] = { class = "memory" } }
local RESTART_APP = "restart the application; if it repeats across different jobs, have the GPU checked"
local RESET_GPU = "drain the GPU, then reset it (nvidia-smi -r) or reboot the node; if it recurs after two reboots, have the hardware inspected"
local NVLINK = "drain the GPU, reset it or reboot the node; check the NVLink connections and the fabric manager; if it recurs, have the hardware inspected"
local REBOOT = "drain and reboot the node; if it recurs, contact support"

return {
  [8] = { class = "app", meaning = "GPU stopped processing (idle timeout)", action = RESTART_APP },
  [13] = { class = "app", meaning = "graphics engine exception (usually an application bug)", action = "tell the job's owner; restart the application" },
  [31] = { class = "app", meaning = "GPU memory page fault (illegal address)", action = "tell the job's owner; restart the application" },
  [43] = { class = "app", meaning = "GPU stopped processing (a channel was reset after an application fault)", action = RESTART_APP },
  [45] = { class = "ignore", meaning = "cleanup after an earlier error", action = "look at the Xid before it" },
  [46] = { class = "reset", meaning = "GPU stopped processing (the driver could not recover the engine)", action = RESET_GPU },
  [48] = { class = "reset", meaning = "double-bit ECC error", action = RESET_GPU },
  [54] = { class = "reboot", meaning = "auxiliary power is not connected to the GPU board",
    action = "drain the node, power it off and connect or reseat the GPU's auxiliary power cable" },
  [61] = { class = "reboot", meaning = "internal micro-controller breakpoint", action = REBOOT },
  [62] = { class = "reset", meaning = "internal micro-controller halt", action = RESET_GPU },
  [63] = { class = "memory", meaning = "memory row remap (or page retirement) recorded", action = "check for a pending row remap; reset the GPU when it is idle" },
  [64] = { class = "reset", meaning = "memory row remap (or page retirement) failed", action = RESET_GPU },
  [68] = { class = "app", meaning = "video decoder (NVDEC) exception", action = RESTART_APP },
  [69] = { class = "app", meaning = "graphics engine class error", action = RESTART_APP },
  [74] = { class = "reset", meaning = "NVLink error", action = NVLINK },
  [79] = { class = "reboot", meaning = "GPU has fallen off the bus", action = "drain and reboot the node; if it repeats, check the card's seating, riser, PCIe slot and power" },
  [92] = { class = "memory", meaning = "high single-bit ECC error rate", action = "watch the corrected ECC count; plan a diagnostic" },
  [94] = { class = "memory", meaning = "contained uncorrectable memory error (only the application that touched it was stopped)", action = "restart the application; check for a pending row remap" },
  [95] = { class = "reset", meaning = "uncontained uncorrectable memory error (every application on the GPU is affected)", action = RESET_GPU },
  [109] = { class = "reset", meaning = "context switch timeout", action = RESET_GPU },
  [110] = { class = "reset", meaning = "security fault", action = RESET_GPU },
  [119] = { class = "reset", meaning = "GSP RPC timeout", action = RESET_GPU },
  [120] = { class = "reset", meaning = "GSP error", action = RESET_GPU },
  [121] = { class = "app", meaning = "C2C (chip-to-chip) link error", action = "watch it; if it repeats, contact support" },
  [136] = { class = "reset", meaning = "link training failed", action = RESET_GPU },
  [140] = { class = "reset", meaning = "unrecovered ECC error", action = RESET_GPU },
  [143] = { class = "reset", meaning = "GPU initialization error", action = RESET_GPU },
  [144] = { class = "reset", nonfatal = "app", meaning = "NVLink5 SAW error", action = NVLINK },
  [145] = { class = "reset", nonfatal = "app", meaning = "NVLink5 RLW error", action = NVLINK },
  [146] = { class = "reset", nonfatal = "app", meaning = "NVLink5 TLW error", action = NVLINK },
  [147] = { class = "reset", nonfatal = "app", meaning = "NVLink5 TREX error", action = NVLINK },
  [148] = { class = "reset", nonfatal = "app", meaning = "NVLink5 NVLPW error", action = NVLINK },
  [149] = { class = "reset", nonfatal = "app", meaning = "NVLink5 NETIR error", action = NVLINK },
  [150] = { class = "reset", nonfatal = "app", meaning = "NVLink5 MSE error", action = NVLINK },
  [151] = { class = "reboot", meaning = "key rotation error (confidential computing)", action = REBOOT },
  [154] = { class = "app", meaning = "GPU recovery action changed", action = "read gpu_recovery_action (nvidia-smi -q) and do what it asks" },
  [155] = { class = "reset", meaning = "NVLink software-defined error", action = NVLINK },
  [156] = { class = "reset", meaning = "resource retirement event (a reset activates it)", action = RESET_GPU },
  [157] = { class = "memory", meaning = "resource retirement failure", action = "watch it; if it repeats, contact support" },
  [158] = { class = "reset", meaning = "GPU fatal timeout", action = RESET_GPU },
  [159] = { class = "reboot", meaning = "CHI non-data error (the GPU's link to the CPU's memory)", action = REBOOT },
  [160] = { class = "app", meaning = "channel retirement event", action = "watch it; if it repeats, look for a driver or application bug" },
  [161] = { class = "app", meaning = "channel retirement failure", action = "watch it; if it repeats, look for a driver or application bug" },
  [162] = { class = "ignore", meaning = "power smoothing circuitry engaged again", action = "none: the capability an Xid 163 turned off is back" },
  [163] = { class = "app", meaning = "power smoothing circuitry disengaged",
    action = "no reset needed; to keep power smoothing, resolve the thermal events, or reload the driver (or reset the GPU) if it timed out" },
  [164] = { class = "app", meaning = "power smoothing circuitry near the end of its lifetime",
    action = "watch the power swings; plan to replace the GPU if they are not acceptable" },
  [165] = { class = "app", meaning = "power smoothing circuitry lifetime exhausted (smoothing is off, power swings)",
    action = "check the datacenter can absorb the power swings; replace the GPU if they are not acceptable" },
  [167] = { class = "reset", meaning = "PCIe fatal timeout", action = RESET_GPU },
  [168] = { class = "memory", meaning = "reduced GPU memory capacity (errors in the write-protected region)",
    action = "enable ECC so rows can be remapped, then reboot the node; until then the GPU runs with less memory" },
  [169] = { class = "reset", meaning = "internal micro-controller halt (SEC2)", action = RESET_GPU },
  [171] = { class = "reset", meaning = "uncorrectable DRAM error (the detail of an Xid 48)", action = RESET_GPU },
  [172] = { class = "reset", meaning = "uncorrectable SRAM error (the detail of an Xid 48)", action = RESET_GPU },
}
