// NVFP4 weight decode into wgmma A fragments from prepacked weights (format/prepack.hpp), the
// tiled family's counterpart of lut_decode.cuh: the decode family's bit moves (fp4_bits.cuh),
// re-paired by k, since this family's activations keep the natural K order. Exact: the pairs are
// e2m1 x 2^-126 and the scales s x 2^119, as in the decode family, so the epilogue multiplies by
// scale_2 x 2^7 (tiled_kernel.cuh, weight_scale_2).
#pragma once

#include <cstdint>

#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/primitives.cuh"

namespace metrale::cuda::sm90 {

// The two e4m3 block scales of k16 step s, {row r0, row r0 + 8}, as the low two bytes: byte s
// of scales0 and of scales1 (stage_scales).
__device__ __forceinline__ uint32_t step_scale_bytes(uint32_t scales0, uint32_t scales1, int s) {
  return __byte_perm(scales0, scales1, s | ((s + 4) << 4));
}

// The block-scale pairs of a stage's four k16 steps, `convert`ed once a quad instead of once a
// thread: thread t of the quad converts step t's pair, and four shuffles hand each thread all
// four (where each thread converted all four itself, ~6 operations each). The whole warp must
// call it.
template <class Convert>
__device__ __forceinline__ void quad_scale_pairs(uint32_t scales0, uint32_t scales1, int t,
                                                 Convert convert, uint32_t (&pairs)[4]) {
  decode::quad_shared(convert(step_scale_bytes(scales0, scales1, t)), pairs);
}

// Step 3b on prepacked weights: the A fragments of a stage's four k16 steps for rows r0 (words0,
// scales0) and r0 + 8 (words1, scales1), thread t of its quad. Codes 2t, 2t + 1 of a step's first
// word (and, for k + 8, of its second) sit in half t/2 of the word, slots 2 (t%2) and 2 (t%2) + 1.
// The two words' halves gathered into one word (one PRMT), the thread's two pairs {slot j of the
// first word, slot j of the second} come out of e2m1_picked_pairs; re-paired by k (two PRMTs),
// they are its fragments. kQuadScales: the block scales converted by quad_scale_pairs.
template <bool kQuadScales>
__device__ __forceinline__ void decode_prepacked_stage(const uint32_t (&words0)[8],
                                                       const uint32_t (&words1)[8],
                                                       uint32_t scales0, uint32_t scales1, int t,
                                                       uint32_t (&frag)[4][4]) {
  const uint32_t half_pick = t / 2 ? 0x7632u : 0x5410u;
  const decode::CodePairPicks pick = decode::code_pair_picks(t % 2);
  uint32_t quad[4];
  if constexpr (kQuadScales)
    quad_scale_pairs(
        scales0, scales1, t, [](uint32_t b) { return decode::e4m3x2_to_scaled_bf16x2(b); }, quad);
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    uint32_t even0, odd0, even1, odd1;
    decode::e2m1_picked_pairs(__byte_perm(words0[2 * s], words0[2 * s + 1], half_pick), pick, even0,
                              odd0);
    decode::e2m1_picked_pairs(__byte_perm(words1[2 * s], words1[2 * s + 1], half_pick), pick, even1,
                              odd1);
    const uint32_t pair =
        kQuadScales ? quad[s]
                    : decode::e4m3x2_to_scaled_bf16x2(step_scale_bytes(scales0, scales1, s));
    const uint32_t scale_r0 = decode::broadcast_low(pair), scale_r1 = decode::broadcast_high(pair);
    frag[s][0] = bf16x2_mul(__byte_perm(even0, odd0, 0x5410), scale_r0);
    frag[s][1] = bf16x2_mul(__byte_perm(even1, odd1, 0x5410), scale_r1);
    frag[s][2] = bf16x2_mul(__byte_perm(even0, odd0, 0x7632), scale_r0);
    frag[s][3] = bf16x2_mul(__byte_perm(even1, odd1, 0x7632), scale_r1);
  }
}

// Step 3b on prepacked weights in the fragment order (format/fragment_order.hpp; the default):
// thread t's 16 codes of a row's stage are bytes 8t .. 8t + 7 (row0 for r0, row1 for r0 + 8),
// two words whose four pairs are its fragment pairs in natural K order (fragment_order_frags).
// Eight operations a word and four multiplies a step, where decode_prepacked_stage gathers and
// re-pairs.
template <bool kQuadScales>
__device__ __forceinline__ void decode_fragment_stage(uint2 row0, uint2 row1, uint32_t scales0,
                                                      uint32_t scales1, int t,
                                                      uint32_t (&frag)[4][4]) {
  uint32_t scale_pairs[4];
  if constexpr (kQuadScales) {
    quad_scale_pairs(
        scales0, scales1, t, [](uint32_t b) { return decode::e4m3x2_to_scaled_bf16x2(b); },
        scale_pairs);
  } else {
#pragma unroll
    for (int s = 0; s < 4; ++s)
      scale_pairs[s] = decode::e4m3x2_to_scaled_bf16x2(step_scale_bytes(scales0, scales1, s));
  }
  decode::fragment_order_frags(row0, row1, scale_pairs, frag);
}

}  // namespace metrale::cuda::sm90
