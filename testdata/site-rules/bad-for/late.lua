-- ["for"] must be a Prometheus duration such as "10m".
return {
  code = "late",
  level = "WARN",
  ["for"] = "ten minutes",
  evaluate = function() end,
}
