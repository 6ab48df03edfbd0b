// format::exp_f32, the MoE layer's shared exp, against the correctly rounded e^x (glibc's double
// exp rounded to float): within 1 ulp on every point of a dense sweep (of every 7th float in
// [-87, 88.7], 99.2 % are correctly rounded and the rest 1 ulp off), and its edges (NaN,
// overflow, underflow, exact points). The activation helpers against their formulas. On the
// device, tests/cuda/moe_layer_test.cpp holds the routing and activation to the oracle's bits.
#include "format/moe_math.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "float_sweep.hpp"

namespace metrale::test {
namespace {

float rounded_exp(float x) {
  return static_cast<float>(std::exp(static_cast<double>(x)));
}

// ulps between two finite floats of the same sign (or zero).
std::int64_t ulps(float a, float b) {
  return std::llabs(static_cast<std::int64_t>(bits_from_float(a)) -
                    static_cast<std::int64_t>(bits_from_float(b)));
}

TEST(MoeMath, ExpIsWithinOneUlp) {
  std::uint64_t checked = 0, exact = 0;
  std::int64_t worst = 0;
  for_each_sweep_float({1.0f, 0.6931472f, 88.7f, -87.3f, -103.9f}, [&](float x) {
    if (!(x >= -87.0f && x <= 88.7f)) return;  // normal results (subnormals: ExpEdges)
    ++checked;
    const std::int64_t d = ulps(format::exp_f32(x), rounded_exp(x));
    worst = std::max(worst, d);
    exact += d == 0;
  });
  EXPECT_GT(checked, 1000000u);
  EXPECT_LE(worst, 1);
  EXPECT_GT(exact * 100, checked * 98) << exact << " of " << checked << " correctly rounded";
}

TEST(MoeMath, ExpEdges) {
  EXPECT_EQ(format::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(format::exp_f32(-0.0f), 1.0f);
  EXPECT_LE(ulps(format::exp_f32(1.0f), rounded_exp(1.0f)), 1);
  EXPECT_LE(ulps(format::exp_f32(std::log(2.0f)), rounded_exp(std::log(2.0f))), 1);
  EXPECT_TRUE(std::isnan(format::exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(format::exp_f32(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(format::exp_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_LE(ulps(format::exp_f32(88.72f), rounded_exp(88.72f)), 2);  // just below FLT_MAX
  EXPECT_EQ(format::exp_f32(88.73f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(format::exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_LE(ulps(format::exp_f32(-95.0f), rounded_exp(-95.0f)), 2);    // a subnormal
  EXPECT_LE(ulps(format::exp_f32(-103.5f), rounded_exp(-103.5f)), 1);  // the smallest ones
  EXPECT_EQ(format::exp_f32(-104.5f), 0.0f);
}

TEST(MoeMath, ActivationsFollowTheirFormulas) {
  for (float g : {-9.0f, -1.5f, -0.0f, 0.25f, 3.0f, 8.0f}) {
    for (float u : {-8.0f, -0.5f, 0.0f, 2.0f, 7.5f}) {
      const float sig = 1.0f / (1.0f + format::exp_f32(-g));
      EXPECT_EQ(format::sigmoid_f32(g), sig);
      EXPECT_EQ(format::silu_mul(g, u), g / (1.0f + format::exp_f32(-g)) * u);
      const float gc = std::min(g, 7.0f), uc = std::min(std::max(u, -7.0f), 7.0f);
      EXPECT_EQ(format::swiglu_clamped(g, u, 1.702f, 7.0f),
                gc * (1.0f / (1.0f + format::exp_f32(-(1.702f * gc)))) * (uc + 1.0f));
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(format::swiglu_clamped(nan, 1.0f, 1.702f, 7.0f)));
  EXPECT_TRUE(std::isnan(format::swiglu_clamped(1.0f, nan, 1.702f, 7.0f)));
}

}  // namespace
}  // namespace metrale::test
