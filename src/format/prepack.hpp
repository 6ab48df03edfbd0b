// The prepacked NVFP4 weight layout (docs/api.md, "Prepacked weights"): the seeds' packed
// [N, K/2] bytes with the bits of every four codes moved to where the GPU decode wants them.
//
// Each 16-bit little-endian half of a row's packed bytes holds four consecutive codes (half h of
// a row: k = 4h to 4h + 3). The seeds' layout keeps code j of a half in bits 4j to 4j + 3 (m, e0,
// e1, s from bit 0 up). The prepacked layout keeps the same four codes in the same half, each bit
// moved on its own:
//
//   code j   sign  e1  e0  m
//     0       15    8   7  6
//     1       12    5   4  3
//     2       14    2   1  0
//     3       13   11  10  9
//
// Code 0 then sits where a bf16 keeps its sign and the top of its exponent; codes 1 to 3 get there
// with a shift or one multiply each, in both halves of a 32-bit word at once, so the decode of a
// word's eight codes into four bf16 pairs {code j of the low half, code j of the high half} takes
// ten operations instead of thirteen (src/cuda/sm90/decode/fp4_bits.cuh). Nothing moves between
// halves, bytes stay within their row, and the byte count is the seeds': block scales, the scale
// layouts and every pointer are unchanged, only the bits inside each half differ.
// This is the halves' layout (METRALE_PREPACKED_LAYOUT=halves). By default prepack_nvfp4 instead
// moves codes between the halves of each whole 64-code group and places each word's bits whole
// (format/fragment_order.hpp); a row's K % 64 tail keeps these halves. Host and device, any arch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::format {

// Bit position of the sign, e1, e0 and m of code j in a prepacked half (the table above).
inline constexpr int kPrepackedBit[4][4] = {
    {15, 8, 7, 6},
    {12, 5, 4, 3},
    {14, 2, 1, 0},
    {13, 11, 10, 9},
};

// The table as one scalar, entry [j][b] in bits 4·(4j + b) .. +3: device code may read a
// constexpr scalar, but not a namespace-scope array (nvcc: "undefined in device code").
inline constexpr std::uint64_t kPrepackedBitNibbles = [] {
  std::uint64_t nibbles = 0;
  for (int j = 0; j < 4; ++j)
    for (int b = 0; b < 4; ++b)
      nibbles |= static_cast<std::uint64_t>(kPrepackedBit[j][b]) << (4 * (4 * j + b));
  return nibbles;
}();

// kPrepackedBit[j][b], host and device; the loops below unroll, so it folds to a constant.
METRALE_HD constexpr int prepacked_bit(int j, int b) {
  return static_cast<int>((kPrepackedBitNibbles >> (4 * (4 * j + b))) & 0xFu);
}

// One half (four codes) from the seeds' layout into the prepacked one.
METRALE_HD inline std::uint16_t prepack_half(std::uint16_t half) {
  std::uint32_t out = 0;
  for (int j = 0; j < 4; ++j) {
    const std::uint32_t code = (half >> (4 * j)) & 0xFu;
    for (int b = 0; b < 4; ++b)  // b = 0: sign (nibble bit 3), then e1, e0, m
      out |= ((code >> (3 - b)) & 1u) << prepacked_bit(j, b);
  }
  return static_cast<std::uint16_t>(out);
}

// The inverse: one prepacked half back into the seeds' layout.
METRALE_HD inline std::uint16_t unprepack_half(std::uint16_t half) {
  std::uint32_t out = 0;
  for (int j = 0; j < 4; ++j)
    for (int b = 0; b < 4; ++b) out |= ((half >> prepacked_bit(j, b)) & 1u) << (4 * j + 3 - b);
  return static_cast<std::uint16_t>(out);
}

// dst's first `halves` halves = convert (prepack_half or unprepack_half) of src's, a byte at a time
// (a half is little-endian, its low byte first), so any alignment works; each half is read
// before it is written, so src == dst converts in place.
template <class Convert>
METRALE_HD inline void convert_halves(const std::uint8_t* src, std::uint8_t* dst,
                                      std::size_t halves, Convert convert) {
  for (std::size_t h = 0; h < halves; ++h) {
    const auto half = static_cast<std::uint16_t>(src[2 * h] | src[2 * h + 1] << 8);
    const std::uint16_t out = convert(half);
    dst[2 * h] = static_cast<std::uint8_t>(out & 0xFFu);
    dst[2 * h + 1] = static_cast<std::uint8_t>(out >> 8);
  }
}

// Both halves of a 32-bit word (eight codes), each as prepack_half / unprepack_half converts
// it (the GPU's conversion, src/cuda/pack/prepack.cu, runs these; the bit positions are
// constants, so each folds to shifts and masks).
METRALE_HD inline std::uint32_t prepack_word(std::uint32_t w) {
  return static_cast<std::uint32_t>(prepack_half(static_cast<std::uint16_t>(w))) |
         (static_cast<std::uint32_t>(prepack_half(static_cast<std::uint16_t>(w >> 16))) << 16);
}
METRALE_HD inline std::uint32_t unprepack_word(std::uint32_t w) {
  return static_cast<std::uint32_t>(unprepack_half(static_cast<std::uint16_t>(w))) |
         (static_cast<std::uint32_t>(unprepack_half(static_cast<std::uint16_t>(w >> 16))) << 16);
}

}  // namespace metrale::format
