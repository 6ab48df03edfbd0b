// Portability layer of src/format: the METRALE_HD qualifier and the float <-> bits casts, so that
// every codec in this folder compiles unchanged with g++ (host) and nvcc (host and device, any
// arch). Nothing here depends on the CUDA runtime.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

#if defined(__CUDACC__)
#define METRALE_HD __host__ __device__
#else
#define METRALE_HD
#endif

namespace metrale::format {

// Raw IEEE-754 bits of a float and back. Device code uses the intrinsics (one register move);
// host code uses memcpy, which compilers fold to the same move and which is legal C++.
METRALE_HD inline std::uint32_t float_to_bits(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

METRALE_HD inline float bits_to_float(std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

// True for any NaN, by bits, so that it behaves the same under fast-math flags on host and device.
METRALE_HD inline bool is_nan_bits(float value) {
  return (float_to_bits(value) & 0x7FFFFFFFu) > 0x7F800000u;
}

}  // namespace metrale::format
