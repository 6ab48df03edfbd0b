// Test inputs for the format codecs: a dense, deterministic sweep of fp32 bit patterns, and the
// naive reference roundings the codecs are checked against when CUDA's headers are absent.
// The sweep holds, for every one of the 65,536 high halves, the low halves that decide rounding
// (0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF and one pseudo-random), every 1021st pattern of the whole
// 32-bit space, and every pattern within 4096 ulps of each `focus` value and of its negation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

namespace metrale::test {

inline float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline std::uint32_t bits_from_float(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

template <class Fn>
void for_each_sweep_float(std::initializer_list<float> focus, Fn&& fn) {
  std::uint32_t lcg = 12345u;
  for (std::uint32_t high = 0; high < 0x10000u; ++high) {
    lcg = lcg * 1664525u + 1013904223u;
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, lcg >> 16})
      fn(float_from_bits((high << 16) | low));
  }
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 1021) {
    fn(float_from_bits(static_cast<std::uint32_t>(bits)));
  }
  for (float center : focus) {
    for (float signed_center : {center, -center}) {
      const std::int64_t base = bits_from_float(signed_center);
      for (std::int64_t d = -4096; d <= 4096; ++d) {
        const std::int64_t bits = base + d;
        if (bits >= 0 && bits <= 0xFFFFFFFFll)
          fn(float_from_bits(static_cast<std::uint32_t>(bits)));
      }
    }
  }
}

// Nearest entry of an ascending table of non-negative values to `a` (finite, >= 0), ties to the
// even index; beyond the last entry, the last one (saturation). Indices are the codes, so "even
// index" is "even mantissa". Found by bisection, then a comparison of the two neighbours.
template <std::size_t Size>
int nearest_code_ties_even(const double (&table)[Size], double a) {
  int above = 0;  // first index whose value exceeds a
  int lo = 0, hi = static_cast<int>(Size);
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (table[mid] > a) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  above = lo;
  if (above == 0) return 0;
  if (above == static_cast<int>(Size)) return static_cast<int>(Size) - 1;
  const int below = above - 1;
  const double d_below = a - table[below], d_above = table[above] - a;
  if (d_below < d_above) return below;
  if (d_above < d_below) return above;
  return below % 2 == 0 ? below : above;
}

}  // namespace metrale::test
