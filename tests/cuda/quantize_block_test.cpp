// The CUDA quantizer's per-block steps (src/cuda/pack/quantize_block.hpp: block amax and scale,
// the two-lane division-free codes, nibble order) on the host, held against the CPU reference
// quantizer (through the public API) block by block: the quantizer stress tensors (zero, large,
// small, subnormal blocks, exact ties, signed zeros; 1e±30 in the seeds' form) and grid values,
// both scale_2 forms. No NaN or Inf: the quantizer refuses them (nonfinite_weight_test.cpp). The
// two-lane code step is also held against threshold_e2m1 for every finite bf16 in either lane.
// What remains for the GPU tests is the kernels' indexing, loads, stores and the scan.
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

// Every finite bf16 in the low lane, and in the high lane, for every scale byte and a spread of
// scale_2 values: codes_of_word equals threshold_e2m1 lane by lane (the nibbles in their order).
TEST(QuantizeBlock, TwoLaneCodesEqualThresholdsForEveryFiniteBf16) {
  const float scale_2_values[] = {1.0f,   0x1p-8f, 1.0f / 2688.0f, 0.1f,     1e-38f,
                                  1e-41f, 1e-45f,  3e35f,          123456.7f};
  for (float scale_2 : scale_2_values) {
    for (int sf = 0; sf < cuda::pack::kScaleBytes; ++sf) {
      const auto byte = static_cast<std::uint8_t>(sf);
      const cuda::pack::E2m1Thresholds th = cuda::pack::e2m1_thresholds(byte, scale_2);
      const cuda::pack::CodeConstants c = cuda::pack::code_constants(byte, scale_2);
      ASSERT_EQ(c.divide != 0, th.divide);
      for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) {
        if ((x & 0x7FFFu) >= cuda::pack::kNonFiniteMagnitude) continue;
        const std::uint32_t y = (x * 40503u + 12345u) & 0xFFFFu;  // a second lane, all patterns
        if ((y & 0x7FFFu) >= cuda::pack::kNonFiniteMagnitude) continue;
        for (const std::uint32_t word : {x | y << 16, y | x << 16}) {
          const std::uint32_t want =
              cuda::pack::quantize_bf16_e2m1(word & 0xFFFFu, th, byte, scale_2) |
              cuda::pack::quantize_bf16_e2m1(word >> 16, th, byte, scale_2) << 4;
          const std::uint32_t got = c.divide
                                        ? cuda::pack::codes_of_word_dividing(word, byte, scale_2)
                                        : cuda::pack::codes_of_word(word, c);
          ASSERT_EQ(got, want) << std::hex << "word 0x" << word << ", sf 0x" << sf << ", scale_2 "
                               << scale_2;
        }
      }
    }
  }
}

}  // namespace
}  // namespace metrale::cuda_test
