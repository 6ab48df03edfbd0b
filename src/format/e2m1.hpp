// E2M1, the 4-bit NVFP4 element (NVFP4.md §1): sign, 2 exponent bits, 1 mantissa bit, bias 1.
// Codes live in the low nibble of a byte: 0x0..0x7 = +{0, 0.5, 1, 1.5, 2, 3, 4, 6}, 0x8..0xF the
// same negated; 0x8 is negative zero and decodes as zero. No Inf, no NaN. Host and device, any
// arch (sm_90 has no e2m1 conversion instruction, so this is plain arithmetic everywhere).
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::format {

inline constexpr float kE2m1Max = 6.0f;

// Value of the code in the low nibble of `code` (the high nibble is ignored). 0x8 yields -0.0f,
// which is zero (== 0.0f) and is what CUDA's own decoder (__nv_cvt_fp4_to_halfraw) returns too.
METRALE_HD inline float e2m1_to_float(std::uint8_t code) {
  const std::uint32_t magnitude = code & 0x7u;
  const std::uint32_t exponent = magnitude >> 1;
  const std::uint32_t mantissa = magnitude & 0x1u;
  // Subnormal (exponent 0): 0.5·m. Normal: (1 + 0.5·m)·2^(exponent-1).
  const float value = exponent == 0 ? 0.5f * static_cast<float>(mantissa)
                                    : (1.0f + 0.5f * static_cast<float>(mantissa)) *
                                          static_cast<float>(1u << (exponent - 1));
  return (code & 0x8u) ? -value : value;
}

// Nearest e2m1 code, ties to even, saturating at ±6. The decision bounds between neighbours are
// 0.25, 0.75, 1.25, 1.75, 2.5, 3.5 and 5; at a bound exactly the code with an even mantissa wins
// (0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4). The sign bit of `x` is kept, so -0.0 and
// negatives that round to zero give 0x8 (as CUDA's cvt does). ModelOpt differs on exactly -0.0
// (its sign is `x < 0`: code 0x0); the Python package's quantize applies ModelOpt's rule on top
// (python/metrale/_recipe.py), the library keeps this one, which its CUDA quantizer shares.
// Non-finite input, the one policy on host and device (identical to cuda_fp4.h's
// __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) and to PTX cvt.rn.satfinite.e2m1x2):
// ±Inf saturates to ±6 (0x7 / 0xF); NaN becomes +6 (0x7).
METRALE_HD inline std::uint8_t float_to_e2m1(float x) {
  if (is_nan_bits(x)) return 0x7u;
  const std::uint32_t bits = float_to_bits(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 31) << 3);
  const float a = bits_to_float(bits & 0x7FFFFFFFu);
  // `<=` where the lower code is even (ties go down), `<` where the upper one is even.
  std::uint8_t code;
  if (a <= 0.25f) {
    code = 0x0;
  } else if (a < 0.75f) {
    code = 0x1;
  } else if (a <= 1.25f) {
    code = 0x2;
  } else if (a < 1.75f) {
    code = 0x3;
  } else if (a <= 2.5f) {
    code = 0x4;
  } else if (a < 3.5f) {
    code = 0x5;
  } else if (a <= 5.0f) {
    code = 0x6;
  } else {
    code = 0x7;
  }
  return static_cast<std::uint8_t>(code | sign);
}

// Two codes into one byte: the element with the even k in the low nibble (NVFP4.md §4 step 4).
METRALE_HD inline std::uint8_t pack_e2m1_pair(std::uint8_t even_k, std::uint8_t odd_k) {
  return static_cast<std::uint8_t>((even_k & 0xFu) | ((odd_k & 0xFu) << 4));
}

}  // namespace metrale::format
