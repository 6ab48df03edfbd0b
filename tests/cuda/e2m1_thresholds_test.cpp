// The division-free e2m1 step of the CUDA quantizer (src/cuda/pack/e2m1_thresholds.hpp) against
// the recipe's format::quantize_to_e2m1, on the host: every bf16 value (all 65536 bit patterns:
// zeros, subnormals, Inf, NaN) for every valid scale byte and a spread of scale_2 values, from
// subnormal to huge. Needs no GPU: the same header runs on the device.
#include "cuda/pack/e2m1_thresholds.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "format/bf16.hpp"
#include "format/nvfp4_recipe.hpp"

namespace {

using metrale::cuda::pack::e2m1_thresholds;
using metrale::cuda::pack::quantize_bf16_e2m1;

std::vector<float> scale_2_values() {
  std::vector<float> values = {1.0f,
                               0x1p-8f,
                               1.0f / 2688.0f,
                               3.0f / 2688.0f,
                               0.1f,
                               std::nextafter(1.0f, 2.0f),
                               std::nextafter(1.0f, 0.0f),
                               1e-38f,
                               1e-41f,
                               1e-45f,
                               3e35f,
                               1.2e35f,
                               123456.7f};
  // Seeded fp32 values over the whole exponent range, all mantissa patterns.
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 24; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint32_t bits = static_cast<std::uint32_t>(state >> 33) % 0x7F000000u + 0x00800000u;
    values.push_back(metrale::format::bits_to_float(bits) * 1e-20f);
  }
  return values;
}

TEST(E2m1Thresholds, EqualsTheRecipeForEveryBf16) {
  std::int64_t checked = 0;
  for (float scale_2 : scale_2_values()) {
    for (int sf = 0; sf <= 0x7E; ++sf) {
      const auto th = e2m1_thresholds(static_cast<std::uint8_t>(sf), scale_2);
      for (std::uint32_t x = 0; x <= 0xFFFFu; ++x) {
        const float value = metrale::format::bf16_to_float(static_cast<std::uint16_t>(x));
        const std::uint32_t want =
            metrale::format::quantize_to_e2m1(value, static_cast<std::uint8_t>(sf), scale_2);
        const std::uint32_t got = quantize_bf16_e2m1(x, th, static_cast<std::uint8_t>(sf), scale_2);
        if (got != want) {
          FAIL() << "x = 0x" << std::hex << x << " (" << value << "), sf = 0x" << sf
                 << ", scale_2 = " << scale_2 << ": got 0x" << got << ", want 0x" << want;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// The bounds themselves: at d = 1 (sf = 1.0, scale_2 = 1) every tie of NVFP4.md lands where the
// recipe puts it, through the threshold path (not the division fallback).
TEST(E2m1Thresholds, TiesAtUnitScale) {
  const auto th = e2m1_thresholds(0x38, 1.0f);  // e4m3 0x38 = 1.0
  ASSERT_FALSE(th.divide);
  const struct {
    float x;
    std::uint32_t code;
  } ties[] = {{0.25f, 0x0}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4}, {3.5f, 0x6},
              {5.0f, 0x6},  {-5.0f, 0xE}, {6.5f, 0x7},  {-0.0f, 0x8}, {0.5f, 0x1}};
  for (const auto& tie : ties) {
    const std::uint32_t bits = metrale::format::float_to_bf16(tie.x);
    EXPECT_EQ(quantize_bf16_e2m1(bits, th, 0x38, 1.0f), tie.code) << tie.x;
  }
}

}  // namespace
