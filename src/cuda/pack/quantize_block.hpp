// The per-block steps of the CUDA quantizer (quantize.cu), host and device so that the host tests
// can hold them against the CPU reference. Inputs are words of bf16 pairs (element 2w in the low
// half of word w), as a 16-byte vector load delivers them. Weights are finite here: the quantizer
// refuses a tensor with NaN or ±Inf (it finds them with `first_non_finite`), so what these steps
// give for such an element does not matter. Any arch.
//   1. block amax: the max of the bf16 magnitude bits, two lanes per word (`max_magnitudes`):
//      for finite values their integer order is the order of |x|, which is format::amax_update's
//   2. block scale: the recipe's own format::block_scale_e4m3
//   3. codes: the division-free thresholds of e2m1_thresholds.hpp, compared two elements at a
//      time (`codes_of_word`). The thresholds depend only on the scale byte and scale_2, so a
//      kernel builds them once per scale byte (`CodeConstants`, a table of 127 entries).
#pragma once

#include <cstdint>

#include "cuda/pack/e2m1_thresholds.hpp"
#include "format/bf16.hpp"
#include "format/host_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda::pack {

constexpr std::uint32_t kMagnitudeMask = 0x7FFF7FFFu;   // both lanes' bf16 magnitude bits
constexpr std::uint32_t kNonFiniteMagnitude = 0x7F80u;  // magnitude bits >= this: Inf or NaN
constexpr int kScaleBytes = 0x7F;  // the e4m3 block scales the recipe writes: 0x00-0x7E (≤ 448)

// Lane-wise max of two words of 16-bit lanes.
METRALE_HD inline std::uint32_t max_lanes(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vmaxu2(a, b);  // sm_90: one max.u16x2
#else
  const std::uint32_t lo = (a & 0xFFFFu) > (b & 0xFFFFu) ? (a & 0xFFFFu) : (b & 0xFFFFu);
  const std::uint32_t hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | hi << 16;
#endif
}

// The larger of a word's two 16-bit lanes.
METRALE_HD inline std::uint32_t max_of_lanes(std::uint32_t lanes) {
  const std::uint32_t lo = lanes & 0xFFFFu, hi = lanes >> 16;
  return lo > hi ? lo : hi;
}

// Both lanes' max magnitude over `count` words (call max_of_lanes for the block's).
template <int kWords>
METRALE_HD inline std::uint32_t max_magnitudes(const std::uint32_t (&words)[kWords]) {
  std::uint32_t running = 0;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int w = 0; w < kWords; ++w) running = max_lanes(running, words[w] & kMagnitudeMask);
  return running;
}

// Index (in elements, from words[0]'s low half) of the first NaN or ±Inf, or -1.
template <int kWords>
METRALE_HD inline int first_non_finite(const std::uint32_t (&words)[kWords]) {
  for (int e = 0; e < 2 * kWords; ++e) {
    const std::uint32_t bits = (words[e / 2] >> (16 * (e % 2))) & 0x7FFFu;
    if (bits >= kNonFiniteMagnitude) return e;
  }
  return -1;
}

// The thresholds of one scale byte, as two-lane addends: lane value m (a finite bf16's magnitude
// bits, < 0x7F80) plus 0x7FFF - t carries into the lane's top bit (bit 15 or 31) exactly when
// m > t, and never into the next lane (m + 0x7FFF - t < 0x10000 for t ≥ 0).
struct alignas(16) CodeConstants {  // 16-byte aligned: a kernel reads an entry with two 16-byte loads
  std::uint32_t add[7];  // (0x7FFF - t_i) in both 16-bit lanes, t_i ascending
  std::uint32_t divide;  // nonzero: d is 0, Inf or NaN, the recipe's division (quantize_bf16_e2m1)
};

METRALE_HD inline CodeConstants code_constants(std::uint8_t sf, float scale_2) {
  const E2m1Thresholds th = e2m1_thresholds(sf, scale_2);
  CodeConstants c{};
  c.divide = th.divide ? 1u : 0u;
  if (th.divide) return c;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i) c.add[i] = (0x7FFFu - th.t[i]) * 0x00010001u;
  return c;
}

// The two e2m1 codes of one word (c.divide zero): the low element's code in bits 0-3, the high
// one's in bits 4-7, bit for bit threshold_e2m1 of each. The thresholds ascend, so the bits
// r_i = [m > t_i] form a thermometer code and its count c = Σ r_i has bit 2 = r_3, bit 1 =
// r_1 ^ r_3 ^ r_5 and bit 0 = the parity of all seven: three- and four-input XORs, no compares.
METRALE_HD inline std::uint32_t codes_of_word(std::uint32_t word, const CodeConstants& c) {
  const std::uint32_t m = word & kMagnitudeMask;
  std::uint32_t r[7];
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i) r[i] = m + c.add[i];  // lane results in bits 15 and 31
  const std::uint32_t bit0 = r[0] ^ r[1] ^ r[2] ^ r[3] ^ r[4] ^ r[5] ^ r[6];
  const std::uint32_t bit1 = r[1] ^ r[3] ^ r[5];
  // Lane bits to nibble positions: bits 12-15 (low element) and 28-31 (high element).
  const std::uint32_t nibbles = ((bit0 >> 3) & 0x10001000u) | ((bit1 >> 2) & 0x20002000u) |
                                ((r[3] >> 1) & 0x40004000u) | (word & 0x80008000u);  // sign
  return ((nibbles >> 12) & 0x0Fu) | ((nibbles >> 24) & 0xF0u);
}

// The same through the recipe's division, for a scale whose d is 0, Inf or NaN.
METRALE_HD inline std::uint32_t codes_of_word_dividing(std::uint32_t word, std::uint8_t sf,
                                                       float scale_2) {
  const float lo = format::bf16_to_float(static_cast<std::uint16_t>(word & 0xFFFFu));
  const float hi = format::bf16_to_float(static_cast<std::uint16_t>(word >> 16));
  return format::quantize_to_e2m1(lo, sf, scale_2) |
         static_cast<std::uint32_t>(format::quantize_to_e2m1(hi, sf, scale_2)) << 4;
}

// Four words (8 elements) -> 4 packed bytes, little-endian (byte j holds elements 2j, 2j + 1).
METRALE_HD inline std::uint32_t pack_four_words(const std::uint32_t* words, const CodeConstants& c,
                                                std::uint8_t sf, float scale_2) {
  std::uint32_t out = 0;
  if (c.divide == 0) {
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int w = 0; w < 4; ++w) out |= codes_of_word(words[w], c) << (8 * w);
  } else {
    for (int w = 0; w < 4; ++w) out |= codes_of_word_dividing(words[w], sf, scale_2) << (8 * w);
  }
  return out;
}

struct PackedBlock {
  std::uint32_t bytes[2];  // the 8 packed bytes, little-endian: byte j = codes 2j (low), 2j + 1
  std::uint8_t scale;      // e4m3
};

// One whole 16-element block through steps 1-3 (the host tests' entry; the kernel runs the same
// steps split over two lanes, with the constants from its table).
METRALE_HD inline PackedBlock quantize_block(const std::uint32_t (&words)[8], float scale_2) {
  const std::uint32_t amax_bits = max_of_lanes(max_magnitudes(words));
  PackedBlock out{{0u, 0u},
                  format::block_scale_e4m3(
                      format::bf16_to_float(static_cast<std::uint16_t>(amax_bits)), scale_2)};
  const CodeConstants c = code_constants(out.scale, scale_2);
  out.bytes[0] = pack_four_words(words, c, out.scale, scale_2);
  out.bytes[1] = pack_four_words(words + 4, c, out.scale, scale_2);
  return out;
}

}  // namespace metrale::cuda::pack
