// The prepacked weight layout at the API boundary: metrale_prepack_nvfp4_ex and
// metrale_unprepack_nvfp4_ex on the CPU equal the C++ API's prepack_nvfp4 (into another buffer
// and in place) and refuse bad arguments naming them (null buffers, N, K, a partial overlap, the
// direction, the exec struct) without writing anything; METRALE_WEIGHTS_PREPACKED in
// metrale_nvfp4_grouped_ex's scale_layout and in metrale_moe_layer.scale_layout runs prepacked
// weights to the packed layout's results bit for bit, and any other unknown bit is refused with
// the value; the reference backends (CUTLASS, cuBLASLt) refuse prepacked weights (skipped, saying
// so, in a build without them).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "cpu/moe_fixture.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::fails_with;
using test::ptr_bits;

constexpr Exec kCpu{Backend::cpu};
constexpr int kN = 8, kK = 32, kExperts = 2, kRows = 5;

std::string last_error() {
  return metrale_last_error();
}

metrale_exec c_exec(metrale_backend backend) {
  metrale_exec exec = METRALE_EXEC_INIT;
  exec.backend = backend;
  return exec;
}

std::vector<std::uint8_t> cpp_prepack(const std::vector<std::uint8_t>& src, int n, int k,
                                      PrepackDir dir) {
  std::vector<std::uint8_t> dst(src.size(), 0xCD);
  EXPECT_TRUE(test::succeeds(prepack_nvfp4({src.data(), dst.data(), n, k, dir}, kCpu)));
  return dst;
}

TEST(PrepackCAbi, EqualsTheCppApiAndInPlace) {
  const metrale_exec cpu = c_exec(METRALE_BACKEND_CPU);
  const auto packed = test::random_bytes(3 * 64 / 2, 5);
  std::vector<std::uint8_t> prepacked(packed.size(), 0xCD), back(packed.size(), 0xCD);
  ASSERT_EQ(metrale_prepack_nvfp4_ex(packed.data(), prepacked.data(), 3, 64, &cpu),
            METRALE_STATUS_OK)
      << last_error();
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(prepacked, cpp_prepack(packed, 3, 64, PrepackDir::to_prepacked));
  EXPECT_NE(prepacked, packed);
  ASSERT_EQ(metrale_unprepack_nvfp4_ex(prepacked.data(), back.data(), 3, 64, &cpu),
            METRALE_STATUS_OK)
      << last_error();
  EXPECT_EQ(back, packed);
  ASSERT_EQ(metrale_prepack_nvfp4_ex(back.data(), back.data(), 3, 64, &cpu), METRALE_STATUS_OK);
  EXPECT_EQ(back, prepacked) << "in place";
  ASSERT_EQ(metrale_unprepack_nvfp4_ex(back.data(), back.data(), 3, 64, &cpu), METRALE_STATUS_OK);
  EXPECT_EQ(back, packed) << "in place";
}

TEST(PrepackCAbi, RefusalsNameTheArgumentAndWriteNothing) {
  const metrale_exec cpu = c_exec(METRALE_BACKEND_CPU);
  std::vector<std::uint8_t> src(kN * kK / 2, 0x22), dst(src.size() + 8, 0xCD);
  const auto untouched = dst;
  const auto refused = [&](metrale_status s, const std::string& message) {
    EXPECT_EQ(s, METRALE_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(last_error(), message);
    EXPECT_EQ(dst, untouched) << message;
  };
  refused(metrale_prepack_nvfp4_ex(nullptr, dst.data(), kN, kK, &cpu),
          "metrale_prepack_nvfp4_ex: packed is null, expected a valid pointer");
  refused(metrale_prepack_nvfp4_ex(src.data(), nullptr, kN, kK, &cpu),
          "metrale_prepack_nvfp4_ex: prepacked is null, expected a valid pointer");
  refused(metrale_unprepack_nvfp4_ex(nullptr, dst.data(), kN, kK, &cpu),
          "metrale_unprepack_nvfp4_ex: prepacked is null, expected a valid pointer");
  refused(metrale_unprepack_nvfp4_ex(src.data(), nullptr, kN, kK, &cpu),
          "metrale_unprepack_nvfp4_ex: packed is null, expected a valid pointer");
  refused(metrale_prepack_nvfp4_ex(src.data(), dst.data(), 0, kK, &cpu),
          "metrale_prepack_nvfp4_ex: N = 0, expected N > 0");
  refused(metrale_prepack_nvfp4_ex(src.data(), dst.data(), kN, -16, &cpu),
          "metrale_prepack_nvfp4_ex: K = -16, expected K > 0");
  refused(metrale_unprepack_nvfp4_ex(src.data(), dst.data(), kN, 24, &cpu),
          "metrale_unprepack_nvfp4_ex: K = 24 is not a multiple of 16");
  refused(metrale_prepack_nvfp4_ex(dst.data(), dst.data() + 2, kN, kK, &cpu),
          "metrale_prepack_nvfp4_ex: packed and prepacked overlap (2 bytes apart, 128 bytes "
          "each), expected the same buffer (in place) or disjoint ones");
  metrale_exec zeroed{};
  EXPECT_EQ(metrale_prepack_nvfp4_ex(src.data(), dst.data(), kN, kK, &zeroed),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("metrale_prepack_nvfp4_ex: exec->struct_size = 0", 0), 0u)
      << last_error();
  // Disjoint neighbours are not an overlap: the last byte of one is before the first of the other.
  std::vector<std::uint8_t> both(2 * src.size(), 0x22);
  EXPECT_EQ(metrale_prepack_nvfp4_ex(both.data(), both.data() + src.size(), kN, kK, &cpu),
            METRALE_STATUS_OK)
      << last_error();
}

TEST(PrepackCAbi, BackendsWithoutIt) {
  std::vector<std::uint8_t> src(kN * kK / 2, 0x22), dst(src.size(), 0xCD);
  for (metrale_backend backend : {METRALE_BACKEND_CUTLASS, METRALE_BACKEND_CUBLASLT}) {
    const metrale_exec exec = c_exec(backend);
    const metrale_status s = metrale_prepack_nvfp4_ex(src.data(), dst.data(), kN, kK, &exec);
    if (metrale_backend_built(backend)) {
      EXPECT_EQ(s, METRALE_STATUS_UNSUPPORTED);
      EXPECT_NE(last_error().find("backend does not implement this operation; use the cuda or "
                                  "cpu backend"),
                std::string::npos)
          << last_error();
    } else {
      EXPECT_EQ(s, METRALE_STATUS_NOT_BUILT) << last_error();
    }
    EXPECT_EQ(dst, std::vector<std::uint8_t>(src.size(), 0xCD));
  }
  // A NULL exec is the automatic backend: CUDA, here without a device or not built.
  if (!metrale_backend_built(METRALE_BACKEND_CUDA)) {
    EXPECT_EQ(metrale_prepack_nvfp4_ex(src.data(), dst.data(), kN, kK, nullptr),
              METRALE_STATUS_NOT_BUILT);
    EXPECT_EQ(last_error(), "metrale_prepack_nvfp4_ex: the CUDA backend was not built");
  }
}

TEST(PrepackCpp, ValidationNamesTheFields) {
  std::vector<std::uint8_t> src(kN * kK / 2, 0x22), dst(src.size(), 0xCD);
  EXPECT_TRUE(
      fails_with(prepack_nvfp4({src.data(), dst.data(), kN, kK, static_cast<PrepackDir>(7)}, kCpu),
                 Status::invalid_argument,
                 "prepack_nvfp4: dir = 7, expected 0 (to_prepacked) or 1 (to_packed)"));
  EXPECT_TRUE(fails_with(prepack_nvfp4({nullptr, dst.data(), kN, kK, PrepackDir::to_packed}, kCpu),
                         Status::invalid_argument, "prepack_nvfp4: src is null"));
  EXPECT_TRUE(
      fails_with(prepack_nvfp4({src.data(), src.data() + 1, kN, kK, PrepackDir::to_packed}, kCpu),
                 Status::invalid_argument, "prepack_nvfp4: src and dst overlap"));
}

// Two experts of [8, 32] random codes, their prepacked copies, SFB and [K/16, N] scales (512
// bytes: both layouts fit), five gathered rows.
struct GroupedEx {
  std::vector<std::uint8_t> packed[kExperts], prepacked[kExperts];
  std::vector<std::uint8_t> scale = test::random_scales(512, 3);
  std::vector<std::uint64_t> packed_ptrs, prepacked_ptrs, scale_ptrs;
  std::vector<float> s2 = {0.5f, 2.0f};
  std::vector<std::int32_t> offsets = {0, 2, kRows}, ids = {3, 0, 1, 3, 2};
  std::vector<bf16_bits> a = test::random_bf16(4 * kK, 8, -3, 3);
  metrale_groups groups = METRALE_GROUPS_INIT;

  GroupedEx() {
    for (int e = 0; e < kExperts; ++e) {
      packed[e] = test::random_bytes(kN * kK / 2, 40 + e);
      prepacked[e] = cpp_prepack(packed[e], kN, kK, PrepackDir::to_prepacked);
      packed_ptrs.push_back(ptr_bits(packed[e].data()));
      prepacked_ptrs.push_back(ptr_bits(prepacked[e].data()));
      scale_ptrs.push_back(ptr_bits(scale.data()));
    }
    groups.offsets = offsets.data();
    groups.num_experts = kExperts;
    groups.m_total = kRows;
  }

  metrale_status run(metrale_scale_layout layout, bool prepacked_bytes, metrale_backend backend,
                     std::vector<bf16_bits>& out) {
    out.assign(kRows * kN, 0x7FC1);
    const metrale_expert_weights w = {prepacked_bytes ? prepacked_ptrs.data() : packed_ptrs.data(),
                                      scale_ptrs.data(), s2.data()};
    void* outs[1] = {out.data()};
    const metrale_exec exec = c_exec(backend);
    return metrale_nvfp4_grouped_ex(a.data(), 4, ids.data(), &w, outs, 1, layout, &groups, kN, kK,
                                    &exec);
  }
};

TEST(PrepackCAbi, GroupedExReadsTheFlag) {
  GroupedEx g;
  for (metrale_scale_layout scales : {METRALE_SCALE_K16_BY_N, METRALE_SCALE_SFB}) {
    std::vector<bf16_bits> packed, prepacked, misread;
    ASSERT_EQ(g.run(scales, false, METRALE_BACKEND_CPU, packed), METRALE_STATUS_OK) << last_error();
    ASSERT_EQ(g.run(scales | METRALE_WEIGHTS_PREPACKED, true, METRALE_BACKEND_CPU, prepacked),
              METRALE_STATUS_OK)
        << last_error();
    EXPECT_EQ(prepacked, packed) << "scale layout " << scales;
    ASSERT_EQ(g.run(scales, true, METRALE_BACKEND_CPU, misread), METRALE_STATUS_OK);
    EXPECT_NE(misread, packed) << "prepacked bytes without the flag read as packed";
  }
}

TEST(PrepackCAbi, UnknownScaleLayoutBitsAreRefused) {
  GroupedEx g;
  std::vector<bf16_bits> out;
  for (metrale_scale_layout bad : {0x201, 2, 0x102, -1}) {
    EXPECT_EQ(g.run(bad, false, METRALE_BACKEND_CPU, out), METRALE_STATUS_INVALID_ARGUMENT);
    const std::string value = std::to_string(bad);
    EXPECT_EQ(last_error().rfind("metrale_nvfp4_grouped_ex: scale_layout = " + value + " (0x", 0),
              0u)
        << last_error();
    EXPECT_NE(last_error().find("expected 0 ([K/16, N]) or 1 (SFB), optionally or'ed with "
                                "METRALE_WEIGHTS_PREPACKED (0x100)"),
              std::string::npos)
        << last_error();
    EXPECT_EQ(out, std::vector<bf16_bits>(kRows * kN, 0x7FC1));
  }
  EXPECT_EQ(g.run(0x201, false, METRALE_BACKEND_CPU, out), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("= 513 (0x201)"), std::string::npos) << last_error();
}

metrale_expert_weights c_weights(const ExpertWeights& w, const std::vector<std::uint64_t>& packed) {
  return {packed.data(), w.scale_ptrs, w.scale2_vals};
}

TEST(PrepackCAbi, MoeLayerReadsTheFlag) {
  test::MoeFixture f(8, 2, 5);
  std::vector<std::vector<std::uint8_t>> bytes[3];
  std::vector<std::uint64_t> ptrs[3];
  const test::MoeProjection* proj[3] = {&f.gate, &f.up, &f.down};
  for (int p = 0; p < 3; ++p) {
    for (const auto& w : proj[p]->packed)
      bytes[p].push_back(cpp_prepack(w, proj[p]->n, proj[p]->k, PrepackDir::to_prepacked));
    for (const auto& b : bytes[p]) ptrs[p].push_back(ptr_bits(b.data()));
  }
  std::vector<bf16_bits> want = f.poisoned_out(), got = f.poisoned_out();
  MoeTokens t = f.with_logits();
  t.out = want.data();
  ASSERT_TRUE(test::succeeds(moe_forward(f.layer, t, kCpu)));

  metrale_moe_layer layer = METRALE_MOE_LAYER_INIT;
  layer.num_experts = layer.num_local_experts = 8;
  layer.hidden_size = test::MoeFixture::kHidden;
  layer.intermediate_size = test::MoeFixture::kInter;
  layer.top_k = 2;
  layer.scale_layout = METRALE_SCALE_K16_BY_N | METRALE_WEIGHTS_PREPACKED;
  layer.gate = c_weights(f.layer.gate, ptrs[0]);
  layer.up = c_weights(f.layer.up, ptrs[1]);
  layer.down = c_weights(f.layer.down, ptrs[2]);
  metrale_moe_tokens tokens = METRALE_MOE_TOKENS_INIT;
  tokens.num_tokens = f.tokens;
  tokens.hidden = f.hidden.data();
  tokens.router_logits = f.logits.data();
  tokens.out = got.data();
  const metrale_exec cpu = c_exec(METRALE_BACKEND_CPU);
  ASSERT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_OK) << last_error();
  EXPECT_EQ(got, want);

  layer.scale_layout = METRALE_SCALE_SFB | 0x800;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("metrale_moe_forward: layer->scale_layout = 2049 (0x801), "
                               "expected 0 ([K/16, N]) or 1 (SFB)",
                               0),
            0u)
      << last_error();
}

// The reference arms decode the seeds' layout only: both APIs refuse prepacked weights, naming
// what the caller set, before anything runs (no device needed to see it).
void expect_reference_refuses(metrale_backend c_backend, Backend backend, const char* name) {
  if (!metrale_backend_built(c_backend)) GTEST_SKIP() << "the " << name << " backend was not built";
  GroupedEx g;
  std::vector<bf16_bits> out;
  EXPECT_EQ(g.run(METRALE_SCALE_SFB | METRALE_WEIGHTS_PREPACKED, true, c_backend, out),
            METRALE_STATUS_UNSUPPORTED);
  EXPECT_EQ(last_error(), std::string("metrale_nvfp4_grouped_ex: scale_layout = 257 has "
                                      "METRALE_WEIGHTS_PREPACKED: the ") +
                              name +
                              " reference reads the packed layout only; unprepack the weights "
                              "(metrale_unprepack_nvfp4_ex)");
  EXPECT_EQ(out, std::vector<bf16_bits>(kRows * kN, 0x7FC1));

  const ExpertWeights w = {g.prepacked_ptrs.data(), g.scale_ptrs.data(), g.s2.data()};
  GroupedNvfp4 args{};
  args.a = g.a.data();
  args.a_rows = kRows;
  args.proj[0] = w;
  args.out[0] = out.data();
  args.proj_count = 1;
  args.scale_layout = ScaleLayout::sfb;
  args.groups = {g.offsets.data(), false, kExperts, kRows, 0};
  args.n = kN;
  args.k = kK;
  args.weight_layout = WeightLayout::prepacked;
  EXPECT_TRUE(fails_with(nvfp4_grouped(args, Exec{backend}), Status::unsupported,
                         std::string("nvfp4_grouped_down: weight_layout = 1 (prepacked): the ") +
                             name + " reference reads the packed layout only"));
}

TEST(PrepackReference, CutlassRefusesPrepackedWeights) {
  expect_reference_refuses(METRALE_BACKEND_CUTLASS, Backend::cutlass, "CUTLASS");
  if (!metrale_backend_built(METRALE_BACKEND_CUTLASS)) return;
  // The automatic backend reaches CUTLASS with METRALE_CUTLASS_GEMM=1: the same refusal.
  const test::ScopedEnv env("METRALE_CUTLASS_GEMM", "1");
  GroupedEx g;
  std::vector<bf16_bits> out;
  EXPECT_EQ(g.run(METRALE_SCALE_SFB | METRALE_WEIGHTS_PREPACKED, true, METRALE_BACKEND_AUTO, out),
            METRALE_STATUS_UNSUPPORTED)
      << last_error();
}

TEST(PrepackReference, CublasLtRefusesPrepackedWeights) {
  expect_reference_refuses(METRALE_BACKEND_CUBLASLT, Backend::cublaslt, "cuBLASLt");
}

}  // namespace
}  // namespace metrale
