// Deterministic random numbers for the bench, identical on every platform (std::normal_distribution
// is not): a counter-based generator, so element i of a tensor is a pure function of (seed, i) and
// the same on the host (routing, CPU inputs) and the device (GPU inputs, any arch).
#pragma once

#include <cmath>
#include <cstdint>

#include "format/host_device.hpp"

namespace metrale::bench {

// The standard deviation of every random bench weight (CPU and CUDA runs, dense and grouped), so
// that all rows quantize weights of the same distribution.
inline constexpr float kWeightStddev = 0.02f;

// splitmix64's finalizer: a bijective 64-bit mix with good avalanche.
METRALE_HD inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1]: 24 random bits, never 0 (so log() below is finite).
METRALE_HD inline float uniform_at(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = mix64(seed ^ mix64(index));
  return (static_cast<float>(bits >> 40) + 1.0f) * (1.0f / 16777216.0f);
}

// Standard normal (Box-Muller on two independent uniforms).
METRALE_HD inline float normal_at(std::uint64_t seed, std::uint64_t index) {
  const float u1 = uniform_at(seed, 2 * index);
  const float u2 = uniform_at(seed, 2 * index + 1);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}

// A seed derived from a parent seed and a few tags (model, operation, projection, expert).
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0,
                                 std::uint64_t c = 0) {
  return mix64(mix64(mix64(seed ^ 0xA0761D6478BD642Full) ^ a) ^ (b * 0xE7037ED1A0B428DBull)) ^
         (c * 0x8EBC6AF09C88C6E3ull);
}

}  // namespace metrale::bench
