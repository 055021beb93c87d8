-- A row remap failed at some time in the card's life: its memory can no
-- longer repair itself (GPUd and DCGM call it an RMA case).
return {
  code = "row-remap-failed",
  level = "BAD",
  health = true,
  doc = "remapped_rows.failure is Yes: the card's memory repair failed",
  order = 5,
  evaluate = function(ledger, _, emit)
    for _, gpu in ipairs(ledger.entries) do
      if gpu.health and gpu.health.remappedRowsFailure == true then
        emit { gpu = gpu, message = "row remapping failed — take the GPU out of service (drain it, or list it in the nvidia plugin's ignored_gpu_ids), run a field diagnostic and open an RMA" .. gl.tenancy(gpu) }
      end
    end
  end,
}
