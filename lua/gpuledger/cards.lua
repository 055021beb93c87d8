-- What gpuledger knows of NVIDIA cards by the exact name nvidia-smi prints
-- (docs/contract.md#encoder-limit-and-hot): how many NVENC encoder sessions the driver allows and the
-- encoder hardware. A name not listed is unknown: no encoder verdict.
local M = {}

-- encoder_cap: nil means the driver sets no session limit on this card.
local CARDS = {
  ["Quadro RTX 4000"] = { nvenc = 1, generation = "7th (Turing)" },
  ["NVIDIA L4"] = { nvenc = 2, generation = "8th (Ada)" },
  ["Tesla T4"] = { nvenc = 1, generation = "7th (Turing)" },
  ["NVIDIA T4"] = { nvenc = 1, generation = "7th (Turing)" },
  ["NVIDIA A10"] = { nvenc = 1, generation = "7th (Ampere)" },
}

-- GeForce drivers cap concurrent NVENC sessions (NVIDIA's support matrix).
M.GEFORCE_ENCODER_CAP = 12

-- Returns what is known of a card: {known=true, encoder_cap=N|nil, nvenc=,
-- generation=}, or {known=false} for a card not in the table.
function M.lookup(model)
  local card = CARDS[model]
  if card then
    return { known = true, nvenc = card.nvenc, generation = card.generation }
  end
  if model and model:find("GeForce", 1, true) then
    return { known = true, encoder_cap = M.GEFORCE_ENCODER_CAP }
  end
  return { known = false }
end

return M
