// format::exp_f32, the MoE layer's shared exp, against the correctly rounded e^x (glibc's double
// exp rounded to float): equal on every point of the sweep (it could differ only where e^x lies
// within 1e-15 of a float midpoint, and then by one ulp); and its edges (NaN, overflow,
// underflow, exact points). The activation helpers against their formulas. On the device, the
// routing and activation of tests/cuda/moe_layer_test.cpp must match the oracle bit for bit.
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

TEST(MoeMath, ExpIsCorrectlyRoundedButForMidpoints) {
  std::uint64_t checked = 0, differ = 0;
  for_each_sweep_float({1.0f, 0.6931472f, 88.7f, -87.3f, -103.9f}, [&](float x) {
    if (!(x >= -110.0f && x <= 95.0f)) return;
    ++checked;
    const float got = format::exp_f32(x), want = rounded_exp(x);
    if (got == want) return;
    ++differ;
    const auto distance = static_cast<std::int64_t>(bits_from_float(got)) -
                          static_cast<std::int64_t>(bits_from_float(want));
    ASSERT_LE(std::llabs(distance), 1) << "x = " << x << " got " << got << " want " << want;
  });
  EXPECT_GT(checked, 1000000u);
  // None differs on this sweep (midpoint cases are rarer than 1 in 10^6).
  EXPECT_EQ(differ, 0u);
}

TEST(MoeMath, ExpEdges) {
  EXPECT_EQ(format::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(format::exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(format::exp_f32(1.0f), rounded_exp(1.0f));
  EXPECT_EQ(format::exp_f32(std::log(2.0f)), rounded_exp(std::log(2.0f)));
  EXPECT_TRUE(std::isnan(format::exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(format::exp_f32(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(format::exp_f32(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(format::exp_f32(88.72f), rounded_exp(88.72f));  // just below FLT_MAX
  EXPECT_EQ(format::exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(format::exp_f32(-104.0f), rounded_exp(-104.0f));  // a subnormal (or 0)
  EXPECT_EQ(format::exp_f32(-95.0f), rounded_exp(-95.0f));    // a subnormal
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
