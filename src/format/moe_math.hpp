// The fp32 functions of the MoE layer's glue (routing scores, activation, combine), one definition
// for the CPU oracle and the CUDA kernels, so that both compute the same bits.
//
// Why not expf: glibc's expf and CUDA's expf differ in the last bit for some inputs, and one ulp
// flips a near-tie in DeepSeek-V3's expert choice. exp_f32 evaluates e^x in double (a range
// reduction and a degree-12 Taylor polynomial, error < 1e-15 relative) and rounds once to float,
// so it is the correctly rounded expf except where e^x lies within 1e-15 of a float midpoint, and
// it gives the same bits on host and device: every operation is an IEEE double add or multiply,
// with no multiply-add contraction (the device side uses the _rn intrinsics; the host library
// builds with -ffp-contract=off).
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::format {

// One IEEE multiply, add or divide, rounded to nearest, never fused with a neighbour: the device's
// _rn intrinsics (which the compiler does not contract into an FMA), plain operators on the host
// (compiled with -ffp-contract=off). T is float or double.
template <class T>
METRALE_HD inline T mul_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(double))
    return __dmul_rn(a, b);
  else
    return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

template <class T>
METRALE_HD inline T add_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(double))
    return __dadd_rn(a, b);
  else
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

// e^x rounded to float. NaN gives NaN; e^x past FLT_MAX gives +inf, below the smallest subnormal 0.
METRALE_HD inline float exp_f32(float x) {
  if (is_nan_bits(x)) return x;
  if (x > 89.0f) return bits_to_float(0x7F800000u);  // e^89 > FLT_MAX
  if (x < -104.0f) return 0.0f;                      // e^-104 < half the smallest subnormal
  constexpr double kLog2e = 1.4426950408889634;
  // ln 2 in two parts (fdlibm's): kLn2Hi ends in 21 zero bits, so n · kLn2Hi is exact.
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double xd = x;
  // n = round(x / ln 2), |n| <= 151; r = x - n ln 2 in [-0.35, 0.35].
  const double n =
      static_cast<double>(static_cast<std::int32_t>(mul_rn(xd, kLog2e) + (xd < 0 ? -0.5 : 0.5)));
  const double r = add_rn(add_rn(xd, -mul_rn(n, kLn2Hi)), -mul_rn(n, kLn2Lo));
  // e^r = Σ r^i / i!, i = 0..12 (the first term left out is 0.35^13 / 13! < 2e-16).
  double p = 1.0 / 479001600.0;  // 1/12!
  constexpr double kInvFactorial[12] = {
      1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
      1.0 / 120.0,      1.0 / 24.0,      1.0 / 6.0,      0.5,           1.0,          1.0};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (double c : kInvFactorial) p = add_rn(mul_rn(p, r), c);
  // 2^n as a double (n in [-151, 129]: a normal double), exact.
  const std::uint64_t two_n = static_cast<std::uint64_t>(static_cast<std::int64_t>(n) + 1023) << 52;
  double scale;
#if defined(__CUDA_ARCH__)
  scale = __longlong_as_double(static_cast<long long>(two_n));
#else
  __builtin_memcpy(&scale, &two_n, sizeof scale);
#endif
  return static_cast<float>(mul_rn(p, scale));
}

// 1 / (1 + e^-x), fp32.
METRALE_HD inline float sigmoid_f32(float x) {
  return div_rn(1.0f, add_rn(1.0f, exp_f32(-x)));
}

// silu(g) · u = (g / (1 + e^-g)) · u, fp32.
METRALE_HD inline float silu_mul(float g, float u) {
  return mul_rn(div_rn(g, add_rn(1.0f, exp_f32(-g))), u);
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
