-- Site thresholds: temp_max lower than the default 85, and busy_pct for gpu_busy.lua.
return { temp_max = 80, busy_pct = 85 }
