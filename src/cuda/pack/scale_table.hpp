// The lean quantize kernel's block scales (quantize_lean.cu) from a per-CTA table: the recipe's
// scale byte, format::block_scale_e4m3(block amax, scale_2), as a function of the block amax's
// bf16 magnitude bits, built once a CTA with the recipe's own arithmetic. The byte moves only
// over the ~17.8 binades of amax between 2^-9 and 448 times 6·scale_2; the table holds 19
// binades (every alignment of those), topped by the binade of the largest amax the tensor can
// have: the tensor's amax when scale_2 is computed from it, else (the seeds' form, scale_2 = 1)
// the amax that takes the largest scale. A lookup is a subtract, a compare and a byte load; an
// amax outside the table (zero blocks, blocks below 2^-18 of the top, or the seeds' form past
// its saturation) takes the recipe's division, out of line. Host and device, any arch: the host
// tests hold the lookup equal to the recipe for every bf16 amax (scale_table_test.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_fp8.h>
#endif

#include "format/bf16.hpp"
#include "format/host_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda::pack {

constexpr int kBf16Mantissas = 128;  // the bf16 magnitudes of one binade
constexpr int kScaleTableBinades = 19;
constexpr std::uint32_t kScaleTableBytes = kScaleTableBinades * kBf16Mantissas;  // 2432
// bf16 bits of 2688 = 6 · 448: the amax whose block scale saturates at scale_2 = 1.
constexpr std::uint32_t kSeedsSaturatingAmaxBits = 0x4528u;

// The amax whose binade tops the table.
METRALE_HD inline std::uint32_t scale_table_top(bool scale_2_computed,
                                                std::uint32_t tensor_amax_bits) {
  return scale_2_computed ? tensor_amax_bits : kSeedsSaturatingAmaxBits;
}

// The first bf16 magnitude the table holds: the start of the binade 18 below the top's (or 0).
METRALE_HD inline std::uint32_t scale_table_base(std::uint32_t top_amax_bits) {
  const int top_binade = static_cast<int>((top_amax_bits & 0x7FFFu) / kBf16Mantissas);
  const int first = top_binade - (kScaleTableBinades - 1);
  return first > 0 ? static_cast<std::uint32_t>(first) * kBf16Mantissas : 0u;
}

// format::block_scale_e4m3 of a bf16 block amax, its rounding to e4m3 in hardware from sm_89 on:
// cuda_fp8.h's __nv_cvt_float_to_fp8 is then one cvt.rn.satfinite instruction, and its host
// emulation rounds as format::float_to_e4m3 does on a dense sweep of fp32
// (tests/format/e4m3_test.cpp, E4m3Cuda.EncodeMatchesCudaSatfiniteOnDenseSweep). The software
// conversion, a dozen branches, was a third of a scale's ~75 instructions in the proven kernel,
// which computes two scales a thread and tile this way.
METRALE_HD inline std::uint8_t block_scale_byte(std::uint32_t amax_bits, float scale_2) {
  const float amax = format::bf16_to_float(static_cast<std::uint16_t>(amax_bits));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return static_cast<std::uint8_t>(
      __nv_cvt_float_to_fp8(format::block_scale_value(amax, scale_2), __NV_SATFINITE, __NV_E4M3));
#else
  return format::block_scale_e4m3(amax, scale_2);
#endif
}

// Entry i of the table whose first magnitude is `base` (the recipe's scale of that amax).
METRALE_HD inline std::uint8_t scale_table_entry(std::uint32_t base, std::uint32_t i,
                                                 float scale_2) {
  return block_scale_byte(base + i, scale_2);
}

// Where a block amax's scale sits in the table: an index below kScaleTableBytes, or (wrapped
// below the base, or past the top) one at or above it, for the division.
METRALE_HD inline std::uint32_t scale_table_index(std::uint32_t amax_bits, std::uint32_t base) {
  return amax_bits - base;
}

}  // namespace metrale::cuda::pack
