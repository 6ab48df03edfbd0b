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

// Inside a tile, row n sits at (n%32)·16 + ((n/32)%4)·4: 32-row groups interleave by 4 bytes, and
// the tile's 4 scale columns are the 4 consecutive bytes of each slot.
METRALE_HD inline std::size_t sfb_offset(std::size_t n, std::size_t b, std::size_t K) {
  return (n / 128) * (sfb_k_tiles(K) * 512) + (b / 4) * 512 + (n % 32) * 16 + ((n / 32) % 4) * 4 +
         (b % 4);
}

// ---- packed e2m1 ------------------------------------------------------------------------------

METRALE_HD inline std::size_t packed_nk_offset(std::size_t n, std::size_t j, std::size_t K) {
  return n * (K / 2) + j;
}

METRALE_HD inline std::size_t packed_kn_offset(std::size_t n, std::size_t j, std::size_t N) {
  return j * N + n;
}

}  // namespace metrale::format
