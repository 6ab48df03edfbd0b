// E4M3 ("fn" variant), the NVFP4 block scale (NVFP4.md §2): sign, 4 exponent bits (bias 7), 3
// mantissa bits; max finite 448 (0x7E), NaN 0x7F / 0xFF, no Inf, smallest subnormal 2^-9.
// Host and device, any arch: plain integer arithmetic, bit-identical to CUDA's conversions.
#pragma once

#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::format {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE4m3MinSubnormal = 1.0f / 512.0f;  // 2^-9
inline constexpr std::uint8_t kE4m3MaxCode = 0x7E;
inline constexpr std::uint8_t kE4m3NanCode = 0x7F;

METRALE_HD inline bool e4m3_is_nan(std::uint8_t code) {
  return (code & 0x7Fu) == 0x7Fu;
}

// Exact value of the byte; 0x7F and 0xFF give a quiet NaN carrying the byte's sign.
METRALE_HD inline float e4m3_to_float(std::uint8_t code) {
  const std::uint32_t sign = static_cast<std::uint32_t>(code >> 7) << 31;
  const std::uint32_t exponent = (code >> 3) & 0xFu;
  const std::uint32_t mantissa = code & 0x7u;
  if (e4m3_is_nan(code)) return bits_to_float(sign | 0x7FC00000u);
  if (exponent == 0) {
    // Subnormal: m·2^-9, exact in fp32 (a small integer times a power of two).
    const float value = static_cast<float>(mantissa) * kE4m3MinSubnormal;
    return bits_to_float(float_to_bits(value) | sign);
  }
  // Normal: rebias the exponent (7 -> 127) and left-align the 3 mantissa bits.
  return bits_to_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

// Nearest e4m3 byte, ties to even, saturating like CUDA's __NV_SATFINITE: any |x| >= 448
// (±Inf included) gives ±448 (0x7E / 0xFE); NaN gives 0x7F; magnitudes <= 2^-10 give ±0.
METRALE_HD inline std::uint8_t float_to_e4m3(float x) {
  if (is_nan_bits(x)) return kE4m3NanCode;
  const std::uint32_t bits = float_to_bits(x);
  const std::uint8_t sign = static_cast<std::uint8_t>((bits >> 31) << 7);
  const std::uint32_t abs_bits = bits & 0x7FFFFFFFu;
  const float a = bits_to_float(abs_bits);
  // Everything in (448, 464] rounds to 448 anyway; beyond it saturation gives 448 too.
  if (a >= kE4m3Max) return static_cast<std::uint8_t>(kE4m3MaxCode | sign);
  std::uint32_t code;
  if (a < 0.015625f) {
    // Below the smallest normal 2^-6: count units of 2^-9 (scaling by 512 is exact), round the
    // count to the nearest integer, ties to even. A count of 8 is the code of 2^-6 itself.
    const float units = a * 512.0f;
    code = static_cast<std::uint32_t>(units);             // truncation, units < 8
    const float rest = units - static_cast<float>(code);  // exact
    if (rest > 0.5f || (rest == 0.5f && (code & 1u))) ++code;
  } else {
    // Normal: keep the top 3 of the 23 mantissa bits, round on the 20 below them. A carry out of
    // the mantissa moves into the exponent field, which is the right answer.
    const std::uint32_t exponent = (abs_bits >> 23) - 127u + 7u;  // 1..15
    const std::uint32_t mantissa = (abs_bits >> 20) & 0x7u;
    const std::uint32_t rest = abs_bits & 0xFFFFFu;
    code = (exponent << 3) | mantissa;
    if (rest > 0x80000u || (rest == 0x80000u && (mantissa & 1u))) ++code;
  }
  return static_cast<std::uint8_t>(code | sign);
}

}  // namespace metrale::format
