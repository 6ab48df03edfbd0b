// The small kernels of ours that feed CUTLASS's bf16 GEMMs in the reference arm (sm_90a):
//   dequantize  NVFP4 weight packed [N, K/2] + e4m3 scales ([K/16, N] or SFB) -> bf16 [N, K],
//               w = e2m1 · e4m3, exact in bf16; scale_2 is left to the GEMM epilogue (alpha),
//               so the numbers match our own kernels (NVFP4.md §3);
//   gather_rows a[token_ids[first + r], :] -> out[r, :] for r < rows (bf16 rows of K).
// CUTLASS has no NVFP4 weight-only mainloop on Hopper and its sm90 grouped GEMM has no row
// gather, so the reference path materialises both in the caller's workspace first.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "metrale/metrale.hpp"

namespace metrale::reference::cutlass::detail {

// One weight to dequantize: where its bytes are and where its bf16 copy goes.
struct DequantJob {
  const std::uint8_t* packed;  // [N, K/2] e2m1 pairs, even k in the low nibble
  const std::uint8_t* scale;   // e4m3 block scales in the call's ScaleLayout
  bf16_bits* out;              // [N, K] bf16, 32-byte aligned
};

// Dequantizes `single` (when `device_jobs` is null) or the `job_count` jobs of the device array
// `device_jobs`, all of shape [N, K] (K % 16 == 0, packed rows 8-byte aligned).
void launch_dequantize(const DequantJob* device_jobs, int job_count, DequantJob single, int n,
                       int k, ScaleLayout layout, cudaStream_t stream);

// out[r, :] = a[token_ids[first + r], :] for r < rows; a token id outside [0, a_rows) yields a
// zero row instead of a read out of bounds (the device cannot report it without a sync; the
// API validates token ids where it can). Rows of K bf16, 16-byte aligned (K % 8 == 0).
void launch_gather_rows(const bf16_bits* a, int a_rows, const std::int32_t* token_ids, int first,
                        int rows, int k, bf16_bits* out, cudaStream_t stream);

}  // namespace metrale::reference::cutlass::detail
