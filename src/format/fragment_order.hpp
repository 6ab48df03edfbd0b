// The fragment order of prepacked NVFP4 weights: what prepack_nvfp4 writes and the kernels read
// (unless METRALE_PREPACKED_LAYOUT=halves, core/config.hpp; docs/perf.md, twenty-fourth and
// twenty-fifth sessions).
//
// The prepacked layout (prepack.hpp) moves bits only within each 16-bit half, so codes keep their
// natural K order: a wgmma A fragment's thread then gathers its codes from two words and re-pairs
// them by k (~30 operations a k16 step, where decoding a word into four fragment pairs takes ten).
// The fragment order also moves codes between the halves of each whole 64-code group of a row (32
// bytes, k = 64 g .. 64 g + 63), so that quad thread c (lane % 4) of a fragment finds all 16
// codes it needs for the group's four k16 steps in bytes 8c .. 8c + 7, as two prepacked words whose
// four pairs (pair j = {slot j of the low half, slot j of the high half}) are its fragment pairs,
// in natural K order:
//
//   word 2c + u, slot j:  low half k = 16 (2u + j / 2) + 8 (j % 2) + 2c,  high half k + 1
//
// so pair j of word 2c + u is k16 step 2u + j / 2's columns {2c, 2c + 1} (j even) or {2c + 8,
// 2c + 9} (j odd). Each half keeps prepack.hpp's bits (prepack_half of the half whose nibble j is
// that code). A row's last K % 64 codes (16, 32 or 48 when K is not a multiple of 64) keep the
// prepacked halves' layout. Host and device, any arch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/host_device.hpp"
#include "format/prepack.hpp"

namespace metrale::format {

inline constexpr int kFragmentGroupCodes = 64;
inline constexpr int kFragmentGroupBytes = kFragmentGroupCodes / 2;

// The k (within its group) of the code in slot `slot` of half `half` of word `word`.
METRALE_HD constexpr int fragment_code(int word, int half, int slot) {
  const int c = word / 2, u = word % 2;
  return 16 * (2 * u + slot / 2) + 8 * (slot % 2) + 2 * c + half;
}

// One 64-code group between the seeds' packed bytes (code k in nibble k % 2 of byte k / 2) and the
// fragment order; reads all 32 bytes before writing, so src == dst converts in place.
template <bool kToFragments>
METRALE_HD inline void convert_fragment_group(const std::uint8_t* src, std::uint8_t* dst) {
  std::uint8_t in[kFragmentGroupBytes], out[kFragmentGroupBytes] = {};
  for (int i = 0; i < kFragmentGroupBytes; ++i) in[i] = src[i];
  for (int word = 0; word < 8; ++word) {
    for (int half = 0; half < 2; ++half) {
      const int at = 4 * word + 2 * half;  // the half's first byte
      if (kToFragments) {
        std::uint32_t nibbles = 0;  // the half in the seeds' layout: code of slot j at nibble j
        for (int slot = 0; slot < 4; ++slot) {
          const int k = fragment_code(word, half, slot);
          nibbles |= static_cast<std::uint32_t>((in[k / 2] >> (4 * (k % 2))) & 0xFu) << (4 * slot);
        }
        const std::uint16_t bits = prepack_half(static_cast<std::uint16_t>(nibbles));
        out[at] = static_cast<std::uint8_t>(bits & 0xFFu);
        out[at + 1] = static_cast<std::uint8_t>(bits >> 8);
      } else {
        const std::uint16_t nibbles =
            unprepack_half(static_cast<std::uint16_t>(in[at] | in[at + 1] << 8));
        for (int slot = 0; slot < 4; ++slot) {
          const int k = fragment_code(word, half, slot);
          out[k / 2] = static_cast<std::uint8_t>(out[k / 2] | ((nibbles >> (4 * slot)) & 0xFu)
                                                                  << (4 * (k % 2)));
        }
      }
    }
  }
  for (int i = 0; i < kFragmentGroupBytes; ++i) dst[i] = out[i];
}

// Whether k-tile `ktile` (64 codes) of a row of k codes is its K % 64 tail, kept in the halves'
// layout: what every reader of the fragment order decodes the old way.
METRALE_HD constexpr bool fragment_tail(int k, int ktile) {
  return k % kFragmentGroupCodes != 0 && ktile == k / kFragmentGroupCodes;
}

// The units a row of k codes converts in: its whole groups, then its tail if it has one.
METRALE_HD constexpr std::size_t fragment_units(std::size_t k) {
  return (k + kFragmentGroupCodes - 1) / kFragmentGroupCodes;
}

// Unit `unit` of a row of k codes (`src_row`, `dst_row`: the row's first byte) between the seeds'
// layout and the fragment order: a whole group (convert_fragment_group), or the tail's halves
// (prepack_half / unprepack_half).
template <bool kToFragments>
METRALE_HD inline void convert_fragment_unit(const std::uint8_t* src_row, std::uint8_t* dst_row,
                                             std::size_t k, std::size_t unit) {
  const std::size_t at = unit * kFragmentGroupBytes;
  if (!fragment_tail(static_cast<int>(k), static_cast<int>(unit))) {
    convert_fragment_group<kToFragments>(src_row + at, dst_row + at);
    return;
  }
  convert_halves(src_row + at, dst_row + at, (k % kFragmentGroupCodes) / 4, [](std::uint16_t half) {
    return kToFragments ? prepack_half(half) : unprepack_half(half);
  });
}

// One row of k codes (k / 2 bytes) between the seeds' layout and the fragment order.
template <bool kToFragments>
METRALE_HD inline void convert_fragment_row(const std::uint8_t* src, std::uint8_t* dst,
                                            std::size_t k) {
  for (std::size_t unit = 0; unit < fragment_units(k); ++unit)
    convert_fragment_unit<kToFragments>(src, dst, k, unit);
}

}  // namespace metrale::format
