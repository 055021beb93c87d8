-- The numbers the default rules judge by. A site overrides any of them with
-- its own thresholds.lua in the rules directory (only the keys it sets
-- change) and may add keys for its own rules; command-line flags, when
-- given, win over both (--encoder-max, --temp-max, --allow-unmanaged,
-- --no-idle).
return {
  -- encoder-saturated: 0 = the card's published session cap (GeForce: 12),
  -- N > 0 = N for every card, < 0 = never.
  encoder_max = 0,
  -- hot, when the driver reports neither a thermal margin nor a slowdown
  -- flag: at or above this °C. 0 = never.
  temp_max = 85,
  -- hot: a thermal margin (°C before the card's own slowdown) at or below this.
  thermal_margin_min = 5,
  -- ecc-uncorrected: uncorrected ECC errors since the driver loaded above this.
  ecc_uncorrected_max = 0,
  -- retired-pages-high: single- plus double-bit retired pages at or above
  -- this (DCGM's retired-pages limit).
  retired_pages_max = 60,
  -- unmanaged-tenant is WARN rather than BAD.
  allow_unmanaged = false,
  -- idle findings (OK) for GPUs nobody holds or reserved.
  idle = true,
  -- A GPU's memory nearly full, as a share of its total in use: the page's
  -- memory bar turns amber at memory_high_ratio and red at
  -- memory_full_ratio, where the example rule memory-nearly-full
  -- (rules/examples/memory_nearly_full.lua) fires.
  memory_high_ratio = 0.85,
  memory_full_ratio = 0.95,
  -- What one rule may spend on one evaluation before it is stopped with a
  -- rule-error: Lua VM instructions and heap growth in bytes.
  rule_instructions = 20000000,
  rule_memory_bytes = 64 * 1024 * 1024,
}
