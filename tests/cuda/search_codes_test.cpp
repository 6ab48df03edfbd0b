// The lean quantize kernel's codes (src/cuda/pack/search_codes.hpp) on the host: the host model of
// PTX's prmt on hand-worked cases of its default mode (sign copies included), then
// the two-lane binary search against threshold_e2m1 for every finite bf16 in either lane, every
// scale byte and a spread of scale_2 values, as the thermometer code is held in
// quantize_block_test.cpp. A wrong selector in the kernel's search fails here (tried once:
// kLaneMaskSelector 0xBB88 for 0xBB99).
#include "cuda/pack/search_codes.hpp"

#include <cstdint>

#include <gtest/gtest.h>

namespace metrale::cuda_test {
namespace {

using cuda::pack::byte_permute;

TEST(SearchCodes, BytePermuteFollowsPtxDefaultMode) {
  const std::uint32_t a = 0x83028100u, b = 0x87068504u;  // bytes 0-7: 00 81 02 83 04 85 06 87
  EXPECT_EQ(byte_permute(a, b, 0x3210u), a);
  EXPECT_EQ(byte_permute(a, b, 0x7654u), b);
  EXPECT_EQ(byte_permute(a, b, 0x0123u), 0x00810283u);  // reversed
  EXPECT_EQ(byte_permute(a, b, 0x4051u), 0x04008581u);
  // Sign copies: byte 1 (0x81) and 5 (0x85) are negative, byte 0, 2 and 4 are not.
  EXPECT_EQ(byte_permute(a, b, 0x8888u), 0x00000000u);
  EXPECT_EQ(byte_permute(a, b, 0x9999u), 0xFFFFFFFFu);
  EXPECT_EQ(byte_permute(a, b, 0xDCBAu), 0xFF00FF00u);
  EXPECT_EQ(byte_permute(a, b, 0xF1E9u), 0xFF8100FFu);  // signs of 0x81, 0x06; 0x81; sign of 0x87
}

TEST(SearchCodes, LaneMasksCopyEachLanesTopBit) {
  EXPECT_EQ(cuda::pack::lane_masks(0x80008000u), 0xFFFFFFFFu);
  EXPECT_EQ(cuda::pack::lane_masks(0x7FFF8000u), 0x0000FFFFu);
  EXPECT_EQ(cuda::pack::lane_masks(0x80007FFFu), 0xFFFF0000u);
  EXPECT_EQ(cuda::pack::lane_masks(0x00800080u), 0x00000000u);  // the low bytes' signs: ignored
}

// Every finite bf16 in the low lane, and in the high lane, with a second lane of every pattern:
// the search's code byte equals threshold_e2m1 of each lane, for every scale byte whose d is
// finite and nonzero (the kernel takes the division for the others, as the proven kernel does).
TEST(SearchCodes, EqualThresholdsForEveryFiniteBf16InEitherLane) {
  const float scale_2_values[] = {1.0f,   0x1p-8f, 1.0f / 2688.0f, 0.1f,     1e-38f,
                                  1e-41f, 1e-45f,  3e35f,          123456.7f};
  std::int64_t checked = 0;
  for (float scale_2 : scale_2_values) {
    for (int sf = 0; sf < cuda::pack::kScaleBytes; ++sf) {
      const auto byte = static_cast<std::uint8_t>(sf);
      const cuda::pack::E2m1Thresholds th = cuda::pack::e2m1_thresholds(byte, scale_2);
      const cuda::pack::CodeConstants c = cuda::pack::code_constants(byte, scale_2);
      if (c.divide) continue;
      for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) {
        if ((x & 0x7FFFu) >= cuda::pack::kNonFiniteMagnitude) continue;
        const std::uint32_t y = (x * 40503u + 12345u) & 0xFFFFu;  // a second lane, all patterns
        if ((y & 0x7FFFu) >= cuda::pack::kNonFiniteMagnitude) continue;
        for (const std::uint32_t word : {x | y << 16, y | x << 16}) {
          const std::uint32_t want = cuda::pack::threshold_e2m1(word & 0xFFFFu, th) |
                                     cuda::pack::threshold_e2m1(word >> 16, th) << 4;
          const std::uint32_t got = cuda::pack::search_code_byte(word, c) & 0xFFu;
          if (got != want) {
            FAIL() << std::hex << "word 0x" << word << ", sf 0x" << sf << ", scale_2 " << scale_2
                   << ": got 0x" << got << ", want 0x" << want;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// A row of four words: the bytes in their order, each as pack_four_words gives it.
TEST(SearchCodes, RowEqualsPackFourWords) {
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (float scale_2 : {1.0f, 1.0f / 2688.0f, 3e-7f}) {
    for (int sf = 1; sf < cuda::pack::kScaleBytes; ++sf) {
      const auto byte = static_cast<std::uint8_t>(sf);
      const cuda::pack::CodeConstants c = cuda::pack::code_constants(byte, scale_2);
      if (c.divide) continue;
      for (int trial = 0; trial < 256; ++trial) {
        std::uint32_t words[4];
        for (std::uint32_t& w : words) {
          state = state * 6364136223846793005ull + 1442695040888963407ull;
          w = static_cast<std::uint32_t>(state >> 32) & 0xFF7FFF7Fu;  // finite: exponent < 0xFF
        }
        ASSERT_EQ(cuda::pack::search_codes_of_row(words, c),
                  cuda::pack::pack_four_words(words, c, byte, scale_2))
            << "sf 0x" << std::hex << sf;
      }
    }
  }
}

}  // namespace
}  // namespace metrale::cuda_test
