// Tests of cpu::swizzle_scales (pack_weight_sfb) and cpu::transpose_packed: the swizzled buffer is
// exactly the layout formula's placement of each source scale, from both source layouts, with
// every padding byte zero even when the output held garbage; the packed transpose moves whole
// bytes to (j, n) and its inverse restores the input.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.hpp"
#include "cpu/cpu_test_util.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu {
namespace {

TEST(CpuSwizzle, MatchesLayoutFormulaWithZeroPadding) {
  for (int n : {1, 127, 128, 129, 300}) {
    for (int k : {16, 48, 64, 80, 2880}) {
      const std::size_t cols = static_cast<std::size_t>(k) / 16;
      // Nonzero source bytes, so that a zero in the output can only be padding.
      auto scale = test::random_scales(static_cast<std::size_t>(n) * cols, 21, 1, 0x7E);
      for (bool src_n_major : {true, false}) {
        std::vector<std::uint8_t> want(format::sfb_bytes(n, k), 0);
        for (int row = 0; row < n; ++row)
          for (std::size_t b = 0; b < cols; ++b) {
            // [K/16, N] when src_n_major, else [N, K/16].
            const std::size_t from = src_n_major ? b * n + row : row * cols + b;
            want[format::sfb_offset(row, b, k)] = scale[from];
          }
        std::vector<std::uint8_t> got(format::sfb_bytes(n, k), 0xCD);
        swizzle_scales(SwizzleScales{scale.data(), got.data(), n, k, src_n_major});
        ASSERT_EQ(got, want) << "n " << n << " k " << k << " src_n_major " << src_n_major;
        std::size_t zeros = 0;
        for (std::uint8_t byte : got) zeros += byte == 0;
        EXPECT_EQ(zeros, got.size() - static_cast<std::size_t>(n) * cols) << "padding is zero";
      }
    }
  }
}

TEST(CpuTranspose, KToNAndBack) {
  for (int n : {1, 3, 127, 300}) {
    for (int k : {16, 48, 2880}) {
      const std::size_t half_k = static_cast<std::size_t>(k) / 2;
      const auto src = test::random_bytes(static_cast<std::size_t>(n) * half_k, 31 + n);
      std::vector<std::uint8_t> kn(src.size(), 0xCD), back(src.size(), 0xCD);
      transpose_packed(TransposePacked{src.data(), kn.data(), n, k, TransposeDir::k_to_n});
      for (int row = 0; row < n; ++row)
        for (std::size_t j = 0; j < half_k; ++j)
          ASSERT_EQ(kn[j * n + row], src[row * half_k + j]) << "n " << row << " j " << j;
      transpose_packed(TransposePacked{kn.data(), back.data(), n, k, TransposeDir::n_to_k});
      EXPECT_EQ(back, src) << "n " << n << " k " << k;
    }
  }
}

}  // namespace
}  // namespace metrale::cpu
