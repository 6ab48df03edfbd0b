// The CUDA quantizer's per-block step (src/cuda/pack/quantize_block.hpp: block scale, division-
// free codes, nibble order) on the host, held against the CPU reference quantizer (through the
// public API) block by block: the quantizer stress tensors (zero, large, small, subnormal blocks,
// exact ties, signed zeros, NaN; 1e±30 in the seeds' form) and grid values, both scale_2 forms.
// What remains for the GPU tests is the kernel's indexing, loads, stores and the amax pass.
#include "cuda/pack/quantize_block.hpp"

#include <cstring>

#include <gtest/gtest.h>

#include "check/inputs.hpp"
#include "check/weights.hpp"

namespace metrale::cuda_test {
namespace {

void expect_blocks_match(const std::vector<bf16_bits>& weight, int n, int k, bool recipe) {
  const check::PackedWeight want = check::pack_weight_cpu(weight, n, k, recipe, false);
  for (int row = 0; row < n; ++row) {
    for (int b = 0; b < k / 16; ++b) {
      std::uint32_t words[8];
      std::memcpy(words, weight.data() + std::size_t(row) * k + b * 16, sizeof words);
      const cuda::pack::PackedBlock got = cuda::pack::quantize_block(words, want.scale_2);
      ASSERT_EQ(got.scale, want.scale[std::size_t(b) * n + row]) << "row " << row << " block " << b;
      std::uint8_t bytes[8];
      std::memcpy(bytes, got.bytes, sizeof bytes);
      for (int j = 0; j < 8; ++j) {
        ASSERT_EQ(bytes[j], want.packed[std::size_t(row) * (k / 2) + b * 8 + j])
            << "row " << row << " block " << b << " byte " << j << " (recipe " << recipe << ")";
      }
    }
  }
}

TEST(QuantizeBlock, EqualsTheCpuQuantizer) {
  for (bool recipe : {true, false}) {
    expect_blocks_match(check::pack_stress_bf16(67, 256, 5, !recipe), 67, 256, recipe);
    expect_blocks_match(check::pack_stress_bf16(129, 48, 6, !recipe), 129, 48, recipe);
    expect_blocks_match(check::grid_weight_bf16(33, 96, 7), 33, 96, recipe);
    expect_blocks_match(check::normal_bf16(40 * 512, 8), 40, 512, recipe);
  }
}

}  // namespace
}  // namespace metrale::cuda_test
