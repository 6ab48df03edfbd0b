// The pieces every GEMM of the CPU backend is built from, so that the dense GEMM, the NVFP4 GEMM
// and the grouped NVFP4 GEMM compute each output element the same way, bit for bit:
//   acc = float(Σ_k double(a[m,k]) · double(w[n,k]))   (fp64 accumulation, k ascending)
//   out = bf16_rne(acc · scale_2)                       (one fp32 multiply; 1 for dense)
// Weights are first decoded to fp32 [N, K]; for NVFP4 that is e2m1 × e4m3, exact, without
// scale_2. Host memory only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "metrale/metrale.hpp"

namespace metrale::cpu::detail {

// dst[i] = bf16 value of src[i], for `count` values.
void bf16_to_float(const bf16_bits* src, std::size_t count, float* dst);

// w[n, k] = e2m1(packed code of (n, k)) × e4m3(scale of (n, k/16)) for the [N, K/2] packed weight
// and its scales in `layout` ([K/16, N] or SFB).
void decode_nvfp4_weight(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                         std::int32_t n, std::int32_t k, float* w);

// out[r, c] = bf16_rne(float(Σ_k a[r, k]·w[c, k]) · scale_2) for r < rows, c < n; a is [rows, K]
// and w [N, K], both fp32. Multiplying by scale_2 = 1 is exact, so dense GEMMs pass 1.
void gemm_rows(const float* a, std::int32_t rows, const float* w, std::int32_t n, std::int32_t k,
               float scale_2, bf16_bits* out);

}  // namespace metrale::cpu::detail
