// Helpers for the API tests: checking a Result's status and message, environment overrides that
// restore themselves, and NVFP4 inputs whose quantization is exact (values on the e2m1 grid with
// each block's amax at 6·2^s, so the seed quantizer with scale_2 = 1 reproduces them bit for bit).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_test_util.hpp"  // ptr_bits, shared with the CPU tests
#include "format/bf16.hpp"
#include "metrale/metrale.hpp"

namespace metrale::test {

inline ::testing::AssertionResult fails_with(const Result& r, Status status,
                                             const std::string& text) {
  if (r.status != status) {
    return ::testing::AssertionFailure()
           << "status " << static_cast<int>(r.status) << " != " << static_cast<int>(status)
           << ", message: " << r.message;
  }
  if (r.message.find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << r.message << "\" lacks \"" << text << "\"";
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult succeeds(const Result& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "status " << static_cast<int>(r.status) << ": " << r.message;
}

// Sets (or unsets, with nullopt) an environment variable for the scope of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// [N, K] weights, each 16-block = e2m1 grid values · 2^s with s in {-1, 0, 1} and one entry
// at ±6·2^s, so sf = 2^s and every element quantizes exactly (scale_2 = 1).
inline std::vector<float> grid_weights(int n, int k, std::uint32_t seed) {
  static constexpr float kGrid[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::mt19937 rng(seed);
  std::vector<float> w(static_cast<std::size_t>(n) * k);
  for (int row = 0; row < n; ++row) {
    for (int b = 0; b < k / 16; ++b) {
      const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 3) - 1);
      const int peak = static_cast<int>(rng() % 16);
      for (int j = 0; j < 16; ++j) {
        const float mag = j == peak ? 6.0f : kGrid[rng() % 8];
        const float sign = (rng() & 1) ? -1.0f : 1.0f;
        w[static_cast<std::size_t>(row) * k + b * 16 + j] = sign * mag * scale;
      }
    }
  }
  return w;
}

inline std::vector<bf16_bits> to_bf16(const std::vector<float>& x) {
  std::vector<bf16_bits> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = format::float_to_bf16(x[i]);
  return out;
}

// Small-integer activations: every product and sum below is exact in fp32.
inline std::vector<float> small_ints(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> out(count);
  for (auto& v : out) v = static_cast<float>(static_cast<int>(rng() % 7) - 3);
  return out;
}

// out[i, :] = act[row(i), :] · w[N, K]ᵀ · scale_2, rounded once to bf16; exact for the inputs
// above.
inline std::vector<bf16_bits> naive_rows(const std::vector<float>& act,
                                         const std::vector<int>& rows, const std::vector<float>& w,
                                         int n, int k, float scale_2) {
  std::vector<bf16_bits> out(rows.size() * static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (int col = 0; col < n; ++col) {
      double sum = 0;
      for (int kk = 0; kk < k; ++kk) {
        sum += static_cast<double>(act[static_cast<std::size_t>(rows[i]) * k + kk]) *
               w[static_cast<std::size_t>(col) * k + kk];
      }
      out[i * n + col] = format::float_to_bf16(static_cast<float>(sum * scale_2));
    }
  }
  return out;
}

}  // namespace metrale::test
