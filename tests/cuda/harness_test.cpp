// Self-tests of the check harness (tools/check) that the GPU tests stand on. Most run on the host
// and so in every CI run: the routing's invariants, the oracle's row sample equal to the full
// oracle, the exact-mode premise (grid weights survive packing), the comparisons catching what
// they must, and the no-device report. One needs a GPU: the guard bands catch overruns.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "check/grouped.hpp"
#include "check/inputs.hpp"
#include "check/routing.hpp"
#include "check/runners.hpp"
#include "check/weights.hpp"
#include "cuda_test_support.hpp"
#include "format/bf16.hpp"
#include "format/nvfp4_recipe.hpp"

namespace metrale::cuda_test {
namespace {

void expect_valid_routing(const check::RoutingPlan& plan, bool distinct_experts) {
  ASSERT_EQ(plan.offsets.size(), static_cast<std::size_t>(plan.experts) + 1);
  EXPECT_EQ(plan.offsets.front(), 0);
  EXPECT_EQ(plan.offsets.back(), plan.m_total);
  EXPECT_EQ(plan.m_total, plan.tokens * plan.top_k);
  std::vector<int> per_token(static_cast<std::size_t>(plan.tokens), 0);
  std::vector<std::set<int>> experts_of_token(static_cast<std::size_t>(plan.tokens));
  for (int e = 0; e < plan.experts; ++e) {
    ASSERT_LE(plan.offsets[e], plan.offsets[e + 1]);
    EXPECT_LE(plan.offsets[e + 1] - plan.offsets[e], plan.max_rows);
    for (int row = plan.offsets[e]; row < plan.offsets[e + 1]; ++row) {
      const int token = plan.sorted_token_ids[row];
      ASSERT_GE(token, 0);
      ASSERT_LT(token, plan.tokens);
      EXPECT_EQ(plan.expert_of_row[row], e);
      if (row > plan.offsets[e]) {
        EXPECT_LE(plan.sorted_token_ids[row - 1], token);  // token order within an expert
      }
      ++per_token[token];
      experts_of_token[token].insert(e);
    }
  }
  for (int t = 0; t < plan.tokens; ++t) {
    EXPECT_EQ(per_token[t], plan.top_k) << "token " << t;
    if (distinct_experts) {
      EXPECT_EQ(experts_of_token[t].size(), std::size_t(plan.top_k));
    }
  }
}

TEST(HarnessSelfTest, RoutingInvariants) {
  for (RoutingKind kind : {RoutingKind::uniform, RoutingKind::skew, RoutingKind::empty_expert}) {
    const auto plan = check::make_routing({97, 16, 4, kind}, 5);
    expect_valid_routing(plan, true);
    if (kind == RoutingKind::empty_expert) {
      EXPECT_EQ(plan.offsets[1] - plan.offsets[0], 0);
      EXPECT_EQ(plan.offsets[9] - plan.offsets[8], 0);
    }
  }
  const auto one = check::make_routing({31, 8, 2, RoutingKind::one_expert}, 6);
  expect_valid_routing(one, false);
  EXPECT_EQ(one.max_rows, 62);
  // The skew is real: the hottest expert takes far more than an even share.
  const auto skew = check::make_routing({512, 64, 4, RoutingKind::skew}, 7);
  EXPECT_GT(skew.max_rows, 4 * 512 * 4 / 64);
  EXPECT_THROW(check::make_routing({4, 2, 3, RoutingKind::uniform}, 1), check::HarnessError);
  // Same seed, same routing.
  EXPECT_EQ(check::make_routing({50, 8, 2, RoutingKind::uniform}, 9).sorted_token_ids,
            check::make_routing({50, 8, 2, RoutingKind::uniform}, 9).sorted_token_ids);
}

TEST(HarnessSelfTest, RowSample) {
  const auto all = check::detail::choose_rows(100, 10, -1, 1);
  EXPECT_EQ(all.size(), 100u);
  const auto sample = check::detail::choose_rows(100000, std::int64_t{1} << 26, -1, 1);
  ASSERT_EQ(sample.size(), std::size_t(check::kOracleMacBudget >> 26));
  EXPECT_EQ(sample.front(), 0);
  EXPECT_EQ(sample.back(), 99999);
  EXPECT_TRUE(std::is_sorted(sample.begin(), sample.end()));
  EXPECT_EQ(std::set<std::int64_t>(sample.begin(), sample.end()).size(), sample.size());
  EXPECT_EQ(check::detail::choose_rows(100000, 1 << 26, 0, 1).size(), 100000u);
  EXPECT_EQ(check::detail::choose_rows(1000, 1, 37, 1).size(), 37u);
}

// The oracle on a sample of group rows (its own offsets, gathered rows or token ids) gives the
// rows of the plain CPU call on the whole routing: what lets the big presets compare a sample.
TEST(HarnessSelfTest, SampledOracleEqualsFullCall) {
  for (Op op : {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down}) {
    check::Case c = grouped_case(op, Mode::realistic, 24, 64, {40, 8, 3, RoutingKind::skew}, 11);
    const check::GroupedHost h = check::make_grouped_host(c);
    // The whole call, built by hand from the routing: no sampling code involved.
    check::ExpertPointers ptrs;
    for (int p = 0; p < h.proj_count; ++p) {
      for (int member : h.pool_of_expert) {
        const check::PackedWeight& w = h.pool[p][member];
        ptrs.packed[p].push_back(reinterpret_cast<std::uintptr_t>(w.packed.data()));
        ptrs.scale[p].push_back(reinterpret_cast<std::uintptr_t>(w.scales(h.layout)));
      }
    }
    std::array<std::vector<bf16_bits>, 2> full;
    for (auto& out : full) out.assign(std::size_t(h.routing.m_total) * h.n, 0);
    const ExpertGroups groups{h.routing.offsets.data(), false, h.routing.experts, h.routing.m_total,
                              0};
    const GroupedNvfp4 args = check::grouped_args(
        h, ptrs, h.a.data(), h.a_rows, h.gather ? h.routing.sorted_token_ids.data() : nullptr,
        groups, {full[0].data(), full[1].data()});
    ASSERT_TRUE(nvfp4_grouped(args, Exec{Backend::cpu, nullptr, 0, nullptr}).ok());
    const auto rows = check::detail::choose_rows(h.routing.m_total, 0, 17, 1);
    const auto part = check::grouped_oracle(h, rows, false);
    for (int p = 0; p < h.proj_count; ++p) {
      EXPECT_EQ(check::detail::gather_rows(full[p], h.n, rows), part[p]) << check::op_name(op);
    }
  }
}

// Exact mode's premise: grid weights packed with scale_2 = 1 decode to themselves, so the
// GEMMs see exactly the values generated and every fp32 sum of them is exact.
TEST(HarnessSelfTest, GridWeightsSurvivePacking) {
  const int n = 24, k = 96;
  const auto values = check::grid_weight_bf16(n, k, 3);
  const check::PackedWeight w = check::pack_weight_cpu(values, n, k, false, true);
  for (int row = 0; row < n; ++row) {
    for (int i = 0; i < k; ++i) {
      const std::uint8_t byte = w.packed[row * (k / 2) + i / 2];
      const std::uint8_t code = i % 2 ? byte >> 4 : byte & 0xF;
      const float decoded = format::dequantize(code, w.scale[(i / 16) * n + row], w.scale_2);
      ASSERT_EQ(decoded, format::bf16_to_float(values[row * k + i])) << row << ", " << i;
    }
  }
}

TEST(HarnessSelfTest, ComparisonsCatchWhatTheyMust) {
  const std::vector<bf16_bits> want = {0x3F80, 0x4000, 0xC040, 0x0000};
  auto got = want;
  EXPECT_EQ(check::compare_bf16_bits(got, want, 2, {}, "out").mismatches, 0);
  got[2] ^= 1;  // one ulp
  const auto cmp = check::compare_bf16_bits(got, want, 2, {}, "out");
  EXPECT_EQ(cmp.mismatches, 1);
  EXPECT_EQ(cmp.first_mismatch, 2);
  EXPECT_NE(cmp.first_detail.find("out[1, 0]"), std::string::npos) << cmp.first_detail;
  // Tolerance: one bf16 ulp of a value is within 2^-7·|ref|; a NaN (the poison) never is.
  const std::vector<bf16_bits> bound(want.size(), 0);
  EXPECT_EQ(check::compare_bf16_tolerance(got, want, bound, 2, {}, {64, false}, "out").mismatches,
            0);
  got[0] = 0x3F90;  // 1.125 vs 1.0
  EXPECT_EQ(check::compare_bf16_tolerance(got, want, bound, 2, {}, {64, false}, "out").mismatches,
            1);
  got[0] = check::kPoisonBf16;
  EXPECT_EQ(check::compare_bf16_tolerance(got, want, bound, 2, {}, {64, false}, "out").mismatches,
            1);
  EXPECT_EQ(check::count_poison(got), 1);
  // S widens the tolerance by (K + 8)·2^-24·S.
  const std::vector<bf16_bits> wide(want.size(), format::float_to_bf16(4096.0f));
  got[0] = 0x3F81;
  EXPECT_EQ(check::compare_bf16_tolerance(got, want, wide, 2, {}, {4096, false}, "out").mismatches,
            0);
}

TEST(HarnessSelfTest, ReportWithoutDevice) {
  std::string why;
  if (check::cuda_usable(&why)) GTEST_SKIP() << "a device is present: covered by the GPU tests";
  check::Case c = gemm_case(Op::nvfp4_gemm, Mode::exact, 5, 8, 64);
  const check::Report r = check::run_case(c);
  EXPECT_TRUE(r.skipped()) << r.detail;
  EXPECT_NE(r.detail.find("nothing to compare; CPU oracle ran in"), std::string::npos) << r.detail;
  EXPECT_NE(check::reproduce_command(c).find("--op nvfp4_gemm"), std::string::npos);
}

#ifdef METRALE_HAS_CUDA
TEST(HarnessSmall, GuardBandsCatchOverruns) {
  METRALE_SKIP_WITHOUT_GPU();
  check::DeviceBuffer buffer(100, "probe");
  EXPECT_EQ(buffer.check_guards(), "");
  ASSERT_EQ(cudaMemset(buffer.as<std::uint8_t>() + 100, 0, 1), cudaSuccess);
  EXPECT_NE(buffer.check_guards().find("after the data"), std::string::npos);
  check::DeviceBuffer second(64, "probe2");
  ASSERT_EQ(cudaMemset(second.as<std::uint8_t>() - 1, 0xA5, 1), cudaSuccess);
  EXPECT_NE(second.check_guards().find("before the data"), std::string::npos);
}
#endif

}  // namespace
}  // namespace metrale::cuda_test
