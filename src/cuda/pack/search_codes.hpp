// The lean quantize kernel's codes (quantize_lean.cu): the e2m1 codes of a word of two bf16 by a
// binary search over the seven thresholds in both 16-bit lanes at once, bit for bit
// threshold_e2m1 of each lane (tests/cuda/search_codes_test.cpp, every finite bf16 in either
// lane). Host and device: on the device the permutes are PTX's prmt and the wide multiplies
// mul.hi; on the host, models that follow PTX's definitions, sign copies included, so that the
// host tests run the very selectors the kernel runs.
//   search: lane value m plus a CodeConstants addend (0x7FFF - t) carries into the lane's top bit
//     exactly when m > t (quantize_block.hpp). Compare with t3 first; the top bits, copied over
//     their lanes by one prmt, select t5 or t1 for each lane; then t6, t4, t2 or t0: three adds,
//     two prmt and four selects (LOP3) a word, where the thermometer code took seven adds.
//   nibbles: the count's bits 0, 1, 2 are the top bits of the last, second and first sums, bit 3
//     the sign; two byte permutes gather those bits two planes a word, and a multiply whose four
//     partial products for each gathered bit land on distinct bits moves them to the code byte.
#pragma once

#include <cstdint>

#include "cuda/pack/quantize_block.hpp"
#include "format/host_device.hpp"

namespace metrale::cuda::pack {

// PTX's prmt.b32 in its default mode: result byte i is byte (s & 7) of the eight bytes of
// {b, a} (a's bytes 0-3, b's 4-7), where s is selector nibble i; when s & 8 the byte's sign bit
// is copied over all eight bits instead.
METRALE_HD inline std::uint32_t byte_permute(std::uint32_t a, std::uint32_t b,
                                             std::uint32_t selector) {
#if defined(__CUDA_ARCH__)
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
#else
  const std::uint64_t bytes = a | static_cast<std::uint64_t>(b) << 32;
  std::uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t s = (selector >> (4 * i)) & 0xFu;
    std::uint32_t byte = static_cast<std::uint32_t>(bytes >> (8 * (s & 7u))) & 0xFFu;
    if (s & 8u) byte = (byte & 0x80u) ? 0xFFu : 0x00u;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

// The high 32 bits of the 64-bit product (mul.hi.u32).
METRALE_HD inline std::uint32_t mul_high(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
}

// Each lane's top bit (15, 31) copied over its lane: bytes 1, 1, 3, 3 with the sign copy.
constexpr std::uint32_t kLaneMaskSelector = 0xBB99u;
// Bytes 1 and 3 of a, then of b: the top bits of a's lanes at bits 7 and 15, of b's at 23, 31.
constexpr std::uint32_t kTopBytesSelector = 0x7531u;
constexpr std::uint32_t kByteTopBits = 0x80808080u;
// Bits 7, 15, 23, 31 to bits 32, 36, 33, 37 of the product (bits 0, 4, 1, 5 of the high word):
// the sixteen partial products land on sixteen distinct bits, so nothing carries, and the other
// twelve are below bit 32 or at bits 8-24 of the high word. Times 4: bits 2, 6, 3, 7 instead.
constexpr std::uint32_t kPlanesToNibbles = (1u << 25) | (1u << 21) | (1u << 10) | (1u << 6);

METRALE_HD inline std::uint32_t lane_masks(std::uint32_t sums) {
  return byte_permute(sums, 0u, kLaneMaskSelector);
}

// Lane by lane (mask 0xFFFF or 0): if_set where the mask is set, else if_clear (one LOP3).
METRALE_HD inline std::uint32_t select_lanes(std::uint32_t mask, std::uint32_t if_set,
                                             std::uint32_t if_clear) {
  return (if_set & mask) | (if_clear & ~mask);
}

// The code byte of one word (c.divide zero) in bits 0-7, bits 8-26 unspecified: the low
// element's code in bits 0-3, the high one's in bits 4-7.
METRALE_HD inline std::uint32_t search_code_byte(std::uint32_t word, const CodeConstants& c) {
  const std::uint32_t m = word & kMagnitudeMask;
  const std::uint32_t ge4 = m + c.add[3];
  const std::uint32_t upper = lane_masks(ge4);
  const std::uint32_t ge2 = m + select_lanes(upper, c.add[5], c.add[1]);
  const std::uint32_t odd = lane_masks(ge2);
  const std::uint32_t ge1 = m + select_lanes(upper, select_lanes(odd, c.add[6], c.add[4]),
                                             select_lanes(odd, c.add[2], c.add[0]));
  const std::uint32_t bits01 = byte_permute(ge1, ge2, kTopBytesSelector) & kByteTopBits;
  const std::uint32_t bits23 = byte_permute(ge4, word, kTopBytesSelector) & kByteTopBits;
  // The two high words hold their bits on distinct positions: the add is an or (mad.hi).
  return mul_high(bits01, kPlanesToNibbles) + mul_high(bits23, kPlanesToNibbles << 2);
}

// Four words (8 elements) -> 4 packed bytes, little-endian, as pack_four_words.
METRALE_HD inline std::uint32_t search_codes_of_row(const std::uint32_t* words,
                                                    const CodeConstants& c) {
  const std::uint32_t low =
      byte_permute(search_code_byte(words[0], c), search_code_byte(words[1], c), 0x0040u);
  const std::uint32_t high =
      byte_permute(search_code_byte(words[2], c), search_code_byte(words[3], c), 0x0040u);
  return byte_permute(low, high, 0x5410u);
}

}  // namespace metrale::cuda::pack
