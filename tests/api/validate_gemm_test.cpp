// Validation of the single-matrix operations through the public C++ API (CPU backend): every
// refusal names the function, the argument, the value and the expectation, and nothing is
// touched (outputs keep their sentinel).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"

namespace metrale {
namespace {

using test::fails_with;
using test::succeeds;

constexpr Exec kCpu{Backend::cpu};
constexpr bf16_bits kSentinel = 0x7E7E;

struct DenseFixture {
  std::vector<bf16_bits> act = std::vector<bf16_bits>(4 * 64, 0x3F80);
  std::vector<bf16_bits> weight = std::vector<bf16_bits>(8 * 64, 0x3F80);
  std::vector<bf16_bits> out = std::vector<bf16_bits>(4 * 8 + 1, kSentinel);
  DenseGemm args() { return {act.data(), weight.data(), out.data(), 4, 8, 64}; }
  bool untouched() const {
    for (bf16_bits v : out)
      if (v != kSentinel) return false;
    return true;
  }
};

TEST(ValidateDense, Shapes) {
  DenseFixture f;
  auto a = f.args();
  a.m = -1;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
                         "bf16_gemm_act_weight_t: M = -1, expected M >= 0"));
  a = f.args();
  a.n = 0;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
                         "bf16_gemm_act_weight_t: N = 0, expected N > 0"));
  a = f.args();
  a.k = -16;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
                         "bf16_gemm_act_weight_t: K = -16, expected K > 0"));
  EXPECT_TRUE(f.untouched());
  EXPECT_TRUE(succeeds(bf16_gemm_act_weight_t(f.args(), kCpu)));
  EXPECT_FALSE(f.untouched()) << "a valid call must write the output";
}

TEST(ValidateDense, NullPointersOnlyWhenThereIsWork) {
  DenseFixture f;
  for (int which = 0; which < 3; ++which) {
    auto a = f.args();
    const char* name = which == 0 ? "act" : which == 1 ? "weight" : "out";
    if (which == 0) a.act = nullptr;
    if (which == 1) a.weight = nullptr;
    if (which == 2) a.out = nullptr;
    EXPECT_TRUE(fails_with(
        bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
        std::string("bf16_gemm_act_weight_t: ") + name + " is null, expected a valid pointer"));
  }
  // M = 0 reads and writes nothing: null buffers are fine.
  EXPECT_TRUE(succeeds(bf16_gemm_act_weight_t({nullptr, nullptr, nullptr, 0, 8, 64}, kCpu)));
}

TEST(ValidateDense, Alignment) {
  DenseFixture f;
  auto a = f.args();
  a.out = reinterpret_cast<bf16_bits*>(reinterpret_cast<char*>(f.out.data()) + 1);
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
                         "is not 2-byte aligned, expected bf16 data"));
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(a, kCpu), Status::invalid_argument,
                         "bf16_gemm_act_weight_t: out = 0x"));
  EXPECT_TRUE(f.untouched());
}

struct Nvfp4Fixture {
  std::vector<bf16_bits> act = std::vector<bf16_bits>(2 * 64, 0x3F80);
  std::vector<std::uint8_t> packed = std::vector<std::uint8_t>(8 * 32, 0x22);
  std::vector<std::uint8_t> scale = std::vector<std::uint8_t>(4 * 8, 0x38);
  std::vector<bf16_bits> out = std::vector<bf16_bits>(2 * 8, kSentinel);
  Nvfp4Gemm args() {
    return {act.data(), packed.data(), scale.data(), 1.0f, ScaleLayout::k16_by_n, out.data(), 2, 8,
            64};
  }
};

TEST(ValidateNvfp4Gemm, KMustBeAMultipleOf16) {
  Nvfp4Fixture f;
  auto a = f.args();
  a.k = 3000;
  EXPECT_TRUE(fails_with(nvfp4_gemm_bf16_act_weight_t(a, kCpu), Status::invalid_argument,
                         "nvfp4_gemm_bf16_act_weight_t: K = 3000 is not a multiple of 16"));
}

TEST(ValidateNvfp4Gemm, Scale2MustBeFiniteAndPositive) {
  Nvfp4Fixture f;
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(), 0.0f, -1.0f};
  const char* text[] = {
      "weight_scale_2 = nan is not finite and > 0", "weight_scale_2 = inf is not finite and > 0",
      "weight_scale_2 = 0 is not finite and > 0", "weight_scale_2 = -1 is not finite and > 0"};
  for (int i = 0; i < 4; ++i) {
    auto a = f.args();
    a.scale_2 = bad[i];
    EXPECT_TRUE(
        fails_with(nvfp4_gemm_bf16_act_weight_t(a, kCpu), Status::invalid_argument, text[i]));
  }
  for (bf16_bits v : f.out) EXPECT_EQ(v, kSentinel);
  EXPECT_TRUE(succeeds(nvfp4_gemm_bf16_act_weight_t(f.args(), kCpu)));
}

TEST(ValidateNvfp4Gemm, NullsLayoutAndBackend) {
  Nvfp4Fixture f;
  auto a = f.args();
  a.packed = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_gemm_bf16_act_weight_t(a, kCpu), Status::invalid_argument,
                         "nvfp4_gemm_bf16_act_weight_t: weight_packed_t is null"));
  a = f.args();
  a.scale = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_gemm_bf16_act_weight_t(a, kCpu), Status::invalid_argument,
                         "weight_scale_t is null"));
  a = f.args();
  a.scale_layout = static_cast<ScaleLayout>(7);
  EXPECT_TRUE(fails_with(nvfp4_gemm_bf16_act_weight_t(a, kCpu), Status::invalid_argument,
                         "scale_layout = 7, expected 0 ([K/16, N]) or 1 (SFB)"));
  EXPECT_TRUE(fails_with(nvfp4_gemm_bf16_act_weight_t(f.args(), Exec{static_cast<Backend>(9)}),
                         Status::invalid_argument, "backend = 9, expected 0 (auto)"));
}

TEST(ValidatePack, ShapesPointersAndScale2Out) {
  std::vector<bf16_bits> w(8 * 64, 0x3F80);
  std::vector<std::uint8_t> packed(8 * 32), scale(4 * 8);
  alignas(8) float s2[2] = {0, 0};
  PackNvfp4 a{w.data(), packed.data(), scale.data(), nullptr, 8, 48};
  a.k = 40;
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(a, kCpu), Status::invalid_argument,
                         "pack_bf16_weight_to_nvfp4_t: K = 40 is not a multiple of 16"));
  a.k = 64;
  a.n = 0;
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(a, kCpu), Status::invalid_argument,
                         "pack_bf16_weight_to_nvfp4_t: N = 0, expected N > 0"));
  a.n = 8;
  a.scale = nullptr;
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(a, kCpu), Status::invalid_argument,
                         "pack_bf16_weight_to_nvfp4_t: scale_t is null"));
  a.scale = scale.data();
  a.scale_2_out = reinterpret_cast<float*>(reinterpret_cast<char*>(s2) + 2);
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(a, kCpu), Status::invalid_argument,
                         "is not 4-byte aligned, expected fp32 data"));
  a.scale_2_out = s2;
  EXPECT_TRUE(succeeds(pack_bf16_weight_to_nvfp4_t(a, kCpu)));
  EXPECT_EQ(s2[0], 1.0f / 2688.0f) << "amax 1 gives scale_2 = 1/2688";
}

TEST(ValidateSwizzle, ShapesAndPointers) {
  std::vector<std::uint8_t> in(4 * 8, 0x38), out(128 * 4, 0xAA);
  SwizzleScales a{in.data(), out.data(), 8, 24, true};
  EXPECT_TRUE(fails_with(pack_weight_sfb(a, kCpu), Status::invalid_argument,
                         "pack_weight_sfb: K = 24 is not a multiple of 16"));
  a.k = 64;
  a.scale_out = nullptr;
  EXPECT_TRUE(fails_with(pack_weight_sfb(a, kCpu), Status::invalid_argument,
                         "pack_weight_sfb: scale_out is null"));
  a.scale_out = out.data();
  EXPECT_TRUE(succeeds(pack_weight_sfb(a, kCpu)));
}

TEST(ValidateTranspose, DirectionAndNames) {
  std::vector<std::uint8_t> src(8 * 32), dst(8 * 32);
  TransposePacked a{src.data(), nullptr, 8, 64, TransposeDir::k_to_n};
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(a, kCpu), Status::invalid_argument,
                         "transpose_nvfp4_packed_kton: dst_packed is null"));
  a.dir = TransposeDir::n_to_k;
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(a, kCpu), Status::invalid_argument,
                         "transpose_nvfp4_packed_ntok: dst_packed_t is null"));
  a.dst = dst.data();
  a.dir = static_cast<TransposeDir>(5);
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(a, kCpu), Status::invalid_argument,
                         "dir = 5, expected 0 (k_to_n) or 1 (n_to_k)"));
  a.dir = TransposeDir::k_to_n;
  a.k = 8;
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(a, kCpu), Status::invalid_argument,
                         "K = 8 is not a multiple of 16"));
}

// The quantizer, the swizzle and the transposes read one buffer while they write another:
// buffers that share a byte are refused, naming both, before anything is written (the swizzle
// zeroes its output first, so in place it once returned zeros with status OK); neighbours that
// only touch pass.
TEST(ValidateOverlap, ReadAndWrittenBuffersMustBeDisjoint) {
  std::vector<std::uint8_t> bytes(4096, 0x5A);
  std::uint8_t* at = bytes.data();
  // Swizzle [K/16 = 4, N = 8] (32 bytes in) into SFB (128 rows x 4: 512 bytes out).
  SwizzleScales swizzle{at, at + 16, 8, 64, true};
  EXPECT_TRUE(fails_with(pack_weight_sfb(swizzle, kCpu), Status::invalid_argument,
                         "pack_weight_sfb: scale_in (32 bytes at "));
  EXPECT_TRUE(fails_with(pack_weight_sfb(swizzle, kCpu), Status::invalid_argument,
                         "overlap, expected disjoint buffers"));
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(4096, 0x5A));
  swizzle.scale_out = at + 32;
  EXPECT_TRUE(succeeds(pack_weight_sfb(swizzle, kCpu)));
  // Transpose 8 x 64 codes (256 bytes each way), in place and a byte short of disjoint.
  std::fill(bytes.begin(), bytes.end(), 0x5A);
  TransposePacked transpose{at, at, 8, 64, TransposeDir::k_to_n};
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(transpose, kCpu), Status::invalid_argument,
                         "src_packed_t (256 bytes at "));
  transpose.dst = at + 255;
  EXPECT_TRUE(fails_with(transpose_nvfp4_packed(transpose, kCpu), Status::invalid_argument,
                         "overlap, expected disjoint buffers"));
  EXPECT_EQ(bytes, std::vector<std::uint8_t>(4096, 0x5A));
  transpose.dst = at + 256;
  EXPECT_TRUE(succeeds(transpose_nvfp4_packed(transpose, kCpu)));
  // Quantize 8 x 64 weights (1024 bytes) into codes (256) and scales (32) that overlap it, or
  // each other.
  std::vector<bf16_bits> weight(8 * 64, 0x3F80);
  std::vector<std::uint8_t> out(512, 0x5A);
  PackNvfp4 pack{weight.data(),
                 reinterpret_cast<std::uint8_t*>(weight.data()) + 1000,
                 out.data(),
                 nullptr,
                 8,
                 64};
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(pack, kCpu), Status::invalid_argument,
                         "pack_bf16_weight_to_nvfp4_t: weight_bf16 (1024 bytes at "));
  pack.packed = out.data() + 16;
  EXPECT_TRUE(fails_with(pack_bf16_weight_to_nvfp4_t(pack, kCpu), Status::invalid_argument,
                         "packed_t (256 bytes at "));
  EXPECT_EQ(out, std::vector<std::uint8_t>(512, 0x5A));
  EXPECT_EQ(weight, std::vector<bf16_bits>(8 * 64, 0x3F80));
  pack.packed = out.data() + 32;
  EXPECT_TRUE(succeeds(pack_bf16_weight_to_nvfp4_t(pack, kCpu)));
}

}  // namespace
}  // namespace metrale
