// The fp32 functions of the MoE layer's glue (routing scores, activation, combine), one definition
// for the CPU oracle and the CUDA kernels, so that both compute the same bits.
//
// Why not expf: glibc's expf and CUDA's expf differ in the last bit for some inputs, and one ulp
// flips a near-tie in DeepSeek-V3's expert choice. exp_f32 is built from IEEE fp32 adds and
// multiplies alone, with no multiply-add contraction (the device side uses the _rn intrinsics;
// the host library and the tests build with -ffp-contract=off), so it gives the same bits on host
// and device. fp32, not double: the activation takes one exp per element of every gate row, and an
// exp evaluated in double made that kernel compute-bound (docs/perf.md, "The MoE layer on the
// GPU").
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::format {

// The softmax's sum over the experts is taken as a warp of 32 lanes takes it (docs/api.md,
// "Routing"): kSoftmaxPartials partial sums, partial i over experts i, i + 32, ... in ascending
// id, then halved in a fixed tree (partial i += partial i + h, h = 16, 8, ..., 1). A sum in
// ascending id, one add at a time, was the routing's longest chain: 512 dependent adds at E = 512.
inline constexpr int kSoftmaxPartials = 32;

METRALE_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

METRALE_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

METRALE_HD inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// e^x in fp32, within 1 ulp (Cody and Waite's reduction and Moshier's minimax polynomial, as in
// Cephes' expf), from IEEE float multiplies and adds only, so host and device give the same bits.
// NaN gives NaN; past ln(FLT_MAX) +inf; far below the smallest subnormal, 0. Those three are
// selected at the end, the polynomial having run on 0 instead: no branch, so the device
// interleaves a thread's independent exps (the routing's four a lane ran one after another, each
// a ~25-instruction chain behind its range branches: docs/perf.md).
METRALE_HD inline float exp_f32(float x) {
  const bool nan = is_nan_bits(x), over = x > 88.8f, under = x < -104.0f;
  const float in = nan || over || under ? 0.0f : x;
  constexpr float kLog2e = 1.44269504088896341f;
  // ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so n · kLn2Hi is exact (|n| <= 151).
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float t = mul_rn(in, kLog2e);
  const auto n = static_cast<std::int32_t>(add_rn(t, t < 0.0f ? -0.5f : 0.5f));  // round
  const float nf = static_cast<float>(n);
  const float r = add_rn(add_rn(in, -mul_rn(nf, kLn2Hi)), -mul_rn(nf, kLn2Lo));  // |r| <= 0.35
  constexpr float kPoly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                             4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
  float p = kPoly[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 1; i < 6; ++i) p = add_rn(mul_rn(p, r), kPoly[i]);
  const float er = add_rn(add_rn(mul_rn(p, mul_rn(r, r)), r), 1.0f);  // e^r
  // 2^n in two normal factors (n in [-151, 129]): subnormal and overflowing results round once
  // more, the same way on both sides.
  const std::int32_t half = n / 2;
  const float scale_a = bits_to_float(static_cast<std::uint32_t>(half + 127) << 23);
  const float scale_b = bits_to_float(static_cast<std::uint32_t>(n - half + 127) << 23);
  const float e = mul_rn(mul_rn(er, scale_a), scale_b);
  return nan ? x : over ? bits_to_float(0x7F800000u) : under ? 0.0f : e;
}

// 1 / (1 + e^-x), fp32.
METRALE_HD inline float sigmoid_f32(float x) {
  return div_rn(1.0f, add_rn(1.0f, exp_f32(-x)));
}

// silu(g) = g / (1 + e^-g), fp32.
METRALE_HD inline float silu_f32(float g) {
  return div_rn(g, add_rn(1.0f, exp_f32(-g)));
}

// silu(g) · u, fp32.
METRALE_HD inline float silu_mul(float g, float u) {
  return mul_rn(silu_f32(g), u);
}

// gpt-oss's clamped SwiGLU: g' = min(g, limit), u' = min(max(u, -limit), limit),
// g' · (1 / (1 + e^-(alpha · g'))) · (u' + 1), fp32. min and max as std::min and std::max pick
// (a NaN g or u stays NaN).
METRALE_HD inline float swiglu_clamped(float g, float u, float alpha, float limit) {
  const float gc = limit < g ? limit : g;
  const float ul = u < -limit ? -limit : u;
  const float uc = limit < ul ? limit : ul;
  return mul_rn(mul_rn(gc, sigmoid_f32(mul_rn(alpha, gc))), add_rn(uc, 1.0f));
}

}  // namespace metrale::format
