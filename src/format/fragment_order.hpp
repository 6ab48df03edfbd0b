// The fragment order of prepacked NVFP4 weights: what prepack_nvfp4 writes and the kernels read
// (unless METRALE_PREPACKED_LAYOUT=halves, core/config.hpp; docs/perf.md, twenty-fourth and
// twenty-fifth sessions).
//
// The prepacked halves' layout (prepack.hpp) moves bits only within each 16-bit half, so codes keep
// their natural K order: a wgmma A fragment's thread then gathers its codes from two words and
// re-pairs them by k (~30 operations a k16 step, where decoding a word into four fragment pairs
// takes ten). The fragment order also moves codes between the halves of each whole 64-code group
// of a row (32 bytes, k = 64 g .. 64 g + 63), so that quad thread c (lane % 4) of a fragment finds
// all 16 codes it needs for the group's four k16 steps in bytes 8c .. 8c + 7, as two words whose
// four pairs (pair j = {slot j of the low half, slot j of the high half}) are its fragment pairs,
// in natural K order:
//
//   word 2c + u, slot j:  low half k = 16 (2u + j / 2) + 8 (j % 2) + 2c,  high half k + 1
//
// so pair j of word 2c + u is k16 step 2u + j / 2's columns {2c, 2c + 1} (j even) or {2c + 8,
// 2c + 9} (j odd). Since such a word is always decoded whole, its bits may cross its halves
// (fragment_bit, below: eight operations a word, where the halves' bits take ten). A row's last
// K % 64 codes (16, 32 or 48 when K is not a multiple of 64) keep the prepacked halves' layout.
// Host and device, any arch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/host_device.hpp"
#include "format/prepack.hpp"

namespace metrale::format {

inline constexpr int kFragmentGroupCodes = 64;
inline constexpr int kFragmentGroupBytes = kFragmentGroupCodes / 2;

// The bits of a fragment-order word. Its decode (src/cuda/sm90/decode/fp4_bits.cuh) makes pair j,
// {slot j of the low half, slot j of the high half} as a bf16x2 of e2m1 x 2^-126 (each half's sign
// at bit 15 and e1 e0 m at bits 8..6: kPairBits), with
//
//   pair 0 = word & kPairBits                                  (one AND)
//   pair j = rotl(word, kFragmentRotation_j) & kPairBits       j = 1, 2: a rotation and an AND
//   pair 3 = ((word & kFragmentCopyBits) * kFragmentCopies) & kPairBits        (AND, IMAD, AND)
//
// so each code bit sits where its pair's operations fetch it: rotated back, or, for slot 3, one
// of the multiply's three copies (shifts 2, 7, 12; disjoint, so no carries) lands on it. Eight
// operations a word, where prepack.hpp's halves take ten (only rotations cannot do: translates of
// a half's {15, 8, 7, 6} do not tile its 16 bits).
inline constexpr std::uint32_t kPairBits = 0x81C081C0u;
inline constexpr int kFragmentRotation1 = 10, kFragmentRotation2 = 13;
inline constexpr std::uint32_t kFragmentCopyBits = 0x001B001Bu;  // bits 0, 1, 3, 4 of each half
inline constexpr std::uint32_t kFragmentCopies = (1u << 2) | (1u << 7) | (1u << 12);

METRALE_HD constexpr std::uint32_t rotate_left(std::uint32_t w, int r) {
  return r == 0 ? w : (w << r) | (w >> (32 - r));
}

// Pair `slot` of a fragment-order word, as the kernels decode it (they inline this, the slot a
// constant).
METRALE_HD constexpr std::uint32_t fragment_pair(std::uint32_t word, int slot) {
  switch (slot) {
    case 0: return word & kPairBits;
    case 1: return rotate_left(word, kFragmentRotation1) & kPairBits;
    case 2: return rotate_left(word, kFragmentRotation2) & kPairBits;
    default: return ((word & kFragmentCopyBits) * kFragmentCopies) & kPairBits;
  }
}

// The bit of a fragment-order word that holds field `field` (0 sign, 1 e1, 2 e0, 3 m) of the code
// in slot `slot` of half `half`: where fragment_pair fetches it from.
METRALE_HD constexpr int fragment_bit(int half, int slot, int field) {
  const int target = 16 * half + prepacked_bit(0, field);  // its place in the decoded pair
  switch (slot) {
    case 0: return target;
    case 1: return (target + 32 - kFragmentRotation1) % 32;
    case 2: return (target + 32 - kFragmentRotation2) % 32;
    default:  // the copy bit from which one of the multiply's shifts lands on the target
      for (int shift = 0; shift <= target; ++shift)
        if ((kFragmentCopies >> shift & 1u) && (kFragmentCopyBits >> (target - shift) & 1u))
          return target - shift;
      return -1;  // none: WordBitsAreAPermutation fails
  }
}

// A fragment-order word from its codes in the seeds' order (slot j of half h at nibble 4h + j,
// m at the nibble's bit 0 and the sign at bit 3), and back.
METRALE_HD inline std::uint32_t to_fragment_word(std::uint32_t nibbles) {
  std::uint32_t out = 0;
  for (int half = 0; half < 2; ++half)
    for (int slot = 0; slot < 4; ++slot)
      for (int field = 0; field < 4; ++field)
        out |= ((nibbles >> (4 * (4 * half + slot) + 3 - field)) & 1u)
               << fragment_bit(half, slot, field);
  return out;
}
METRALE_HD inline std::uint32_t from_fragment_word(std::uint32_t word) {
  std::uint32_t out = 0;
  for (int half = 0; half < 2; ++half)
    for (int slot = 0; slot < 4; ++slot)
      for (int field = 0; field < 4; ++field)
        out |= ((word >> fragment_bit(half, slot, field)) & 1u)
               << (4 * (4 * half + slot) + 3 - field);
  return out;
}

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
    const int at = 4 * word;  // the word's first byte (little-endian)
    if (kToFragments) {
      std::uint32_t nibbles = 0;  // slot j of half h at nibble 4h + j
      for (int half = 0; half < 2; ++half)
        for (int slot = 0; slot < 4; ++slot) {
          const int k = fragment_code(word, half, slot);
          nibbles |= static_cast<std::uint32_t>((in[k / 2] >> (4 * (k % 2))) & 0xFu)
                     << (4 * (4 * half + slot));
        }
      const std::uint32_t bits = to_fragment_word(nibbles);
      for (int b = 0; b < 4; ++b) out[at + b] = static_cast<std::uint8_t>(bits >> (8 * b));
    } else {
      const std::uint32_t nibbles = from_fragment_word(
          static_cast<std::uint32_t>(in[at]) | static_cast<std::uint32_t>(in[at + 1]) << 8 |
          static_cast<std::uint32_t>(in[at + 2]) << 16 |
          static_cast<std::uint32_t>(in[at + 3]) << 24);
      for (int half = 0; half < 2; ++half)
        for (int slot = 0; slot < 4; ++slot) {
          const int k = fragment_code(word, half, slot);
          out[k / 2] = static_cast<std::uint8_t>(
              out[k / 2] | ((nibbles >> (4 * (4 * half + slot))) & 0xFu) << (4 * (k % 2)));
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
