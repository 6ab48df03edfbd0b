// The index math of the decoder warpgroup (dws_kernel.cuh), host and device, so that the host
// tests check it (tests/cuda/tiled_family_test.cpp, DecodedTile.*): where a weight row's decoded
// values go in a decoded tile, and in which k order.
//
// A stage holds, per weight row, 32 bytes of codes: word w (bytes 4w .. 4w + 3) holds k = 8w ..
// 8w + 7 in both weight layouts (the seeds' nibbles, or prepack.hpp's halves of four codes). The
// bit moves of fp4_bits.cuh (e2m1_pairs_of) turn a word into four bf16 pairs, pair j = {k = 8w + j,
// k = 8w + 4 + j}; pairs_by_k re-pairs them into k order, {8w, 8w + 1}, {8w + 2, 8w + 3}, ..., the
// 16 bytes of the decoded tile's chunk w of the row. A decoded tile is laid out as a bf16 weight
// tile (KernelShape's, read by wgmma through sw128_descriptor): K-major, a 128-byte row of 64
// values a weight row, the 16-byte chunk c of row r at chunk position c ^ (r % 8).
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::cuda::sm90 {

// Bytes of a decoded row: the stage's 64 values of K in bf16.
inline constexpr int kDecodedRowBytes = 128;

// Byte offset of chunk `word` (k = 8 word .. 8 word + 7) of row `row` in a decoded tile.
METRALE_HD constexpr int decoded_chunk_offset(int row, int word) {
  return row * kDecodedRowBytes + ((word ^ (row % 8)) << 4);
}

// Pairs {k = j, k = 4 + j} (j = 0..3, the low half first) re-paired into k order: {0, 1},
// {2, 3}, {4, 5}, {6, 7}. On the GPU one PRMT each (written as shifts and masks, ptxas made
// half of them a LEA and a LOP3).
METRALE_HD inline void pairs_by_k(const std::uint32_t (&pairs)[4], std::uint32_t (&out)[4]) {
#if defined(__CUDA_ARCH__)
  out[0] = __byte_perm(pairs[0], pairs[1], 0x5410);
  out[1] = __byte_perm(pairs[2], pairs[3], 0x5410);
  out[2] = __byte_perm(pairs[0], pairs[1], 0x7632);
  out[3] = __byte_perm(pairs[2], pairs[3], 0x7632);
#else
  out[0] = (pairs[0] & 0xFFFFu) | (pairs[1] << 16);
  out[1] = (pairs[2] & 0xFFFFu) | (pairs[3] << 16);
  out[2] = (pairs[0] >> 16) | (pairs[1] & 0xFFFF0000u);
  out[3] = (pairs[2] >> 16) | (pairs[3] & 0xFFFF0000u);
#endif
}

}  // namespace metrale::cuda::sm90
