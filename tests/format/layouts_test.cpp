// Tests of format/layouts.hpp. The SFB formula is checked against an independent construction:
// walk the swizzled buffer in memory order, tile by tile (n tiles outer, K tiles inner), inside a
// tile the 32 rows, then the 4 row groups, then the 4 scale columns, and record which (n, b) each
// byte holds. Every real (n, b) must sit where sfb_offset says, every other byte is padding, and
// the buffer is sfb_bytes long. Also the [K/16, N] scale index and the packed transpose index.
#include "format/layouts.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace metrale::format {
namespace {

struct Slot {
  bool real = false;
  std::size_t n = 0, b = 0;
};

std::vector<Slot> naive_sfb_map(std::size_t N, std::size_t K) {
  const std::size_t scale_cols = K / 16;
  const std::size_t n_tiles = (N + 127) / 128, k_tiles = (scale_cols + 3) / 4;
  std::vector<Slot> memory;
  for (std::size_t nt = 0; nt < n_tiles; ++nt)
    for (std::size_t kt = 0; kt < k_tiles; ++kt)
      for (std::size_t row_in_group = 0; row_in_group < 32; ++row_in_group)
        for (std::size_t group = 0; group < 4; ++group)
          for (std::size_t col = 0; col < 4; ++col) {
            Slot slot;
            slot.n = nt * 128 + group * 32 + row_in_group;
            slot.b = kt * 4 + col;
            slot.real = slot.n < N && slot.b < scale_cols;
            memory.push_back(slot);
          }
  return memory;
}

TEST(Layouts, SfbMatchesNaiveConstruction) {
  for (std::size_t N : {1, 2, 31, 32, 33, 127, 128, 129, 255, 256, 300}) {
    for (std::size_t K : {16, 32, 48, 64, 80, 128, 144, 2048, 2880}) {
      const std::vector<Slot> memory = naive_sfb_map(N, K);
      ASSERT_EQ(memory.size(), sfb_bytes(N, K)) << "N " << N << " K " << K;
      EXPECT_EQ(sfb_padded_rows(N) * sfb_padded_cols(K), sfb_bytes(N, K));
      EXPECT_EQ(sfb_padded_rows(N) % 128, 0u);
      EXPECT_EQ(sfb_padded_cols(K) % 4, 0u);
      std::size_t real = 0;
      for (std::size_t at = 0; at < memory.size(); ++at) {
        if (!memory[at].real) continue;
        ++real;
        ASSERT_EQ(sfb_offset(memory[at].n, memory[at].b, K), at)
            << "N " << N << " K " << K << " n " << memory[at].n << " b " << memory[at].b;
      }
      EXPECT_EQ(real, N * (K / 16)) << "every (n, b) appears once";
    }
  }
}

TEST(Layouts, SfbKnownPoints) {
  // First tile: row n at (n%32)·16 + (n/32)·4, column b%4 inside the 4 bytes.
  EXPECT_EQ(sfb_offset(0, 0, 64), 0u);
  EXPECT_EQ(sfb_offset(0, 3, 64), 3u);
  EXPECT_EQ(sfb_offset(1, 0, 64), 16u);
  EXPECT_EQ(sfb_offset(32, 0, 64), 4u);
  EXPECT_EQ(sfb_offset(127, 3, 64), 31u * 16 + 3 * 4 + 3);
  EXPECT_EQ(sfb_offset(0, 4, 128), 512u) << "next K tile";
  EXPECT_EQ(sfb_offset(128, 0, 128), 1024u) << "next N tile after 2 K tiles";
  EXPECT_EQ(sfb_bytes(1, 16), 512u);
  EXPECT_EQ(sfb_bytes(129, 80), 256u * 8);
  EXPECT_EQ(sfb_bytes(300, 2880), 384u * 180);
}

TEST(Layouts, ScaleAndPackedIndices) {
  const std::size_t N = 5, K = 48;
  std::vector<int> seen(N * (K / 16), 0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t b = 0; b < K / 16; ++b) {
      EXPECT_EQ(k16_by_n_offset(n, b, N), b * N + n);
      EXPECT_EQ(n_by_k16_offset(n, b, K), n * 3 + b);
      ++seen[k16_by_n_offset(n, b, N)];
    }
  for (int count : seen) EXPECT_EQ(count, 1);
  // [N, K/2] <-> [K/2, N]: both cover every byte once, and map (n, j) consistently.
  std::vector<int> nk(N * K / 2, 0), kn(N * K / 2, 0);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t j = 0; j < K / 2; ++j) {
      ++nk[packed_nk_offset(n, j, K)];
      ++kn[packed_kn_offset(n, j, N)];
    }
  for (std::size_t i = 0; i < nk.size(); ++i) {
    EXPECT_EQ(nk[i], 1);
    EXPECT_EQ(kn[i], 1);
  }
  EXPECT_EQ(packed_nk_offset(2, 7, K), 2u * 24 + 7);
  EXPECT_EQ(packed_kn_offset(2, 7, N), 7u * 5 + 2);
}

// The decode family's K order: a permutation of each 64-wide k-tile whose inverse is
// decode_k_column, and which puts in each A-fragment slot the k its decoder produces there
// (thread c: block c of the row; word q = k 16c + 8q ..; pair j = codes j and j + 4; pairs 0, 2
// in k16 step 2q / 2q + 1's low columns 2c, 2c + 1, pairs 1, 3 in its high columns 2c + 8, 2c + 9).
TEST(Layouts, DecodeOrderIsAPermutationMatchingTheFragments) {
  std::vector<int> seen(kDecodeKGroup, 0);
  for (int column = 0; column < kDecodeKGroup; ++column) {
    const int k = decode_k_source(column);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, kDecodeKGroup);
    ++seen[static_cast<std::size_t>(k)];
    EXPECT_EQ(decode_k_column(k), column) << "k = " << k;
  }
  for (int count : seen) EXPECT_EQ(count, 1);
  for (int c = 0; c < 4; ++c)
    for (int q = 0; q < 2; ++q)
      for (int pair = 0; pair < 4; ++pair)
        for (int half = 0; half < 2; ++half) {
          const int step = 2 * q + pair / 2, high_columns = pair % 2;
          const int column = 16 * step + 8 * high_columns + 2 * c + half;
          EXPECT_EQ(decode_k_source(column), 16 * c + 8 * q + pair + 4 * half)
              << "thread " << c << ", word " << q << ", pair " << pair << ", half " << half;
        }
}

}  // namespace
}  // namespace metrale::format
