// Index functions of the NVFP4 weight layouts (NVFP4.md §5-6). n is the output channel (row of the
// weight), b = k/16 the scale column, j = k/2 the packed byte column. All row-major.
//   packed [N, K/2]    byte (n, j) at n·(K/2) + j; two e2m1 codes, even k in the low nibble
//   packed [K/2, N]    byte (n, j) at j·N + n      (the "k to n" transpose; bytes move whole)
//   scale  [K/16, N]   scale (n, b) at b·N + n     (written by pack_bf16_weight_to_nvfp4_t)
//   scale  [N, K/16]   scale (n, b) at n·(K/16) + b (the checkpoint's weight_scale)
//   scale  SFB         128×4 tiles of CUTLASS sm100/sm120 and cuBLASLt VEC16_UE4M3, below
// Host and device, any arch.
#pragma once

#include <cstddef>

#include "format/host_device.hpp"

namespace metrale::format {

// ---- block scales -------------------------------------------------------------------------------

METRALE_HD inline std::size_t k16_by_n_offset(std::size_t n, std::size_t b, std::size_t N) {
  return b * N + n;
}

METRALE_HD inline std::size_t n_by_k16_offset(std::size_t n, std::size_t b, std::size_t K) {
  return n * (K / 16) + b;
}

// SFB: rows pad to a multiple of 128, scale columns (K/16, rounded up to whole 64-element K
// tiles) to a multiple of 4. One 128×4 tile is 512 bytes; tiles run along K first.
METRALE_HD inline std::size_t sfb_k_tiles(std::size_t K) {
  return (K + 63) / 64;
}
METRALE_HD inline std::size_t sfb_padded_rows(std::size_t N) {
  return (N + 127) / 128 * 128;
}
METRALE_HD inline std::size_t sfb_padded_cols(std::size_t K) {
  return sfb_k_tiles(K) * 4;
}

// Bytes of one matrix; experts sit back to back with this stride, so per-expert offsets come from
// the padded sizes, never from N·K/16.
METRALE_HD inline std::size_t sfb_bytes(std::size_t N, std::size_t K) {
  return sfb_padded_rows(N) * sfb_padded_cols(K);
}

inline constexpr std::size_t kSfbTileRows = 128;
inline constexpr std::size_t kSfbTileBytes = 512;  // 128 rows x 4 scale columns

// Inside a tile, row n sits at (n%32)·16 + ((n/32)%4)·4: 32-row groups interleave by 4 bytes, and
// the tile's 4 scale columns are the 4 consecutive bytes of each slot.
METRALE_HD inline std::size_t sfb_row_in_tile(std::size_t n) {
  return (n % 32) * 16 + ((n / 32) % 4) * 4;
}

// The 512-byte tile holding rows [n - n%128, +128) and scale columns [4·t, 4·t + 4) (K tile t).
METRALE_HD inline std::size_t sfb_tile_offset(std::size_t n, std::size_t t, std::size_t K) {
  return (n / kSfbTileRows) * (sfb_k_tiles(K) * kSfbTileBytes) + t * kSfbTileBytes;
}

METRALE_HD inline std::size_t sfb_offset(std::size_t n, std::size_t b, std::size_t K) {
  return sfb_tile_offset(n, b / 4, K) + sfb_row_in_tile(n) + (b % 4);
}

// ---- packed e2m1 ------------------------------------------------------------------------------

METRALE_HD inline std::size_t packed_nk_offset(std::size_t n, std::size_t j, std::size_t K) {
  return n * (K / 2) + j;
}

METRALE_HD inline std::size_t packed_kn_offset(std::size_t n, std::size_t j, std::size_t N) {
  return j * N + n;
}

// ---- the K order of the streaming decode (src/cuda/sm90/decode) ---------------------------------
//
// The decode kernel turns one 32-bit word of packed codes (8 consecutive k of one weight row) into
// four bf16 pairs with bit moves only: pair j = codes j and j + 4 of the word. Thread c of a quad
// decodes, per weight row and 64-wide k-tile, the 16 codes of block c (k = 16c .. 16c + 15: one
// 8-byte load and one block scale): word q = k 16c + 8q .. + 7 feeds the k16 steps 2q and 2q + 1,
// pairs 0 and 2 its low A-fragment columns (2c, 2c + 1), pairs 1 and 3 its high ones (2c + 8,
// 2c + 9). A dot product does not depend on the order of K, so the activations are stored in that
// order instead of shuffling the codes: column p of a 64-wide k-tile holds the activation of
// k = decode_k_source(p).
inline constexpr int kDecodeKGroup = 64;

METRALE_HD constexpr int decode_k_source(int column) {
  const int step = column / 16, slot = column % 16;  // k16 step and A-fragment slot
  const int quad_thread = (slot % 8) / 2, high_half = slot % 2, high_columns = slot / 8;
  return 16 * quad_thread + 8 * (step / 2) + 4 * high_half + 2 * (step % 2) + high_columns;
}

// The inverse: the column that holds k (both within one 64-wide k-tile).
METRALE_HD constexpr int decode_k_column(int k) {
  const int quad_thread = k / 16, u = k % 16;
  const int step = 2 * (u / 8) + (u % 4) / 2, high_half = (u % 8) / 4, high_columns = u % 2;
  return 16 * step + 8 * high_columns + 2 * quad_thread + high_half;
}

}  // namespace metrale::format
