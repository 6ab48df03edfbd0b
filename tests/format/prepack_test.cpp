// Tests of format/prepack.hpp, the prepacked NVFP4 weight layout. The table is written again here
// from the layout's definition (sign, e1, e0, m of code j), not read from the header: every code
// in every position of a half must land on exactly those bits and nowhere else; prepack_half and
// unprepack_half are inverses over all 65536 halves; the word forms equal the half forms on both
// halves of a word (every single-bit word and a million random ones).
#include "format/prepack.hpp"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace metrale::format {
namespace {

// Bit of the sign, e1, e0 and m of code j in a prepacked half (the header's table, by hand).
constexpr int kTable[4][4] = {
    {15, 8, 7, 6},
    {12, 5, 4, 3},
    {14, 2, 1, 0},
    {13, 11, 10, 9},
};

// A code's prepacked bits by the definition: nibble bit 3 (sign) to kTable[j][0], bit 2 (e1) to
// kTable[j][1], bit 1 (e0) to kTable[j][2], bit 0 (m) to kTable[j][3].
std::uint16_t placed(int j, int code) {
  std::uint16_t out = 0;
  for (int b = 0; b < 4; ++b)
    if ((code >> (3 - b)) & 1) out = static_cast<std::uint16_t>(out | 1u << kTable[j][b]);
  return out;
}

std::vector<std::uint32_t> test_words() {
  std::vector<std::uint32_t> words = {0u, 0xFFFFFFFFu, 0x12345678u, 0x80008000u, 0x00080008u};
  for (int bit = 0; bit < 32; ++bit) words.push_back(1u << bit);
  std::mt19937 rng(2027);
  for (int i = 0; i < (1 << 20); ++i) words.push_back(static_cast<std::uint32_t>(rng()));
  return words;
}

std::uint16_t low(std::uint32_t w) {
  return static_cast<std::uint16_t>(w & 0xFFFFu);
}

std::uint16_t high(std::uint32_t w) {
  return static_cast<std::uint16_t>(w >> 16);
}

TEST(Prepack, HeaderTableIsTheLayout) {
  for (int j = 0; j < 4; ++j)
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(kPrepackedBit[j][b], kTable[j][b]) << "code " << j << " field " << b;
      EXPECT_EQ(prepacked_bit(j, b), kTable[j][b]) << "code " << j << " field " << b;
    }
  // Sixteen distinct positions: a permutation of the half's bits, so nothing is lost.
  std::uint32_t seen = 0;
  for (const auto& row : kTable)
    for (int bit : row) seen |= 1u << bit;
  EXPECT_EQ(seen, 0xFFFFu);
}

TEST(Prepack, EveryCodeInEveryPositionLandsOnItsBits) {
  for (int j = 0; j < 4; ++j)
    for (int code = 0; code < 16; ++code) {
      const auto half = static_cast<std::uint16_t>(code << (4 * j));
      EXPECT_EQ(prepack_half(half), placed(j, code)) << "code " << code << " at position " << j;
      EXPECT_EQ(unprepack_half(placed(j, code)), half) << "code " << code << " at position " << j;
    }
  // The four codes together: bits of different positions never collide.
  for (int c0 = 0; c0 < 16; ++c0)
    for (int c3 = 0; c3 < 16; ++c3) {
      const int c1 = (c0 * 5 + 3) % 16, c2 = (c3 * 7 + 1) % 16;
      const auto half = static_cast<std::uint16_t>(c0 | c1 << 4 | c2 << 8 | c3 << 12);
      EXPECT_EQ(prepack_half(half), placed(0, c0) | placed(1, c1) | placed(2, c2) | placed(3, c3));
    }
}

TEST(Prepack, HalvesAreInversesOverAllHalves) {
  for (std::uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const auto half = static_cast<std::uint16_t>(h);
    ASSERT_EQ(unprepack_half(prepack_half(half)), half) << "half 0x" << std::hex << h;
    ASSERT_EQ(prepack_half(unprepack_half(half)), half) << "half 0x" << std::hex << h;
  }
}

TEST(Prepack, UnprepackWordEqualsBothHalves) {
  for (std::uint32_t w : test_words()) {
    const std::uint32_t want =
        unprepack_half(low(w)) | static_cast<std::uint32_t>(unprepack_half(high(w))) << 16;
    ASSERT_EQ(unprepack_word(w), want) << "word 0x" << std::hex << w;
  }
}

TEST(Prepack, PrepackWordEqualsBothHalves) {
  for (std::uint32_t w : test_words()) {
    const std::uint32_t want =
        prepack_half(low(w)) | static_cast<std::uint32_t>(prepack_half(high(w))) << 16;
    ASSERT_EQ(prepack_word(w), want) << "word 0x" << std::hex << w;
    ASSERT_EQ(unprepack_word(prepack_word(w)), w) << "word 0x" << std::hex << w;
  }
}

}  // namespace
}  // namespace metrale::format
