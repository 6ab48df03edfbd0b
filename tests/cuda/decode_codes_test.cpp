// The decode family's bit moves on every code and every block scale, against the CPU oracle bit
// for bit: weights made of all 16 e2m1 codes (−0 among them) under block scales that run through
// every non-NaN e4m3 byte (zero, the subnormals 0x01..0x07, the largest 0x7E = 448, negative
// scales). Token m's activations are small integers in K block m alone, so each output sums 16
// products under one scale: exact in fp32 whatever the order, and the output must match.
// Both scale layouts and both families, so the tiled family's lookup-table decode is held to the
// same bits.
#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#include "check/compare.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

constexpr int kM = 32, kN = 128, kK = 512;  // 128 x 32 blocks: every scale byte 16 times; token m reads block m

// Scale bytes: every e4m3 byte but the NaNs (0x7F, 0xFF), cycled over the blocks.
std::vector<std::uint8_t> all_scales(int blocks) {
  std::vector<std::uint8_t> s(static_cast<std::size_t>(blocks));
  int byte = 0;
  for (auto& v : s) {
    if ((byte & 0x7F) == 0x7F) byte = (byte + 1) & 0xFF;
    v = static_cast<std::uint8_t>(byte);
    byte = (byte + 1) & 0xFF;
  }
  return s;
}

std::vector<bf16_bits> run(Backend backend, const std::vector<bf16_bits>& act,
                           const std::vector<std::uint8_t>& packed,
                           const std::vector<std::uint8_t>& scale, ScaleLayout layout) {
  std::vector<bf16_bits> out(std::size_t(kM) * kN, 0x7FC0);
  if (backend == Backend::cpu) {
    const Nvfp4Gemm args{act.data(), packed.data(), scale.data(), 0.75f, layout, out.data(), kM, kN, kK};
    const Result r = nvfp4_gemm_bf16_act_weight_t(args, Exec{Backend::cpu, nullptr, 0, nullptr});
    EXPECT_TRUE(r.ok()) << r.message;
    return out;
  }
  check::DeviceBuffer d_act = check::upload_new(act, "act");
  check::DeviceBuffer d_packed = check::upload_new(packed, "packed");
  check::DeviceBuffer d_scale = check::upload_new(scale, "scale");
  check::DeviceBuffer d_out = check::upload_new(out, "out");
  const Nvfp4Gemm args{d_act.as<bf16_bits>(), d_packed.as<std::uint8_t>(), d_scale.as<std::uint8_t>(),
                       0.75f, layout, d_out.as<bf16_bits>(), kM, kN, kK};
  const Result r = nvfp4_gemm_bf16_act_weight_t(args, kCuda);
  EXPECT_TRUE(r.ok()) << r.message;
  check::device_synchronize("nvfp4_gemm");
  return d_out.download<bf16_bits>();
}

TEST(DecodeCodes, EveryCodeAndScaleByteBitForBit) {
  METRALE_SKIP_WITHOUT_GPU();
  std::vector<bf16_bits> act(std::size_t(kM) * kK);
  for (int m = 0; m < kM; ++m)
    for (int k = 16 * m; k < 16 * m + 16; ++k) {
      const float v = static_cast<float>((m * 5 + k * 7) % 9 - 4);  // -4 .. 4
      act[std::size_t(m) * kK + k] = static_cast<bf16_bits>(__builtin_bit_cast(std::uint32_t, v) >> 16);
    }
  std::vector<std::uint8_t> packed(std::size_t(kN) * kK / 2);
  for (std::size_t i = 0; i < packed.size(); ++i)  // both nibbles walk all 16 codes
    packed[i] = static_cast<std::uint8_t>((i % 16) | (((i / 16 + i) % 16) << 4));
  const std::vector<std::uint8_t> k16_by_n = all_scales(kN * kK / 16);
  // The same scales in the SFB layout: (n, b) of [K/16, N] at sfb_offset(n, b).
  std::vector<std::uint8_t> sfb(std::size_t(128) * ((kK / 16 + 3) / 4 * 4), 0);
  for (int n = 0; n < kN; ++n)
    for (int b = 0; b < kK / 16; ++b) {
      const std::size_t tile = std::size_t(b / 4) * 512, row = std::size_t(n % 32) * 16 + (n / 32 % 4) * 4;
      sfb[tile + row + b % 4] = k16_by_n[std::size_t(b) * kN + n];
    }
  for (const char* kernel : {"sm90-decode", "sm90-tiled"}) {
    setenv("METRALE_CUDA_KERNEL", kernel, 1);
    for (ScaleLayout layout : {ScaleLayout::k16_by_n, ScaleLayout::sfb}) {
      const auto& scale = layout == ScaleLayout::sfb ? sfb : k16_by_n;
      const auto want = run(Backend::cpu, act, packed, scale, layout);
      const auto got = run(Backend::cuda, act, packed, scale, layout);
      const check::Comparison cmp = check::compare_bf16_bits(got, want, kN, {}, "out");
      EXPECT_EQ(cmp.mismatches, 0) << kernel << (layout == ScaleLayout::sfb ? " SFB: " : " [K/16, N]: ")
                                   << cmp.first_detail;
    }
    unsetenv("METRALE_CUDA_KERNEL");
  }
}

#else
TEST(DecodeCodes, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
