// bfloat16 as raw 16 bits (the top half of an fp32): decode and round-to-nearest-even encode.
// Host and device, any arch; bit-identical to cuda_bf16.h's __float2bfloat16_rn and to PTX
// cvt.rn.bf16.f32, including NaN, which becomes the canonical quiet NaN 0x7FFF.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#endif

#include "format/host_device.hpp"

namespace metrale::format {

inline constexpr std::uint16_t kBf16CanonicalNan = 0x7FFF;
inline constexpr int kBf16Patterns = 1 << 16;  // every 16-bit pattern is a bf16 value

METRALE_HD inline float bf16_to_float(std::uint16_t bits) {
  return bits_to_float(static_cast<std::uint32_t>(bits) << 16);
}

// NaN and ±Inf have every exponent bit set. NVFP4 has neither, so the quantizer refuses them
// (CPU backend and, through this same test, the GPU quantizer).
METRALE_HD inline bool bf16_is_finite(std::uint16_t bits) {
  return (bits & 0x7F80u) != 0x7F80u;
}

// Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, then truncate. Finite
// values above the largest bf16 round to ±Inf, as IEEE rounding does; Inf stays Inf.
// On the device it is the instruction itself, the same bits in one instruction instead of the
// arithmetic's half dozen (the activation kernel's SASS: 64 fewer for a thread's 8 values); every
// kernel that rounds to bf16 as the oracle does calls this.
METRALE_HD inline std::uint16_t float_to_bf16(float value) {
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
#else
  if (is_nan_bits(value)) return kBf16CanonicalNan;
  const std::uint32_t bits = float_to_bits(value);
  const std::uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<std::uint16_t>((bits + 0x7FFFu + lsb) >> 16);
#endif
}

}  // namespace metrale::format
