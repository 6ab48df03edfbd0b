// Tests of format/fragment_order.hpp, the fragment order of prepacked weights (an experiment).
// The order is checked against the wgmma A fragment it exists for, written here from the
// fragment's definition rather than from the header's formula: quad thread c holds, for each k16
// step s of a 64-code group, the columns {2c, 2c + 1} and {2c + 8, 2c + 9} as bf16 pairs; in the
// fragment order they must be pair (2 (s % 2) + high columns) of word 2c + s / 2, lower column in
// the low half. A word's bits are a permutation, and the kernels' decode of a pair (fragment_pair)
// gives every code of every slot as the bf16 e2m1 x 2^-126, whatever the other codes are, written
// here from the bf16 format. Rows convert to the order and back to the input at every tail length,
// and the tail keeps the prepacked halves' layout.
#include "format/fragment_order.hpp"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "format/prepack.hpp"

namespace metrale::format {
namespace {

std::vector<std::uint8_t> random_row(std::size_t k, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> row(k / 2);
  for (auto& byte : row) byte = static_cast<std::uint8_t>(rng());
  return row;
}

int code_at(const std::vector<std::uint8_t>& packed, std::size_t k) {
  return (packed[k / 2] >> (4 * (k % 2))) & 0xF;
}

// The code in slot `slot` of half `half` of word `word` of a fragment-ordered group at `group`.
int fragment_slot(const std::vector<std::uint8_t>& ordered, std::size_t group, int word, int half,
                  int slot) {
  const std::size_t at = group + 4 * static_cast<std::size_t>(word);
  std::uint32_t bits = 0;
  for (int b = 0; b < 4; ++b) bits |= static_cast<std::uint32_t>(ordered[at + b]) << (8 * b);
  return (from_fragment_word(bits) >> (4 * (4 * half + slot))) & 0xF;
}

// The bf16 bits of e2m1 code `code` x 2^-126: the sign at bit 15, e1 e0 (the e2m1 exponent) as the
// bf16 exponent's low bits and m as the top mantissa bit, so that exponent 0 reads as a bf16
// subnormal (m x 2^-127 = 0.5 m x 2^-126) and exponent e > 0 as 2^(e - 127) (1 + m / 2).
std::uint32_t e2m1_bf16_bits(int code) {
  return static_cast<std::uint32_t>(((code >> 3) & 1) << 15 | (code & 7) << 6);
}

TEST(FragmentOrder, WordBitsAreAPermutation) {
  std::uint32_t seen = 0;
  for (int half = 0; half < 2; ++half)
    for (int slot = 0; slot < 4; ++slot)
      for (int field = 0; field < 4; ++field) {
        const int bit = fragment_bit(half, slot, field);
        ASSERT_TRUE(bit >= 0 && bit < 32) << half << " " << slot << " " << field;
        EXPECT_EQ(seen >> bit & 1u, 0u) << "bit " << bit << " twice";
        seen |= 1u << bit;
      }
  EXPECT_EQ(seen, 0xFFFFFFFFu);
}

TEST(FragmentOrder, EveryPairDecodesToItsTwoCodes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 64; ++trial) {
    const std::uint32_t others = static_cast<std::uint32_t>(rng());
    for (int slot = 0; slot < 4; ++slot)
      for (int low = 0; low < 16; ++low)
        for (int high = 0; high < 16; ++high) {
          std::uint32_t nibbles = others;
          nibbles &= ~(0xFu << (4 * slot) | 0xFu << (4 * (4 + slot)));
          nibbles |= static_cast<std::uint32_t>(low) << (4 * slot) |
                     static_cast<std::uint32_t>(high) << (4 * (4 + slot));
          const std::uint32_t word = to_fragment_word(nibbles);
          ASSERT_EQ(from_fragment_word(word), nibbles);
          ASSERT_EQ(fragment_pair(word, slot), e2m1_bf16_bits(low) | e2m1_bf16_bits(high) << 16)
              << "slot " << slot << ", codes " << low << " and " << high << ", word 0x" << std::hex
              << word;
        }
  }
}

TEST(FragmentOrder, EachThreadFindsItsFragmentPairsInItsTwoWords) {
  const std::size_t k = 3 * kFragmentGroupCodes;
  const auto packed = random_row(k, 5);
  std::vector<std::uint8_t> ordered(packed.size());
  convert_fragment_row<true>(packed.data(), ordered.data(), k);
  for (std::size_t g = 0; g < k / kFragmentGroupCodes; ++g)
    for (int c = 0; c < 4; ++c)
      for (int step = 0; step < 4; ++step)
        for (int high_columns = 0; high_columns < 2; ++high_columns)
          for (int lower = 0; lower < 2; ++lower) {
            const int column = 2 * c + 8 * high_columns + lower;
            const std::size_t kk = g * kFragmentGroupCodes + 16 * step + column;
            const int word = 2 * c + step / 2, pair = 2 * (step % 2) + high_columns;
            ASSERT_EQ(fragment_slot(ordered, g * kFragmentGroupBytes, word, lower, pair),
                      code_at(packed, kk))
                << "group " << g << ", thread " << c << ", step " << step << ", column " << column;
          }
}

TEST(FragmentOrder, EveryCodeOfAGroupHasOneSlot) {
  std::vector<int> seen(kFragmentGroupCodes, 0);
  for (int word = 0; word < 8; ++word)
    for (int half = 0; half < 2; ++half)
      for (int slot = 0; slot < 4; ++slot) ++seen[fragment_code(word, half, slot)];
  for (int k = 0; k < kFragmentGroupCodes; ++k) EXPECT_EQ(seen[k], 1) << "k = " << k;
}

TEST(FragmentOrder, RowsGoBackAndTheTailKeepsTheHalves) {
  for (std::size_t k : {16, 32, 48, 64, 96, 112, 2880, 7168 + 48}) {
    SCOPED_TRACE(testing::Message() << "K = " << k);
    const auto packed = random_row(k, static_cast<std::uint32_t>(k));
    std::vector<std::uint8_t> ordered(packed.size()), back(packed.size());
    convert_fragment_row<true>(packed.data(), ordered.data(), k);
    convert_fragment_row<false>(ordered.data(), back.data(), k);
    EXPECT_EQ(back, packed);
    const std::size_t tail = k / kFragmentGroupCodes * kFragmentGroupBytes;
    for (std::size_t i = tail; i < packed.size(); i += 2) {
      const auto half = static_cast<std::uint16_t>(packed[i] | packed[i + 1] << 8);
      EXPECT_EQ(ordered[i] | ordered[i + 1] << 8, prepack_half(half)) << "tail byte " << i;
    }
    auto in_place = packed;
    convert_fragment_row<true>(in_place.data(), in_place.data(), k);
    EXPECT_EQ(in_place, ordered) << "in place";
  }
}

}  // namespace
}  // namespace metrale::format
