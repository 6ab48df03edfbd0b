// One 16-element block of the CUDA quantizer (quantize.cu), host and device so that the host
// tests can hold it against the CPU reference: the recipe's block amax and e4m3 scale, then the
// codes through the division-free e2m1 step (e2m1_thresholds.hpp), packed two per byte with the
// even k in the low nibble. Input: the block as 8 words of bf16 pairs (element 2w in the low
// half of word w), as a 16-byte vector load delivers it. Any arch.
#pragma once

#include <cstdint>

#include "cuda/pack/e2m1_thresholds.hpp"
#include "format/bf16.hpp"
#include "format/host_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda::pack {

struct PackedBlock {
  std::uint32_t bytes[2];  // the 8 packed bytes, little-endian: byte j = codes 2j (low), 2j + 1
  std::uint8_t scale;      // e4m3
};

METRALE_HD inline PackedBlock quantize_block(const std::uint32_t (&words)[8], float scale_2) {
  float block_amax = 0.0f;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int w = 0; w < 8; ++w) {
    block_amax = format::amax_update(block_amax, format::bf16_to_float(words[w] & 0xFFFFu));
    block_amax = format::amax_update(block_amax, format::bf16_to_float(words[w] >> 16));
  }
  PackedBlock out{{0u, 0u}, format::block_scale_e4m3(block_amax, scale_2)};
  const E2m1Thresholds th = e2m1_thresholds(out.scale, scale_2);
  if (!th.divide) {
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int w = 0; w < 8; ++w) {
      const std::uint32_t even = threshold_e2m1(words[w] & 0xFFFFu, th);
      const std::uint32_t odd = threshold_e2m1(words[w] >> 16, th);
      out.bytes[w / 4] |= (even | (odd << 4)) << (8 * (w % 4));
    }
  } else {
    // d = 0, Inf or NaN: the recipe's division itself (no reachable scale takes this path).
    for (int w = 0; w < 8; ++w) {
      const std::uint32_t even = quantize_bf16_e2m1(words[w] & 0xFFFFu, th, out.scale, scale_2);
      const std::uint32_t odd = quantize_bf16_e2m1(words[w] >> 16, th, out.scale, scale_2);
      out.bytes[w / 4] |= (even | (odd << 4)) << (8 * (w % 4));
    }
  }
  return out;
}

}  // namespace metrale::cuda::pack
