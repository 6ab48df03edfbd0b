// Host buffers for the seed-shaped grouped calls on the CPU backend: two experts of an [8, 32]
// NVFP4 weight (every code 1.0, every scale 1.0, in either scale layout: 512 scale bytes cover
// the SFB tile), `rows` rows of activations and of each output.
#pragma once

#include <cstdint>
#include <vector>

#include "api_test_util.hpp"
#include "metrale/metrale.h"

namespace metrale::test {

struct SeedArrays {
  explicit SeedArrays(int rows = 16)
      : a(static_cast<std::size_t>(rows) * 32, 0x3F80), c(static_cast<std::size_t>(rows) * 8),
        c2(c) {}
  std::vector<std::uint8_t> packed = std::vector<std::uint8_t>(8 * 16, 0x22);
  std::vector<std::uint8_t> scale = std::vector<std::uint8_t>(512, 0x38);
  std::vector<std::uint64_t> packed_ptrs = std::vector<std::uint64_t>(2, ptr_bits(packed.data()));
  std::vector<std::uint64_t> scale_ptrs = std::vector<std::uint64_t>(2, ptr_bits(scale.data()));
  std::vector<float> s2 = std::vector<float>(2, 1.0f);
  std::vector<std::uint16_t> a;
  std::vector<std::uint16_t> c, c2;
};

// metrale_cpu_nvfp4_grouped_gate_up_fused on `s`, gate and up sharing the weights; up_scale2
// overrides the up projection's scale_2 values when given.
inline metrale_status seed_fused(SeedArrays& s, const std::int32_t* ids,
                                 const std::vector<std::int32_t>& offsets,
                                 const float* up_scale2 = nullptr) {
  return metrale_cpu_nvfp4_grouped_gate_up_fused(
      s.a.data(), ids, s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data(),
      s.packed_ptrs.data(), s.scale_ptrs.data(), up_scale2 ? up_scale2 : s.s2.data(), s.c.data(),
      s.c2.data(), offsets.data(), static_cast<std::int32_t>(offsets.size()) - 1, 8, 32, nullptr,
      0, nullptr);
}

}  // namespace metrale::test
