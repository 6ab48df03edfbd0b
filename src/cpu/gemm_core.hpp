// The pieces every GEMM of the CPU backend is built from, so that the dense GEMM, the NVFP4 GEMM
// and the grouped NVFP4 GEMM compute each output element the same way, bit for bit:
//   acc = float(Σ_k double(a[m,k]) · double(w[n,k]))   (fp64 accumulation, k ascending)
//   out = bf16_rne(acc · scale_2)                       (one fp32 multiply; 1 for dense)
// Weights are decoded to fp32 a panel of kPanelRows rows at a time, by each worker into its own
// buffer (for NVFP4 e2m1 × e4m3, exact, without scale_2): the scratch is bounded by
// panel_scratch_bytes(K), never a copy of the whole weight. Host memory only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "metrale/metrale.hpp"

namespace metrale::cpu::detail {

inline constexpr std::size_t kPanelRows = 8;  // weight rows decoded together, reused for all of a

// Writes weight rows [first, first + count) as fp32 [count, K] into dst.
using DecodeRows = std::function<void(std::size_t first, std::size_t count, float* dst)>;

// dst[i] = bf16 value of src[i], for `count` values.
void bf16_to_float(const bf16_bits* src, std::size_t count, float* dst);

// The [N, K] bf16 weight's rows.
DecodeRows bf16_rows(const bf16_bits* weight, std::int32_t k);
// The rows w[n, k] = e2m1(packed code of (n, k)) × e4m3(scale of (n, k/16)) of the [N, K/2]
// packed weight (in `weights`: the seeds' layout, or prepacked, each half unprepacked before it
// is decoded) and its scales in `layout` ([K/16, N] or SFB).
DecodeRows nvfp4_rows(const std::uint8_t* packed, const std::uint8_t* scale, ScaleLayout layout,
                      WeightLayout weights, std::int32_t n, std::int32_t k);

// Bytes of weight panels gemm_rows holds at once (one panel per worker).
double panel_scratch_bytes(std::int32_t k);

// out[r, c] = bf16_rne(float(Σ_k a[r, k]·w[c, k]) · scale_2) for r < rows, c < n; a is fp32
// [rows, K], w the decoded [N, K] weight. Multiplying by scale_2 = 1 is exact, so dense GEMMs
// pass 1.
void gemm_rows(const float* a, std::int32_t rows, const DecodeRows& w, std::int32_t n,
               std::int32_t k, float scale_2, bf16_bits* out);

}  // namespace metrale::cpu::detail
