// The lean quantize kernel's steps of a thread in a tile (quantize_lean.cu), host and device so
// that the host emulation of its tile walk (tests/cuda/lean_tile_test.cpp) runs them: where a
// thread's rows and columns are, its rows' half maxima paired two rows a word, the tile's NaN
// test, and which pair of block scales (its own, or its partner lane's) codes each of its rows.
#pragma once

#include <cstdint>

#include "cuda/pack/quantize_block.hpp"
#include "cuda/pack/search_codes.hpp"
#include "cuda/pack/tile_shape.hpp"
#include "format/host_device.hpp"

namespace metrale::cuda::pack {

// A thread's rows of a tile: the flat index of its first row's first element, and how many of its
// rows lie in the tensor (0 when its columns are past K). 32-bit arithmetic but the flat index.
struct LeanRows {
  std::int64_t first;
  int rows;
};

METRALE_HD inline LeanRows lean_rows(std::int64_t n, std::int64_t k, std::int64_t row0,
                                     std::int64_t col0, int warp, int lane) {
  const auto n32 = static_cast<std::uint32_t>(n), k32 = static_cast<std::uint32_t>(k);
  const std::uint32_t row = static_cast<std::uint32_t>(row0) + kRowsPerWarp * warp;
  const std::uint32_t col = static_cast<std::uint32_t>(col0) + 8 * lane;
  const std::uint32_t left = n32 - row;
  const std::uint32_t rows =
      col < k32 && row < n32 ? (left < kRowsPerWarp ? left : kRowsPerWarp) : 0u;
  return {static_cast<std::int64_t>(row) * k32 + col, static_cast<int>(rows)};
}

// Both halves' maxima of two rows, paired: row a's in the low lane, row b's in the high one.
METRALE_HD inline std::uint32_t paired_half_maxima(const std::uint32_t (&a)[4],
                                                   const std::uint32_t (&b)[4]) {
  const std::uint32_t ma = max_magnitudes(a), mb = max_magnitudes(b);
  return max_lanes(byte_permute(ma, mb, 0x5410u), byte_permute(ma, mb, 0x7632u));
}

// Either 16-bit lane at or above the NaN and Inf magnitudes (lanes hold magnitudes, ≤ 0x7FFF).
METRALE_HD inline bool any_non_finite(std::uint32_t lanes) {
  return ((lanes + 0x00800080u) & 0x80008000u) != 0;
}

// Lanes l and l ^ 1 hold a block's two halves; lane l looks up the scales of rows my_rows and
// my_rows + 1 of its four (my_rows = 2 (l & 1)), its partner those of the other two. What a lane
// sends its partner (the partner's rows' half maxima), and what it keeps (its own rows').
METRALE_HD inline int scaled_rows(int lane) {
  return 2 * (lane & 1);
}
METRALE_HD inline std::uint32_t halves_for_partner(int my_rows, std::uint32_t rows01,
                                                   std::uint32_t rows23) {
  return my_rows ? rows01 : rows23;
}
METRALE_HD inline std::uint32_t halves_kept(int my_rows, std::uint32_t rows01,
                                            std::uint32_t rows23) {
  return my_rows ? rows23 : rows01;
}

// The scale byte of row j: from this lane's pair of scales (`mine`: rows my_rows, my_rows + 1
// in bytes 0, 1) or its partner's (`theirs`).
METRALE_HD inline std::uint32_t row_scale(int j, int my_rows, std::uint32_t mine,
                                          std::uint32_t theirs) {
  const std::uint32_t pair = (j & 2) == my_rows ? mine : theirs;
  return (pair >> (8 * (j & 1))) & 0xFFu;
}

// Whether scale byte `sf` (its codes' constants `c`) can send a block's codes through the
// recipe's division: its d is 0 or Inf and some block can have that scale. Byte 0 never scales a
// block (format::block_scale_value is at least 2^-9, e4m3's byte 0x01), and its d is 0 at every
// scale_2: counted, it would send every tile down the dividing copy of the codes.
METRALE_HD inline bool divides_a_block(int sf, const CodeConstants& c) {
  return sf != 0 && c.divide != 0;
}

}  // namespace metrale::cuda::pack
