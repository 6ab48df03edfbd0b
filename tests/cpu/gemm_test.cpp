// Tests of cpu::bf16_gemm and cpu::nvfp4_gemm: tiny products worked out by hand (bf16 rounding
// ties, fp64 accumulation), the NVFP4 GEMM against dequantize-then-dense (bit for bit, scale_2 = 1
// and a power of two), against a naive triple loop on realistic values, and the SFB scale layout
// against the [K/16, N] one.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.hpp"
#include "cpu/cpu_test_util.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu {
namespace {

std::vector<bf16_bits> to_bf16(const std::vector<float>& values) {
  std::vector<bf16_bits> out;
  for (float v : values) out.push_back(format::float_to_bf16(v));
  return out;
}

std::vector<bf16_bits> dense(const std::vector<bf16_bits>& act,
                             const std::vector<bf16_bits>& weight, int m, int n, int k) {
  std::vector<bf16_bits> out(static_cast<std::size_t>(m) * n, 0xFFFF);
  bf16_gemm(DenseGemm{act.data(), weight.data(), out.data(), m, n, k});
  return out;
}

std::vector<bf16_bits> nvfp4(const std::vector<bf16_bits>& act,
                             const std::vector<std::uint8_t>& packed,
                             const std::vector<std::uint8_t>& scale, float scale_2,
                             ScaleLayout layout, int m, int n, int k) {
  std::vector<bf16_bits> out(static_cast<std::size_t>(m) * n, 0xFFFF);
  nvfp4_gemm(
      Nvfp4Gemm{act.data(), packed.data(), scale.data(), scale_2, layout, out.data(), m, n, k});
  return out;
}

TEST(CpuGemm, DenseHandComputed) {
  const auto act = to_bf16({1, 2, 3, 4});            // [2, 2]
  const auto weight = to_bf16({5, 6, 7, 8, 9, 10});  // [3, 2]
  EXPECT_EQ(dense(act, weight, 2, 3, 2), to_bf16({17, 23, 29, 39, 53, 67}));
}

TEST(CpuGemm, DenseRoundsOnceToNearestEven) {
  const auto weight = to_bf16({1, 1});
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: tie to even, 1.0 (0x3F80).
  EXPECT_EQ(dense(to_bf16({1, 1.0f / 256}), weight, 1, 1, 2)[0], 0x3F80);
  // 1 + 3·2^-9 is above the half: 1.0078125 (0x3F81).
  EXPECT_EQ(dense(to_bf16({1, 3.0f / 512}), weight, 1, 1, 2)[0], 0x3F81);
  // 1.0078125 + 2^-8 is halfway between 0x3F81 and 0x3F82: tie to even, 0x3F82.
  EXPECT_EQ(dense(to_bf16({1.0078125f, 1.0f / 256}), weight, 1, 1, 2)[0], 0x3F82);
}

TEST(CpuGemm, DenseAccumulatesInDouble) {
  // fp32 accumulation in k order loses the 1 (2^24 + 1 = 2^24); fp64 keeps it.
  const auto act = to_bf16({16777216.0f, 1.0f, -16777216.0f});
  EXPECT_EQ(dense(act, to_bf16({1, 1, 1}), 1, 1, 3)[0], 0x3F80);
}

TEST(CpuGemm, DenseZeroRowsWritesNothing) {
  std::vector<bf16_bits> out(4, 0x1234);
  const auto act = to_bf16({1, 2}), weight = to_bf16({1, 2});
  bf16_gemm(DenseGemm{act.data(), weight.data(), out.data(), 0, 1, 2});
  EXPECT_EQ(out, std::vector<bf16_bits>(4, 0x1234));
}

TEST(CpuGemm, Nvfp4HandComputed) {
  // N = 2, K = 16, one row of ones. Row 0: codes 0..7 then 0..7 (sum 2·18 = 36) with scale 2.0
  // (0x40); row 1: all 0xF (-6) with scale 0.5 (0x30). scale_2 = 0.25.
  const int n = 2, k = 16;
  std::vector<std::uint8_t> packed = {0x10, 0x32, 0x54, 0x76, 0x10, 0x32, 0x54, 0x76,
                                      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  std::vector<std::uint8_t> scale = {0x40, 0x30};  // [K/16 = 1, N = 2]
  const auto act = to_bf16(std::vector<float>(16, 1.0f));
  // Row 0: 36 · 2 · 0.25 = 18; row 1: -96 · 0.5 · 0.25 = -12.
  EXPECT_EQ(nvfp4(act, packed, scale, 0.25f, ScaleLayout::k16_by_n, 1, n, k), to_bf16({18, -12}));
}

TEST(CpuGemm, Nvfp4EqualsDequantizeThenDense) {
  for (int m : {1, 3, 17}) {
    const int n = 33, k = 64;
    const auto act = test::random_bf16(static_cast<std::size_t>(m) * k, 1 + m, -8, 8);
    const auto packed = test::random_bytes(n * k / 2, 2);
    const auto scale = test::random_scales(n * k / 16, 3);
    const auto weight = test::naive_dequant_bf16(packed, scale, n, k);
    const auto want = dense(act, weight, m, n, k);
    EXPECT_EQ(nvfp4(act, packed, scale, 1.0f, ScaleLayout::k16_by_n, m, n, k), want) << "m " << m;
    // A power-of-two scale_2 scales every (exact) output exactly.
    std::vector<bf16_bits> quarter;
    for (bf16_bits v : want)
      quarter.push_back(format::float_to_bf16(format::bf16_to_float(v) * 0.25f));
    EXPECT_EQ(nvfp4(act, packed, scale, 0.25f, ScaleLayout::k16_by_n, m, n, k), quarter);
  }
}

TEST(CpuGemm, Nvfp4MatchesNaiveLoopOnRealisticValues) {
  const int m = 5, n = 19, k = 256;
  const float scale_2 = 0.0123f;
  const auto act = test::random_normal_bf16(static_cast<std::size_t>(m) * k, 4, 1.0f);
  const auto packed = test::random_bytes(n * k / 2, 5);
  const auto scale = test::random_scales(n * k / 16, 6, 0x20, 0x50);
  const auto got = nvfp4(act, packed, scale, scale_2, ScaleLayout::k16_by_n, m, n, k);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < n; ++c) {
      double sum = 0.0;
      for (int i = 0; i < k; ++i) {
        const std::uint8_t byte = packed[c * (k / 2) + i / 2];
        const float w = format::e2m1_to_float(i % 2 ? byte >> 4 : byte & 0xF) *
                        format::e4m3_to_float(scale[(i / 16) * n + c]);
        sum += static_cast<double>(format::bf16_to_float(act[r * k + i])) * w;
      }
      const bf16_bits want = format::float_to_bf16(static_cast<float>(sum) * scale_2);
      ASSERT_EQ(got[r * n + c], want) << "row " << r << " col " << c;
    }
}

TEST(CpuGemm, Nvfp4SfbLayoutEqualsK16ByN) {
  for (int n : {1, 127, 129}) {
    for (int k : {16, 80, 128}) {
      const int m = 3;
      const auto act = test::random_bf16(static_cast<std::size_t>(m) * k, 7, -4, 4);
      const auto packed = test::random_bytes(static_cast<std::size_t>(n) * k / 2, 8);
      const auto scale = test::random_scales(static_cast<std::size_t>(n) * k / 16, 9);
      std::vector<std::uint8_t> sfb(format::sfb_bytes(n, k), 0);
      for (int row = 0; row < n; ++row)
        for (int b = 0; b < k / 16; ++b)
          sfb[format::sfb_offset(row, b, k)] = scale[format::k16_by_n_offset(row, b, n)];
      EXPECT_EQ(nvfp4(act, packed, sfb, 0.5f, ScaleLayout::sfb, m, n, k),
                nvfp4(act, packed, scale, 0.5f, ScaleLayout::k16_by_n, m, n, k))
          << "n " << n << " k " << k;
    }
  }
}

}  // namespace
}  // namespace metrale::cpu
