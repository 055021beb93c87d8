-- NVENC sessions at the limit: the next encoder session on this card fails.
return {
  code = "encoder-saturated",
  level = "WARN",
  doc = "encoder sessions at the card's limit (or --encoder-max)",
  order = 40,
  rank = 60,
  evaluate = function(ledger, policy, emit)
    for _, gpu in ipairs(ledger.entries) do
      local limit, why
      if policy.encoder_max > 0 then
        limit, why = policy.encoder_max, "the site's encoder_max: --encoder-max or thresholds.lua" -- either sets it
      elseif policy.encoder_max == 0 then
        limit = gl.card(gpu.model).encoder_cap
        why = "the GeForce driver's cap, NVIDIA's support matrix"
      end
      if limit and gpu.encoderSessions and gpu.encoderSessions >= limit then -- nil: a lost GPU
        emit {
          gpu = gpu,
          message = string.format("%d encoder sessions, at the limit of %d (%s), %.0f fps average",
            gpu.encoderSessions, limit, why, gpu.encoderAverageFps),
        }
      end
    end
  end,
}
