// Tests of format/e2m1.hpp: all 16 codes decode to NVFP4.md §1's table; every decision bound and
// tie of NVFP4.md §4 encodes as listed; the encoder equals a naive nearest-value search over the
// grid on a dense sweep of fp32, and equals CUDA 13's own host emulation (cuda_fp4.h,
// __nv_cvt_float_to_fp4 with __NV_E2M1 and cudaRoundNearest) where the CUDA headers are present.
#include "format/e2m1.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "float_sweep.hpp"

#if __has_include(<cuda_fp4.h>)
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#define METRALE_TEST_HAVE_CUDA_FP4 1
#endif

namespace metrale::format {
namespace {

using test::bits_from_float;
using test::float_from_bits;

constexpr double kE2m1Grid[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

// The reference rounding: nearest grid value, ties to the even code, saturate, keep the sign;
// NaN becomes +6 (the policy CUDA's cvt.rn.satfinite.e2m1x2 has).
std::uint8_t naive_e2m1(float x) {
  if (std::isnan(x)) return 0x7;
  const std::uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const double a = std::fabs(static_cast<double>(x));
  const int code = std::isinf(x) ? 7 : test::nearest_code_ties_even(kE2m1Grid, a);
  return static_cast<std::uint8_t>(code | sign);
}

TEST(E2m1, AllSixteenCodesDecode) {
  const float expected[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                              -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  for (int code = 0; code < 16; ++code) {
    const float value = e2m1_to_float(static_cast<std::uint8_t>(code));
    EXPECT_EQ(bits_from_float(value), bits_from_float(expected[code])) << "code " << code;
    // The high nibble is ignored.
    EXPECT_EQ(bits_from_float(e2m1_to_float(static_cast<std::uint8_t>(code | 0xA0))),
              bits_from_float(expected[code]));
  }
  EXPECT_EQ(e2m1_to_float(0x8), 0.0f) << "0x8 (negative zero) must decode as zero";
}

TEST(E2m1, BoundsAndTiesEncodeAsListed) {
  struct Case {
    float x;
    std::uint8_t code;
  };
  // NVFP4.md §4: bounds 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5; ties to the even code.
  const Case cases[] = {
      {0.0f, 0x0}, {0.25f, 0x0}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4},
      {3.5f, 0x6}, {5.0f, 0x6},  {6.0f, 0x7},  {7.0f, 0x7},  {1e30f, 0x7}, {0.5f, 0x1},
      {1.0f, 0x2}, {1.5f, 0x3},  {2.0f, 0x4},  {3.0f, 0x5},  {4.0f, 0x6},  {0.1f, 0x0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_e2m1(c.x), c.code) << "x = " << c.x;
    EXPECT_EQ(float_to_e2m1(-c.x), c.code | 0x8) << "x = " << -c.x;
    // One ulp either side of a bound goes to the nearer neighbour.
    const float up = std::nextafter(c.x, 100.0f), down = std::nextafter(c.x, -100.0f);
    EXPECT_EQ(float_to_e2m1(up), naive_e2m1(up)) << "x = " << up;
    EXPECT_EQ(float_to_e2m1(down), naive_e2m1(down)) << "x = " << down;
  }
  EXPECT_EQ(float_to_e2m1(std::nextafter(0.25f, 1.0f)), 0x1);
  EXPECT_EQ(float_to_e2m1(std::nextafter(0.75f, 0.0f)), 0x1);
  EXPECT_EQ(float_to_e2m1(std::nextafter(5.0f, 9.0f)), 0x7);
}

TEST(E2m1, NonFinitePolicy) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_e2m1(inf), 0x7);
  EXPECT_EQ(float_to_e2m1(-inf), 0xF);
  EXPECT_EQ(float_to_e2m1(std::numeric_limits<float>::quiet_NaN()), 0x7);
  EXPECT_EQ(float_to_e2m1(float_from_bits(0xFFC00001u)), 0x7) << "negative NaN";
  EXPECT_EQ(float_to_e2m1(float_from_bits(0x7F800001u)), 0x7) << "signalling NaN";
  EXPECT_EQ(float_to_e2m1(-0.0f), 0x8);
}

TEST(E2m1, EncodeMatchesNaiveNearestOnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float({0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}, [&](float x) {
    ++checked;
    if (float_to_e2m1(x) != naive_e2m1(x) && ++mismatches <= 5)
      ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                    << int(float_to_e2m1(x)) << ", naive 0x" << int(naive_e2m1(x));
  });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

TEST(E2m1, PackPairPutsEvenKLow) {
  EXPECT_EQ(pack_e2m1_pair(0x3, 0xC), 0xC3);
  EXPECT_EQ(pack_e2m1_pair(0xF3, 0x1C), 0xC3) << "only the low nibbles count";
}

#if defined(METRALE_TEST_HAVE_CUDA_FP4)

TEST(E2m1Cuda, DecodeMatchesCudaFp4) {
  for (int code = 0; code < 16; ++code) {
    const __half_raw raw =
        __nv_cvt_fp4_to_halfraw(static_cast<__nv_fp4_storage_t>(code), __NV_E2M1);
    const float cuda = __half2float(__half(raw));
    EXPECT_EQ(bits_from_float(e2m1_to_float(static_cast<std::uint8_t>(code))),
              bits_from_float(cuda))
        << "code " << code;
  }
}

TEST(E2m1Cuda, EncodeMatchesCudaFp4OnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float({0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}, [&](float x) {
    ++checked;
    const auto cuda =
        static_cast<std::uint8_t>(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest));
    if (float_to_e2m1(x) != cuda && ++mismatches <= 5)
      ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                    << int(float_to_e2m1(x)) << ", cuda_fp4.h 0x" << int(cuda);
  });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

#else

TEST(E2m1Cuda, DecodeMatchesCudaFp4) {
  GTEST_SKIP() << "cuda_fp4.h not on the include path";
}
TEST(E2m1Cuda, EncodeMatchesCudaFp4OnDenseSweep) {
  GTEST_SKIP() << "cuda_fp4.h not on the include path";
}

#endif

}  // namespace
}  // namespace metrale::format
