// Agreements between the CUDA backend's own operations, bit for bit, in exact and realistic mode:
//   - nvfp4_grouped_gate_up on each expert's rows equals nvfp4_gemm_bf16_act_weight_t on those
//     rows with that expert's weights (the seeds define it that way);
//   - nvfp4_grouped_gate_up_fused (gather through sorted_token_ids, SFB scales) equals the
//     per-expert form on the same rows gathered beforehand ([K/16, N] scales).
#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/grouped.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

std::vector<bf16_bits> run_grouped(const check::GroupedHost& h, check::GroupedDevice& d) {
  const Result r = nvfp4_grouped(check::device_args(h, d, false, h.routing.max_rows), kCuda);
  EXPECT_TRUE(r.ok()) << r.message;
  check::device_synchronize("nvfp4_grouped");
  std::vector<bf16_bits> out = d.out[0].download<bf16_bits>();
  if (h.proj_count == 2) {
    const auto up = d.out[1].download<bf16_bits>();
    out.insert(out.end(), up.begin(), up.end());
  }
  EXPECT_EQ(check::check_all_guards(d.all()), "");
  return out;
}

void per_expert_equals_gemm(Mode mode, int n, int k, check::Routing routing, std::uint64_t seed) {
  const check::GroupedHost h =
      check::make_grouped_host(grouped_case(Op::grouped_gate_up, mode, n, k, routing, seed));
  check::GroupedDevice d = check::upload_grouped(h);
  const std::vector<bf16_bits> grouped = run_grouped(h, d);
  const std::size_t plane = static_cast<std::size_t>(h.routing.m_total) * n;
  for (int p = 0; p < 2; ++p) {
    for (int e = 0; e < h.routing.experts; ++e) {
      const int begin = h.routing.offsets[e], rows = h.routing.offsets[e + 1] - begin;
      if (rows == 0) continue;
      check::DeviceBuffer out(static_cast<std::size_t>(rows) * n * sizeof(bf16_bits), "out");
      out.poison_bf16(check::kPoisonBf16);
      const Nvfp4Gemm args{d.a.as<bf16_bits>() + static_cast<std::size_t>(begin) * k,
                           reinterpret_cast<const std::uint8_t*>(d.ptrs.packed[p][e]),
                           reinterpret_cast<const std::uint8_t*>(d.ptrs.scale[p][e]),
                           h.scale2[p][e],
                           ScaleLayout::k16_by_n,
                           out.as<bf16_bits>(),
                           rows,
                           n,
                           k};
      const Result r = nvfp4_gemm_bf16_act_weight_t(args, kCuda);
      ASSERT_TRUE(r.ok()) << r.message;
      check::device_synchronize("nvfp4_gemm");
      const std::vector<bf16_bits> single = out.download<bf16_bits>();
      const std::vector<bf16_bits> slice(
          grouped.begin() + p * plane + std::size_t(begin) * n,
          grouped.begin() + p * plane + std::size_t(begin + rows) * n);
      const check::Comparison cmp = check::compare_bf16_bits(slice, single, n, {}, "expert rows");
      ASSERT_EQ(cmp.mismatches, 0)
          << (p ? "up" : "gate") << " of expert " << e << ": " << cmp.first_detail;
    }
  }
}

TEST(Consistency, PerExpertGateUpEqualsGemm) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Mode mode : {Mode::exact, Mode::realistic}) {
    per_expert_equals_gemm(mode, 65, 96, {37, 8, 2, RoutingKind::skew}, 51);
    per_expert_equals_gemm(mode, 200, 2048, {64, 16, 4, RoutingKind::empty_expert}, 52);
    per_expert_equals_gemm(mode, 64, 64, {70, 4, 2, RoutingKind::one_expert}, 53);
  }
}

void fused_equals_per_expert(Mode mode, int n, int k, check::Routing routing, std::uint64_t seed) {
  const check::GroupedHost fused =
      check::make_grouped_host(grouped_case(Op::grouped_gate_up_fused, mode, n, k, routing, seed));
  // The same rows gathered on the host, the same weights with [K/16, N] scales.
  check::GroupedHost gathered = fused;
  gathered.op = Op::grouped_gate_up;
  gathered.layout = ScaleLayout::k16_by_n;
  gathered.gather = false;
  gathered.a_rows = fused.routing.m_total;
  gathered.a.clear();
  for (int token : fused.routing.sorted_token_ids)
    gathered.a.insert(gathered.a.end(), fused.a.begin() + std::size_t(token) * k,
                      fused.a.begin() + std::size_t(token + 1) * k);
  check::GroupedDevice d_fused = check::upload_grouped(fused);
  check::GroupedDevice d_gathered = check::upload_grouped(gathered);
  const auto a = run_grouped(fused, d_fused);
  const auto b = run_grouped(gathered, d_gathered);
  const check::Comparison cmp = check::compare_bf16_bits(a, b, n, {}, "gate then up");
  EXPECT_EQ(cmp.mismatches, 0) << cmp.first_detail;
}

TEST(Consistency, FusedEqualsPerExpert) {
  METRALE_SKIP_WITHOUT_GPU();
  for (Mode mode : {Mode::exact, Mode::realistic}) {
    fused_equals_per_expert(mode, 65, 96, {37, 8, 2, RoutingKind::skew}, 61);
    fused_equals_per_expert(mode, 200, 2048, {64, 16, 4, RoutingKind::empty_expert}, 62);
    fused_equals_per_expert(mode, 129, 64, {100, 256, 8, RoutingKind::uniform}, 63);
  }
}

#else
TEST(Consistency, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
