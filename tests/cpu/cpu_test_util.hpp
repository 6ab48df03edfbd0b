// Inputs for the CPU backend tests: deterministic random bf16 activations (small integers, so
// every sum is exact, or general values), NVFP4 weights (random codes, finite e4m3 scales), and a
// naive dequantization written here from the layout definitions, not from the backend.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "metrale/metrale.hpp"

namespace metrale::test {

inline std::vector<bf16_bits> random_bf16(std::size_t count, std::uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<bf16_bits> out(count);
  for (auto& v : out) v = format::float_to_bf16(static_cast<float>(dist(rng)));
  return out;
}

inline std::vector<bf16_bits> random_normal_bf16(std::size_t count, std::uint32_t seed,
                                                 float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<bf16_bits> out(count);
  for (auto& v : out) v = format::float_to_bf16(dist(rng));
  return out;
}

inline std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<std::uint8_t> out(count);
  for (auto& v : out) v = static_cast<std::uint8_t>(dist(rng));
  return out;
}

// Positive finite e4m3 bytes in [lo_code, hi_code] (0x30 = 0.5 .. 0x40 = 2 keeps sums small).
inline std::vector<std::uint8_t> random_scales(std::size_t count, std::uint32_t seed,
                                               int lo_code = 0x30, int hi_code = 0x40) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo_code, hi_code);
  std::vector<std::uint8_t> out(count);
  for (auto& v : out) v = static_cast<std::uint8_t>(dist(rng));
  return out;
}

// w[n, k] = e2m1 · e4m3 (scale_2 not applied) of a packed [N, K/2] weight with [K/16, N] scales,
// as bf16 (exact: at most 6 significant bits).
inline std::vector<bf16_bits> naive_dequant_bf16(const std::vector<std::uint8_t>& packed,
                                                 const std::vector<std::uint8_t>& scale, int n,
                                                 int k) {
  std::vector<bf16_bits> w(static_cast<std::size_t>(n) * k);
  for (int row = 0; row < n; ++row)
    for (int col = 0; col < k; ++col) {
      const std::uint8_t byte = packed[static_cast<std::size_t>(row) * (k / 2) + col / 2];
      const std::uint8_t code = col % 2 == 0 ? (byte & 0xF) : (byte >> 4);
      const float sf = format::e4m3_to_float(scale[static_cast<std::size_t>(col / 16) * n + row]);
      w[static_cast<std::size_t>(row) * k + col] =
          format::float_to_bf16(format::e2m1_to_float(code) * sf);
    }
  return w;
}

inline std::uint64_t ptr_bits(const void* p) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

}  // namespace metrale::test
