// Tests of format/e4m3.hpp: all 256 bytes decode to sign·2^(e-7)·(1+m/8) (subnormals m·2^-9), the
// NaN bytes 0x7F/0xFF are flagged; the encoder rounds to nearest even and saturates at 448 like
// __NV_SATFINITE, checked against a naive nearest-value search on a dense sweep of fp32, and
// against CUDA 13's host emulation in cuda_fp8.h (__nv_cvt_fp8_to_halfraw, __nv_cvt_float_to_fp8
// with __NV_SATFINITE, __NV_E4M3) where the CUDA headers are present.
#include "format/e4m3.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "float_sweep.hpp"

#if __has_include(<cuda_fp8.h>)
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define METRALE_TEST_HAVE_CUDA_FP8 1
#endif

namespace metrale::format {
namespace {

using test::bits_from_float;
using test::float_from_bits;

// The value of a non-NaN byte by the textbook formula, in double.
double naive_e4m3_value(int code) {
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -9) : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

struct PositiveGrid {
  double values[127];  // codes 0x00..0x7E, ascending
  PositiveGrid() {
    for (int code = 0; code < 127; ++code) values[code] = naive_e4m3_value(code);
  }
};

std::uint8_t naive_e4m3(float x) {
  static const PositiveGrid grid;
  if (std::isnan(x)) return 0x7F;
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  const int code = std::isinf(x) ? 0x7E : test::nearest_code_ties_even(grid.values, a);
  return static_cast<std::uint8_t>(code | sign);
}

TEST(E4m3, AllBytesDecode) {
  for (int code = 0; code < 256; ++code) {
    const auto byte = static_cast<std::uint8_t>(code);
    const float value = e4m3_to_float(byte);
    if ((code & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(value)) << "byte " << code;
      EXPECT_TRUE(e4m3_is_nan(byte)) << "byte " << code;
      continue;
    }
    EXPECT_FALSE(e4m3_is_nan(byte)) << "byte " << code;
    EXPECT_EQ(static_cast<double>(value), naive_e4m3_value(code)) << "byte " << code;
    EXPECT_EQ(std::signbit(value), (code & 0x80) != 0) << "byte " << code;
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), 1.0f / 512.0f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x08), 1.0f / 64.0f);
}

TEST(E4m3, TiesAndSaturation) {
  struct Case {
    float x;
    std::uint8_t code;
  };
  const Case cases[] = {
      {1.0625f, 0x38},       // between 1 (m=0) and 1.125 (m=1): tie to even, 1
      {1.1875f, 0x3A},       // between 1.125 (m=1) and 1.25 (m=2): tie to even, 1.25
      {432.0f, 0x7E},        // between 416 (m=5) and 448 (m=6): tie to even, 448
      {464.0f, 0x7E},        // 448 + half ulp: saturates (RNE would say 480, not finite)
      {470.0f, 0x7E},        // above the half ulp: saturates, never the NaN byte 0x7F
      {500.0f, 0x7E},        // overflow saturates
      {1e38f, 0x7E},         //
      {1.0f / 1024, 0x00},   // half the smallest subnormal: tie to even, 0
      {3.0f / 1024, 0x02},   // 1.5 · 2^-9: tie to even, 2 · 2^-9
      {5.0f / 1024, 0x02},   // 2.5 · 2^-9: tie to even, 2 · 2^-9
      {15.0f / 1024, 0x08},  // 7.5 · 2^-9: tie to even, 8 · 2^-9 = 2^-6, the first normal
      {1.0f / 4096, 0x00},   // underflow
      {0.0f, 0x00},          //
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_e4m3(c.x), c.code) << "x = " << c.x;
    EXPECT_EQ(float_to_e4m3(-c.x), c.code | 0x80) << "x = " << -c.x;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_e4m3(inf), 0x7E);
  EXPECT_EQ(float_to_e4m3(-inf), 0xFE);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(float_to_e4m3(float_from_bits(0xFFC00000u)), 0x7F);
}

TEST(E4m3, EveryFiniteByteRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    EXPECT_EQ(float_to_e4m3(e4m3_to_float(static_cast<std::uint8_t>(code))), code);
  }
}

TEST(E4m3, EncodeMatchesNaiveNearestOnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float(
      {448.0f, 464.0f, 1.0f / 512, 1.0f / 1024, 1.0f / 64, 1.0625f}, [&](float x) {
        ++checked;
        if (float_to_e4m3(x) != naive_e4m3(x) && ++mismatches <= 5)
          ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                        << int(float_to_e4m3(x)) << ", naive 0x" << int(naive_e4m3(x));
      });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

#if defined(METRALE_TEST_HAVE_CUDA_FP8)

TEST(E4m3Cuda, AllBytesDecodeLikeCudaFp8) {
  for (int code = 0; code < 256; ++code) {
    const __half_raw raw =
        __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3);
    const float cuda = __half2float(__half(raw));
    const float ours = e4m3_to_float(static_cast<std::uint8_t>(code));
    if (std::isnan(cuda)) {
      EXPECT_TRUE(std::isnan(ours)) << "byte " << code;
      EXPECT_TRUE(e4m3_is_nan(static_cast<std::uint8_t>(code))) << "byte " << code;
    } else {
      EXPECT_EQ(bits_from_float(ours), bits_from_float(cuda)) << "byte " << code;
    }
  }
}

TEST(E4m3Cuda, EncodeMatchesCudaSatfiniteOnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float(
      {448.0f, 464.0f, 1.0f / 512, 1.0f / 1024, 1.0f / 64, 1.0625f}, [&](float x) {
        ++checked;
        const auto cuda =
            static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
        if (float_to_e4m3(x) != cuda && ++mismatches <= 5)
          ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                        << int(float_to_e4m3(x)) << ", cuda_fp8.h 0x" << int(cuda);
      });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

#else

TEST(E4m3Cuda, AllBytesDecodeLikeCudaFp8) {
  GTEST_SKIP() << "cuda_fp8.h not on the include path";
}
TEST(E4m3Cuda, EncodeMatchesCudaSatfiniteOnDenseSweep) {
  GTEST_SKIP() << "cuda_fp8.h not on the include path";
}

#endif

}  // namespace
}  // namespace metrale::format
