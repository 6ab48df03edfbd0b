// Tests of format/bf16.hpp: every bf16 pattern decodes and re-encodes to itself (NaN to the
// canonical 0x7FFF); round to nearest even at ties; overflow to Inf; the encoder equals a naive
// nearest-value search on a dense sweep, and cuda_bf16.h's host __float2bfloat16_rn where present.
#include "format/bf16.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "float_sweep.hpp"

#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#define METRALE_TEST_HAVE_CUDA_BF16 1
#endif

namespace metrale::format {
namespace {

using test::bits_from_float;
using test::float_from_bits;

// Nearest of the two bf16 neighbours of x (truncation and the next pattern up in magnitude),
// ties to the even pattern, compared in double; the pattern after the largest finite is Inf.
std::uint16_t naive_bf16(float x) {
  if (std::isnan(x)) return 0x7FFF;
  const std::uint32_t bits = bits_from_float(x);
  const std::uint16_t below = static_cast<std::uint16_t>(bits >> 16);
  if ((bits & 0xFFFFu) == 0) return below;
  const std::uint16_t above = static_cast<std::uint16_t>(below + 1);
  const double a = std::fabs(static_cast<double>(x));
  const double lo = std::fabs(static_cast<double>(float_from_bits(std::uint32_t{below} << 16)));
  const double hi =
      (above & 0x7FFF) == 0x7F80
          ? std::ldexp(1.0, 128)  // Inf stands where 2^128 would be
          : std::fabs(static_cast<double>(float_from_bits(std::uint32_t{above} << 16)));
  if (a - lo < hi - a) return below;
  if (hi - a < a - lo) return above;
  return (below & 1) ? above : below;
}

TEST(Bf16, EveryPatternRoundTrips) {
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const float value = bf16_to_float(static_cast<std::uint16_t>(bits));
    EXPECT_EQ(bits_from_float(value), bits << 16);
    const std::uint16_t expected = std::isnan(value) ? 0x7FFF : static_cast<std::uint16_t>(bits);
    EXPECT_EQ(float_to_bf16(value), expected) << "bits 0x" << std::hex << bits;
  }
}

TEST(Bf16, TiesToEvenAndOverflow) {
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3F808000u)), 0x3F80) << "tie, even below";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3F818000u)), 0x3F82) << "tie, odd below";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3F808001u)), 0x3F81) << "just above the tie";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x3F807FFFu)), 0x3F80) << "just below the tie";
  EXPECT_EQ(float_to_bf16(float_from_bits(0xBF818000u)), 0xBF82) << "negative tie";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7F7F8000u)), 0x7F80) << "tie above max: Inf";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7F7F7FFFu)), 0x7F7F) << "below it: max";
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16(float_from_bits(0x7F800001u)), 0x7FFF) << "NaN stays NaN";
  EXPECT_EQ(float_to_bf16(float_from_bits(0xFFFFFFFFu)), 0x7FFF);
  EXPECT_EQ(float_to_bf16(float_from_bits(0x00008000u)), 0x0000) << "subnormal tie";
  EXPECT_EQ(float_to_bf16(float_from_bits(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, EncodeMatchesNaiveNearestOnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float({1.0f, 3.3895314e38f, 1e-40f}, [&](float x) {
    ++checked;
    if (float_to_bf16(x) != naive_bf16(x) && ++mismatches <= 5)
      ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                    << float_to_bf16(x) << ", naive 0x" << naive_bf16(x);
  });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

#if defined(METRALE_TEST_HAVE_CUDA_BF16)

TEST(Bf16Cuda, EncodeMatchesCudaBf16OnDenseSweep) {
  std::uint64_t checked = 0, mismatches = 0;
  test::for_each_sweep_float({1.0f, 3.3895314e38f, 1e-40f}, [&](float x) {
    ++checked;
    const __nv_bfloat16_raw cuda = __float2bfloat16_rn(x);
    if (float_to_bf16(x) != cuda.x && ++mismatches <= 5)
      ADD_FAILURE() << "x bits 0x" << std::hex << bits_from_float(x) << ": got 0x"
                    << float_to_bf16(x) << ", cuda_bf16.h 0x" << cuda.x;
  });
  EXPECT_EQ(mismatches, 0u) << "of " << checked;
}

#else

TEST(Bf16Cuda, EncodeMatchesCudaBf16OnDenseSweep) {
  GTEST_SKIP() << "cuda_bf16.h not on the include path";
}

#endif

}  // namespace
}  // namespace metrale::format
