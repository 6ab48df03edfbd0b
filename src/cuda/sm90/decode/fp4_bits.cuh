// The streaming decode of NVFP4 into wgmma A fragments with bit moves (sm_90a; exact).
//
// Weights. One 32-bit word holds 8 e2m1 codes of one row, code j in bits 4j..4j+3 (s e1 e0 m).
// Pair j (codes j and j + 4, one per 16-bit half) becomes a bf16x2 by moving, in both halves at
// once, the sign to bit 15 and e1 e0 m to bits 8..6: the bf16 then reads e2m1 x 2^-126 exactly
// (code 0.5 lands on a bf16 subnormal, -0 on -0). No lookup table, no byte permute; the moves are
// a multiply (e2m1_nibble_pair), so a third of the work runs on the FMA pipe.
//
// Block scales. e4m3 -> f16 with the hardware cvt (exact, subnormals included), f16 -> bf16 by a
// 3-bit shift (the value becomes s x 2^-112), then two exact power-of-two multiplies to
// s x 2^kScaleExponent. Then e2m1 x 2^-126 times s x 2^119 is e2m1 x s x 2^-7 in bf16, exact (at
// most 6 significant bits, 2^-17 <= |w| <= 2^4.4), and the fp32 epilogue multiplies by
// scale_2 x 2^7. Why 2^119: the products must stay normal bf16 (>= 2^-126 needs >= 2^10) and the
// scale must fit bf16 (448 x 2^119 < 2^128); near the top keeps the fp32 sums far from subnormal.
// A NaN scale byte (0x7F/0xFF, never written by the quantizer) decodes to +-inf, not NaN.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/sm90/primitives.cuh"
#include "format/fragment_order.hpp"

namespace metrale::cuda::sm90::decode {

inline constexpr int kScaleExponent = 119;
inline constexpr float kEpilogueFactor = 128.0f;  // 2^(126 - kScaleExponent)

inline constexpr uint32_t kSignBits = 0x80008000u;      // bit 15 of each bf16 half
inline constexpr uint32_t kMagnitudeBits = 0x01C001C0u; // e1 e0 m at bf16 bits 8..6
inline constexpr uint32_t kF16ToBf16Bits = 0x0FFF0FFFu; // f16 >> 3: exponent and mantissa only

// Nibble kNibble (0 or 1) of each 16-bit half of `word` as bf16x2 = e2m1 x 2^-126. The isolated
// nibble times 2^(12 - 4n) + 2^(6 - 4n) is two copies of it, one with the sign at bit 15 and one
// with e1 e0 m at bits 8..6, in disjoint bits of each half (so the product is their OR): one LOP3,
// one IMAD (the FMA pipe) and one LOP3 per pair.
template <int kNibble>
__device__ __forceinline__ uint32_t e2m1_nibble_pair(uint32_t word) {
  static_assert(kNibble == 0 || kNibble == 1, "a half's nibbles 2 and 3 come from word >> 8");
  constexpr uint32_t kNibbleBits = 0x000F000Fu << (4 * kNibble);
  constexpr uint32_t kTwoCopies = (1u << (12 - 4 * kNibble)) | (1u << (6 - 4 * kNibble));
  return ((word & kNibbleBits) * kTwoCopies) & (kSignBits | kMagnitudeBits);
}

// The four pairs of `codes`: pair j = {code j, code j + 4} x 2^-126 as bf16x2.
__device__ __forceinline__ void e2m1_pairs(uint32_t codes, uint32_t (&pairs)[4]) {
  const uint32_t upper = codes >> 8;  // codes 2, 3, 6, 7 where codes 0, 1, 4, 5 were
  pairs[0] = e2m1_nibble_pair<0>(codes);
  pairs[1] = e2m1_nibble_pair<1>(codes);
  pairs[2] = e2m1_nibble_pair<0>(upper);
  pairs[3] = e2m1_nibble_pair<1>(upper);
}

// The prepacked pairs' masks and multipliers (below): all of a pair's bits; code 2's bits and
// its two copies (sign x 2, e1 e0 m x 64); code 3's bits after a shift right by 3 (sign at bit
// 10, e1 e0 m in place) and its two copies (sign x 32).
using format::kPairBits;  // the fragment order's words decode to these bits too
static_assert(kPairBits == (kSignBits | kMagnitudeBits), "a pair's sign and e1 e0 m bits");
inline constexpr uint32_t kCode2Bits = 0x40074007u, kCode2Copies = 0x42u;
inline constexpr uint32_t kCode3Bits = 0x05C005C0u, kCode3Copies = 0x21u;

// The same four pairs from a prepacked word (format/prepack.hpp), whose halves keep code j's
// sign, e1, e0 and m at bits (15, 8, 7, 6), (12, 5, 4, 3), (14, 2, 1, 0) and (13, 11, 10, 9):
// code 0 is in place, code 1 one shift away, codes 2 and 3 one multiply (two copies in disjoint
// bits, as above). Ten operations a word where e2m1_pairs takes thirteen.
__device__ __forceinline__ void e2m1_pairs_prepacked(uint32_t codes, uint32_t (&pairs)[4]) {
  pairs[0] = codes & kPairBits;
  pairs[1] = (codes << 3) & kPairBits;
  pairs[2] = ((codes & kCode2Bits) * kCode2Copies) & kPairBits;
  pairs[3] = (((codes >> 3) & kCode3Bits) * kCode3Copies) & kPairBits;
}

// Two of those pairs, chosen at run time: codes 0 and 1 (even) or 2 and 3 (odd) of a prepacked
// word. Each pair is written as rotate, mask, multiply, mask, with constants picked once: a
// rotation by 3 is the shift of code 1 (the bits it wraps are masked off), by 29 that of code 3,
// and codes 0 and 1 multiply by 1. So a thread that needs one of the two (the tiled family's
// quads) computes its two pairs in seven operations, not all four and a select.
struct CodePairPicks {
  uint32_t mask_a, copies_a;            // code 0 or 2
  uint32_t rotate_b, mask_b, copies_b;  // code 1 or 3
};
__device__ __forceinline__ CodePairPicks code_pair_picks(bool odd) {
  return odd ? CodePairPicks{kCode2Bits, kCode2Copies, 29, kCode3Bits, kCode3Copies}
             : CodePairPicks{kPairBits, 1, 3, kPairBits, 1};
}
__device__ __forceinline__ void e2m1_picked_pairs(uint32_t codes, const CodePairPicks& pick,
                                                  uint32_t& a, uint32_t& b) {
  a = ((codes & pick.mask_a) * pick.copies_a) & kPairBits;
  b = ((__funnelshift_l(codes, codes, pick.rotate_b) & pick.mask_b) * pick.copies_b) & kPairBits;
}

// The four pairs of a fragment-order word (format/fragment_order.hpp): pair 0 in place, pairs 1
// and 2 a rotation each, pair 3 one multiply; eight operations.
__device__ __forceinline__ void e2m1_pairs_fragment(uint32_t codes, uint32_t (&pairs)[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) pairs[j] = format::fragment_pair(codes, j);
}

template <bool kPrepacked>
__device__ __forceinline__ void e2m1_pairs_of(uint32_t codes, uint32_t (&pairs)[4]) {
  if constexpr (kPrepacked) {
    e2m1_pairs_prepacked(codes, pairs);
  } else {
    e2m1_pairs(codes, pairs);
  }
}

// Two e4m3 scales (low byte -> low half) as bf16x2 s x 2^kScaleExponent, exactly.
__device__ __forceinline__ uint32_t e4m3x2_to_scaled_bf16x2(uint32_t pair) {
  uint32_t h;
  asm("{\n.reg .b16 s;\ncvt.u16.u32 s, %1;\ncvt.rn.f16x2.e4m3x2 %0, s;\n}\n" : "=r"(h) : "r"(pair));
  const uint32_t scaled = ((h >> 3) & kF16ToBf16Bits) | (h & kSignBits);  // s x 2^-112
  constexpr uint32_t kTwoPow116 = 0x79807980u;  // bf16 2^116 in both halves
  constexpr uint32_t kTwoPow115 = 0x79007900u;  // bf16 2^115
  return bf16x2_mul(bf16x2_mul(scaled, kTwoPow116), kTwoPow115);
}

// {low half, low half} and {high half, high half} of a bf16x2. Written as bf16 half moves (not a
// byte permute), ptxas folds them into the multiplies' operand selectors (R.H0_H0, R.H1_H1): two
// PRMTs a sub-tile fewer.
__device__ __forceinline__ uint32_t broadcast_low(uint32_t x) {
  return as_word(__low2bfloat162(as_bf16x2(x)));
}
__device__ __forceinline__ uint32_t broadcast_high(uint32_t x) {
  return as_word(__high2bfloat162(as_bf16x2(x)));
}

// out[s] = `own` of lane s of this lane's quad: how a quad shares four values each lane made one
// of (a step's block-scale pair). The whole warp must call it.
__device__ __forceinline__ void quad_shared(uint32_t own, uint32_t (&out)[4]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) out[s] = __shfl_sync(0xffffffffu, own, s, 4);
}

// A thread's A fragments of four k16 steps from its 8 bytes of rows r0 (row0) and r0 + 8 (row1)
// in the fragment order (format/fragment_order.hpp): pair 2h + m of word u is step 2u + h's
// columns {2c, 2c + 1} (m = 0) or {2c + 8, 2c + 9} (m = 1), step s scaled by scale_pairs[s]
// ({row r0, row r0 + 8}). Both families' fragment-order decode.
__device__ __forceinline__ void fragment_order_frags(uint2 row0, uint2 row1,
                                                     const uint32_t (&scale_pairs)[4],
                                                     uint32_t (&frag)[4][4]) {
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    uint32_t p0[4], p1[4];
    e2m1_pairs_fragment(u == 0 ? row0.x : row0.y, p0);
    e2m1_pairs_fragment(u == 0 ? row1.x : row1.y, p1);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int s = 2 * u + h;
      const uint32_t scale_r0 = broadcast_low(scale_pairs[s]);
      const uint32_t scale_r1 = broadcast_high(scale_pairs[s]);
      frag[s][0] = bf16x2_mul(p0[2 * h], scale_r0);
      frag[s][1] = bf16x2_mul(p1[2 * h], scale_r1);
      frag[s][2] = bf16x2_mul(p0[2 * h + 1], scale_r0);
      frag[s][3] = bf16x2_mul(p1[2 * h + 1], scale_r1);
    }
  }
}

}  // namespace metrale::cuda::sm90::decode
