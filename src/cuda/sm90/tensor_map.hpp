// Tensor maps for the bulk tensor copies (TMA) of the sm90 kernels, encoded on the host through
// the driver entry point the CUDA runtime hands out (the library does not link libcuda).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace metrale::cuda::sm90 {

// A row-major bf16 matrix of `rows` x `cols` with `row_stride` elements between rows, copied in
// boxes of `box_rows` rows x 64 columns (128 bytes) that land in shared memory in the 128-byte
// swizzle of a K-major wgmma operand (primitives.cuh); rows past `rows` read as zeros.
// Fails with Status::cuda_error when the driver cannot encode it.
CUtensorMap bf16_rows_sw128(const void* base, std::uint64_t rows, std::uint64_t cols,
                            std::uint64_t row_stride, std::uint32_t box_rows);

}  // namespace metrale::cuda::sm90
