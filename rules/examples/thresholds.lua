-- Example site thresholds: copy to /etc/gpuledger/rules.d/thresholds.lua.
-- Only the keys set here change; every other key keeps its default
-- (rules/thresholds.lua). Command-line flags still win: --temp-max 85 on a
-- command line beats temp_max = 80 here.
return {
  -- hot when the driver reports no thermal margin: at or above 80 °C.
  temp_max = 80,
  -- encoder-saturated at 8 sessions on every card, whatever its own cap.
  encoder_max = 8,
  -- Keys of the example rules (a site's own rules may add any key):
  memory_full_ratio = 0.9, -- memory_nearly_full.lua
  reserved_idle_long_hours = 6, -- reserved_idle_long.lua
  allowed_containers = { "dcgm-exporter" }, -- allow_listed_container.lua
  fleet_reserved_idle_share = 0.10, -- fleet_reserved_idle.lua
}
