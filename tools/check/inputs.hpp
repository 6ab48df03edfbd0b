// Seeded inputs of the check harness. Every generator is a pure function of (sizes, seed), also
// when it fills in parallel (fixed chunks, each seeded from its index), so a reported seed
// reproduces the case exactly.
//   exact mode:      small-integer bf16 activations, weights on the NVFP4 grid
//   realistic mode:  normal bf16
//   packing:         a quantizer stress tensor, random e4m3 scale bytes, random bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "metrale/metrale.hpp"

namespace metrale::check {

// xoshiro256** seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                        // [0, 1)
  std::int32_t below(std::int32_t bound);  // [0, bound)
  float normal();                          // standard normal (Box-Muller)

 private:
  std::uint64_t s_[4];
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

// A seed for sub-stream `tag` (and `index`) of `seed`: independent streams per input.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t tag, std::uint64_t index = 0);

std::vector<bf16_bits> normal_bf16(std::size_t count, std::uint64_t seed, float stddev = 1.0f);
// Integers in [-max_abs, max_abs], as bf16 (exact).
std::vector<bf16_bits> small_int_bf16(std::size_t count, std::uint64_t seed, int max_abs);

// Weight [N, K] on the NVFP4 grid with power-of-two block scales: block values are
// e2m1 × s, s in {1/4, 1/2, 1, 2, 4}, and each block holds a ±6, so its amax is 6·s and packing
// with scale_2 = 1 gives back exactly s and the codes. |values| <= 24.
std::vector<bf16_bits> grid_weight_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed);

// Weight [N, K] with one nonzero per row, ±6·s at a seeded column, s in {1/4, ..., 4}: packed
// with scale_2 = 1 it comes back exactly (all-zero blocks get scale 0). A product of this weight
// with any bf16 vector is a single exact product per output, summed with zeros: exact in every
// summation order (the MoE layer's down projection in exact mode).
std::vector<bf16_bits> selection_weight_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed);

// Quantizer stress [N, K]: normal blocks at per-row magnitudes 2^-8 .. 2^8, all-zero blocks,
// large and small blocks (x 2^±12, or x 1e±30 with extreme_magnitudes — which then sets the
// tensor's amax), bf16-subnormal blocks, blocks of exact e2m1 ties (0.25, 0.75, ..., 5 against a
// 6, times a power of two: exact ties when scale_2 = 1), signed zeros; no NaN or Inf (the
// quantizer refuses them).
std::vector<bf16_bits> pack_stress_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed,
                                        bool extreme_magnitudes);

// Valid positive e4m3 scale bytes (0x00 .. 0x7E).
std::vector<std::uint8_t> random_scale_bytes(std::size_t count, std::uint64_t seed);
std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint64_t seed);

// |x| of each bf16 (sign bit cleared): exact.
std::vector<bf16_bits> abs_bf16(const std::vector<bf16_bits>& values);

}  // namespace metrale::check
