// Seeded input generators of the check harness (inputs.hpp). Large tensors fill in parallel in
// fixed chunks of kChunk elements, chunk c drawing from derive_seed(seed, tag, c), so the result
// does not depend on the number of threads.
#include "check/inputs.hpp"

#include <cmath>
#include <numbers>

#include "cpu/parallel.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"

namespace metrale::check {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 18;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

bf16_bits to_bf16(float x) {
  return format::float_to_bf16(x);
}

// Fills count elements by chunks: fn(rng, begin, end) writes [begin, end).
template <class Fn>
void fill_chunked(std::size_t count, std::uint64_t seed, std::uint64_t tag, Fn&& fn) {
  const std::size_t chunks = (count + kChunk - 1) / kChunk;
  cpu::parallel_for(chunks, 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) {
      Rng rng(derive_seed(seed, tag, c));
      fn(rng, c * kChunk, std::min(count, (c + 1) * kChunk));
    }
  });
}

enum Tag : std::uint64_t { kNormal = 1, kSmallInt, kGrid, kStress, kScales, kBytes, kSelection };

}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::int32_t Rng::below(std::int32_t bound) {
  return bound <= 1 ? 0 : static_cast<std::int32_t>(next() % static_cast<std::uint64_t>(bound));
}

float Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = static_cast<float>(r * std::sin(2.0 * std::numbers::pi * u2));
  has_spare_ = true;
  return static_cast<float>(r * std::cos(2.0 * std::numbers::pi * u2));
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t tag, std::uint64_t index) {
  std::uint64_t state = seed ^ (tag * 0xD1B54A32D192ED03ull);
  std::uint64_t mixed = splitmix64(state);
  state = mixed ^ (index * 0x8CB92BA72F3D8DD7ull);
  return splitmix64(state);
}

std::vector<bf16_bits> normal_bf16(std::size_t count, std::uint64_t seed, float stddev) {
  std::vector<bf16_bits> out(count);
  fill_chunked(count, seed, kNormal, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = to_bf16(rng.normal() * stddev);
  });
  return out;
}

std::vector<bf16_bits> small_int_bf16(std::size_t count, std::uint64_t seed, int max_abs) {
  std::vector<bf16_bits> out(count);
  fill_chunked(count, seed, kSmallInt, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      out[i] = to_bf16(static_cast<float>(rng.below(2 * max_abs + 1) - max_abs));
  });
  return out;
}

std::vector<bf16_bits> grid_weight_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed) {
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  std::vector<bf16_bits> out(count);
  // Chunks are whole blocks (kChunk is a multiple of 16, and so is K).
  fill_chunked(count, seed, kGrid, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t block = begin; block < end; block += 16) {
      const float s = std::ldexp(1.0f, rng.below(5) - 2);  // 1/4 .. 4
      const int anchor = rng.below(16);
      for (int i = 0; i < 16; ++i) {
        std::uint8_t code = static_cast<std::uint8_t>(rng.below(16));
        if (i == anchor) code = static_cast<std::uint8_t>(0x7 | (rng.below(2) << 3));  // ±6
        out[block + i] = to_bf16(format::e2m1_to_float(code) * s);
      }
    }
  });
  return out;
}

std::vector<bf16_bits> selection_weight_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed) {
  std::vector<bf16_bits> out(static_cast<std::size_t>(n) * static_cast<std::size_t>(k),
                             to_bf16(0.0f));
  for (std::int32_t row = 0; row < n; ++row) {
    Rng rng(derive_seed(seed, kSelection, static_cast<std::uint64_t>(row)));
    const std::int32_t column = rng.below(k);
    const float s = std::ldexp(1.0f, rng.below(5) - 2);  // 1/4 .. 4
    const float sign = rng.below(2) ? -1.0f : 1.0f;
    out[static_cast<std::size_t>(row) * static_cast<std::size_t>(k) + column] =
        to_bf16(sign * 6.0f * s);
  }
  return out;
}

std::vector<bf16_bits> pack_stress_bf16(std::int32_t n, std::int32_t k, std::uint64_t seed,
                                        bool extreme_magnitudes) {
  static constexpr float kTies[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  std::vector<bf16_bits> out(count);
  fill_chunked(count, seed, kStress, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t block = begin; block < end; block += 16) {
      const std::size_t row = block / static_cast<std::size_t>(k);
      const float row_scale = std::ldexp(1.0f, static_cast<int>(row % 17) - 8);
      const int kind = rng.below(20);
      for (int i = 0; i < 16; ++i) {
        float x = rng.normal() * row_scale;
        switch (kind) {
          case 0: x = 0.0f; break;                                        // all-zero block
          case 1: x *= extreme_magnitudes ? 1e30f : 4096.0f; break;       // large
          case 2: x *= extreme_magnitudes ? 1e-30f : 1.0f / 4096; break;  // small, normal bf16
          case 3: x = rng.normal() * 1e-39f; break;                       // bf16 subnormals
          case 4:                                                         // exact ties vs a 6
            x = std::ldexp(i == 0 ? 6.0f : kTies[i % 7], rng.below(9) - 4) *
                (rng.below(2) ? -1.0f : 1.0f);
            break;
          case 5: x = rng.below(2) ? -0.0f : 0.0f; break;  // signed zeros
          case 6:
            if (i != 3) x = 0.0f;
            break;  // one nonzero
          // No NaN or Inf: the quantizer refuses them (issue 11), so they are not inputs here.
          default: break;  // normal
        }
        out[block + i] = to_bf16(x);
      }
    }
  });
  return out;
}

std::vector<std::uint8_t> random_scale_bytes(std::size_t count, std::uint64_t seed) {
  std::vector<std::uint8_t> out(count);
  fill_chunked(count, seed, kScales, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<std::uint8_t>(rng.below(0x7F));
  });
  return out;
}

std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint64_t seed) {
  std::vector<std::uint8_t> out(count);
  fill_chunked(count, seed, kBytes, [&](Rng& rng, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = static_cast<std::uint8_t>(rng.next() >> 56);
  });
  return out;
}

std::vector<bf16_bits> abs_bf16(const std::vector<bf16_bits>& values) {
  std::vector<bf16_bits> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i] & 0x7FFFu;
  return out;
}

}  // namespace metrale::check
