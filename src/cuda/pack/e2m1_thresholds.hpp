// The quantizer's per-element step without a division, equal bit for bit to the recipe's
// format::quantize_to_e2m1(x, sf, scale_2) for every bf16 x (checked exhaustively over x in
// tests/cuda/e2m1_thresholds_test.cpp). Why it is exact:
//   The recipe takes q = RN(x / d), d = float(sf)·scale_2 (an fp32 product), then rounds q to
//   the e2m1 grid by comparing |q| with the bounds t = 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5
//   (`<=` at 0.25, 1.25, 2.5, 5; `<` at 0.75, 1.75, 3.5). Each t is an fp32 value with an even
//   last mantissa bit, so RN(y) <= t  <=>  y <= t + ulp(t)/2 and RN(y) < t  <=>  y < t - ulp(t)/2
//   (the midpoint ties to t). Multiplying through by d > 0 turns each test on q into a test of
//   |x| against the real bound B = m·d; m has at most 26 significant bits and d 24, so B is
//   exact in fp64. |x| is an fp32 value, so |x| > B <=> |x| > RD(B) and |x| >= B <=> |x| >= RU(B),
//   with RD/RU the directed fp64 -> fp32 roundings; and since |x| is a bf16 (low 16 bits zero),
//   each test becomes a compare of its top 16 bits with a 16-bit threshold. The code is the
//   number of thresholds |x| passes, plus the sign of x (the sign of x/d for d > 0); NaN gives
//   0x7 as float_to_e2m1 does. d = 0, Inf or NaN (not reachable from the recipe's scales, kept
//   for safety) falls back to the division.
// Per block: 7 fp64 multiplies and 7 directed conversions; per element: 3 integer compares.
// Host and device, any arch.
#pragma once

#include <cmath>
#include <cstdint>

#include "format/e2m1.hpp"
#include "format/host_device.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda::pack {

struct E2m1Thresholds {
  std::uint32_t t[7];  // compare with the top 16 bits of |x| (bf16 magnitude bits)
  float d;             // float(sf) · scale_2, the recipe's denominator
  bool divide;         // d is 0, Inf or NaN: use the division
};

// fp64 -> fp32 rounded down / up (exact v in, directed rounding out).
METRALE_HD inline float round_down_to_float(double v) {
#if defined(__CUDA_ARCH__)
  return __double2float_rd(v);
#else
  float f = static_cast<float>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -INFINITY);
  return f;
#endif
}

METRALE_HD inline float round_up_to_float(double v) {
#if defined(__CUDA_ARCH__)
  return __double2float_ru(v);
#else
  float f = static_cast<float>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, INFINITY);
  return f;
#endif
}

METRALE_HD inline E2m1Thresholds e2m1_thresholds(std::uint8_t sf, float scale_2) {
  // Bound i: t_i ± ulp(t_i)/2 and whether it is a `<=` bound of float_to_e2m1 (ties go down).
  constexpr double kMid[7] = {0.25 + 0x1p-26, 0.75 - 0x1p-25, 1.25 + 0x1p-24, 1.75 - 0x1p-24,
                              2.5 + 0x1p-23,  3.5 - 0x1p-23,  5.0 + 0x1p-22};
  constexpr bool kLessEqual[7] = {true, false, true, false, true, false, true};
  E2m1Thresholds th{};
  th.d = format::e4m3_to_float(sf) * scale_2;  // the same fp32 product as the recipe
  const std::uint32_t d_bits = format::float_to_bits(th.d) & 0x7FFFFFFFu;
  th.divide = d_bits == 0 || d_bits >= 0x7F800000u;
  if (th.divide) return th;
  const double d = static_cast<double>(th.d);
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int i = 0; i < 7; ++i) {
    const double bound = kMid[i] * d;  // exact: 26 + 24 significant bits
    // |x| passes a `<=` bound when |x| > RD(B); a `<` bound when |x| >= RU(B), i.e. when its
    // bits exceed bits(RU(B)) - 1 (RU(B) > 0, as B > 0).
    const std::uint32_t c = kLessEqual[i] ? format::float_to_bits(round_down_to_float(bound))
                                          : format::float_to_bits(round_up_to_float(bound)) - 1u;
    th.t[i] = c >> 16;  // |x| has zero low bits: |x| > c <=> top16(|x|) > c >> 16
  }
  return th;
}

// The e2m1 code (low nibble) of the bf16 `x_bits` through the thresholds (th.divide false):
// branch-free integer compares. The thresholds ascend (each bound is above the previous one), so
// the number of them below |x| is found by a 3-step binary search instead of 7 compares.
METRALE_HD inline std::uint32_t threshold_e2m1(std::uint32_t x_bits, const E2m1Thresholds& th) {
  const std::uint32_t magnitude = x_bits & 0x7FFFu;
  const bool ge4 = magnitude > th.t[3];
  const bool ge2 = magnitude > (ge4 ? th.t[5] : th.t[1]);
  const std::uint32_t last = ge4 ? (ge2 ? th.t[6] : th.t[4]) : (ge2 ? th.t[2] : th.t[0]);
  const std::uint32_t count = (ge4 ? 4u : 0u) | (ge2 ? 2u : 0u) | (magnitude > last ? 1u : 0u);
  const std::uint32_t code = count | ((x_bits >> 12) & 0x8u);
  return magnitude > 0x7F80u ? 0x7u : code;  // NaN: +6, as float_to_e2m1
}

// The code format::quantize_to_e2m1 gives for bf16 `x_bits` in the block of these thresholds.
METRALE_HD inline std::uint32_t quantize_bf16_e2m1(std::uint32_t x_bits, const E2m1Thresholds& th,
                                                   std::uint8_t sf, float scale_2) {
  if (th.divide) return format::quantize_to_e2m1(format::bits_to_float(x_bits << 16), sf, scale_2);
  return threshold_e2m1(x_bits, th);
}

}  // namespace metrale::cuda::pack
