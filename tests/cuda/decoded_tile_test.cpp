// The decoder-warpgroup tiles' decoded tile (cuda/sm90/tiled/decoded_tile.hpp): where each
// weight row's value of k lands against the swizzle wgmma reads, and the values in both weight
// layouts. Host logic; the tiles themselves run in tiled_family_test.cpp.
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "cuda/sm90/tiled/decoded_tile.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/prepack.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

// Where the decoder puts a weight row's value of k in a decoded tile (decoded_chunk_offset, and
// pairs_by_k's order within a chunk), against the 128-byte swizzle as wgmma reads a K-major bf16
// tile through sw128_descriptor: the linear offset 128 row + 2 k with its bits 4..6 XORed with
// bits 7..9. Every byte of the 16 KB tile is written exactly once. Host logic.
TEST(DecodedTile, EveryRowAndKLandsWhereTheSwizzledDescriptorReadsIt) {
  std::vector<int> writes(128 * cuda::sm90::kDecodedRowBytes, 0);
  for (int row = 0; row < 128; ++row)
    for (int word = 0; word < 8; ++word) {
      // A word's pairs labelled by their k: pair j = {8 word + j, 8 word + 4 + j}.
      std::uint32_t pairs[4], chunk[4];
      for (int j = 0; j < 4; ++j)
        pairs[j] = static_cast<std::uint32_t>(8 * word + j) |
                   static_cast<std::uint32_t>(8 * word + 4 + j) << 16;
      cuda::sm90::pairs_by_k(pairs, chunk);
      for (int e = 0; e < 8; ++e) {
        const int k = static_cast<int>(chunk[e / 2] >> (16 * (e % 2)) & 0xFFFFu);
        EXPECT_EQ(k, 8 * word + e) << "row " << row << " word " << word << " element " << e;
        const int at = cuda::sm90::decoded_chunk_offset(row, word) + 2 * e;
        const int linear = row * cuda::sm90::kDecodedRowBytes + 2 * k;
        EXPECT_EQ(at, linear ^ ((linear >> 7 & 7) << 4)) << "row " << row << " k " << k;
        ++writes[at];
        ++writes[at + 1];
      }
    }
  EXPECT_EQ(std::count(writes.begin(), writes.end(), 1), static_cast<long>(writes.size()));
}

// The decoded values of a stage's row in both weight layouts: the bit moves' contract
// (fp4_bits.cuh: pair j of a word = {code j, code j + 4} of its eight codes in the seeds' nibble
// order, or {code j of the low half, code j of the high half} prepacked: both k = 8 word + j and
// + 4 + j), times the scale of step word / 2, re-paired by pairs_by_k and placed by
// decoded_chunk_offset, read back at (row, k): e2m1(k) x s x 2^-7 as the oracle dequantizes the
// seeds' bytes, exact in bf16. Random codes and scales over 200 rows. Host logic.
TEST(DecodedTile, ValuesAndKOrderMatchBothWeightLayouts) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 32);
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int row = trial % 128;
    std::uint8_t bytes[32];  // the seeds' row: byte b holds k = 2b (low nibble) and 2b + 1
    for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(next());
    std::uint8_t scale[4];  // steps 0..3: finite e4m3 codes
    for (std::uint8_t& s : scale) s = static_cast<std::uint8_t>(next() % 0x7F);
    for (bool prepacked : {false, true}) {
      std::uint8_t tile[128 * cuda::sm90::kDecodedRowBytes] = {};
      for (int word = 0; word < 8; ++word) {
        std::uint32_t codes = 0;
        for (int b = 0; b < 4; ++b)
          codes |= static_cast<std::uint32_t>(bytes[4 * word + b]) << 8 * b;
        if (prepacked) codes = format::prepack_word(codes);
        // The pairs as the bit moves give them, here from the layout's definition.
        auto code = [&](int j, int half) {
          const std::uint32_t seeds = prepacked ? format::unprepack_word(codes) : codes;
          return static_cast<std::uint8_t>(seeds >> (4 * (j + 4 * half)) & 0xFu);
        };
        const float s = format::e4m3_to_float(scale[word / 2]) / 128.0f;
        std::uint32_t pairs[4], chunk[4];
        for (int j = 0; j < 4; ++j)
          pairs[j] = format::float_to_bf16(format::e2m1_to_float(code(j, 0)) * s) |
                     static_cast<std::uint32_t>(
                         format::float_to_bf16(format::e2m1_to_float(code(j, 1)) * s))
                         << 16;
        cuda::sm90::pairs_by_k(pairs, chunk);
        for (int e = 0; e < 8; ++e) {
          const std::uint16_t value = static_cast<std::uint16_t>(chunk[e / 2] >> (16 * (e % 2)));
          const int at = cuda::sm90::decoded_chunk_offset(row, word) + 2 * e;
          tile[at] = static_cast<std::uint8_t>(value);
          tile[at + 1] = static_cast<std::uint8_t>(value >> 8);
        }
      }
      for (int k = 0; k < 64; ++k) {
        const int linear = row * cuda::sm90::kDecodedRowBytes + 2 * k;
        const int at = linear ^ ((linear >> 7 & 7) << 4);
        const auto got = static_cast<std::uint16_t>(tile[at] | tile[at + 1] << 8);
        const std::uint8_t oracle_code = (bytes[k / 2] >> (4 * (k % 2))) & 0xF;
        const float want =
            format::e2m1_to_float(oracle_code) * format::e4m3_to_float(scale[k / 16]) / 128.0f;
        EXPECT_EQ(format::bf16_to_float(got), want)
            << "row " << row << " k " << k << (prepacked ? " prepacked" : " seeds");
      }
    }
  }
}

#endif  // METRALE_HAS_CUDA
}  // namespace
}  // namespace metrale::cuda_test
