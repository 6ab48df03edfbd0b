// The TMA tensor maps of a dense bf16 GEMM's operands (TiledWeights::bf16_tma, read by
// tma_stages.cuh), encoded on the host through the runtime's driver entry point, so that
// libmetrale links no libcuda and loads where there is no driver.
#pragma once

#include <cuda.h>

namespace metrale::cuda::sm90 {

// A row-major bf16 matrix [rows, k] as boxes of 64 K x `box_rows` rows in the 128-byte swizzle,
// zeros past its edges. False where it cannot be encoded (no driver entry point; `data` or the
// row pitch not 16-byte aligned), and the caller copies with cp.async instead.
bool encode_bf16_map(CUtensorMap& map, const void* data, long rows, int k, int box_rows);

}  // namespace metrale::cuda::sm90
