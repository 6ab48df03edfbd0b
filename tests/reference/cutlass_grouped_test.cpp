// The CUTLASS reference arm's grouped NVFP4 MoE GEMMs through the public C++ API
// (Backend::cutlass) against the CPU oracle: nvfp4_grouped_gate_up ([K/16, N] scales, rows in
// group order), _gate_up_fused (SFB scales, rows gathered through sorted_token_ids) and
// nvfp4_grouped_down (SFB). Exact mode bit for bit (every expert with its own power-of-two
// scale_2, so a mixed-up alpha shows), realistic mode within the derived tolerance; routings with
// empty experts, all rows on one expert, skew, 256 experts; the four model presets of PERF.md at
// T = 1, 64 and 4096. Also: device-side offsets are refused with the reason, and a workspace
// below nvfp4_grouped_workspace_size is refused.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "reference_test_util.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/grouped.hpp"
#endif

namespace metrale::reference_test {
namespace {

const Op kGroupedOps[] = {Op::grouped_gate_up, Op::grouped_gate_up_fused, Op::grouped_down};

TEST(CutlassGrouped, ExactEveryOpEveryRouting) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  const RoutingKind kinds[] = {RoutingKind::uniform, RoutingKind::skew, RoutingKind::one_expert,
                               RoutingKind::empty_expert};
  for (const Op op : kGroupedOps) {
    for (const RoutingKind kind : kinds) {
      // 13 tokens x top 2 over 8 experts; N and K off the tiles (136 = 128 + 8, 208 = 3·64 + 16).
      expect_pass(grouped_case(Backend::cutlass, op, Mode::exact, 136, 208, {13, 8, 2, kind}, 3));
    }
  }
}

TEST(CutlassGrouped, ExactSmallAndLargeGroups) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const Op op : kGroupedOps) {
    // One token, one expert: a single group of one row.
    expect_pass(grouped_case(Backend::cutlass, op, Mode::exact, 64, 64, {1, 4, 1}, 1));
    // 256 experts, decode-sized groups (the 64x128 kernel).
    expect_pass(grouped_case(Backend::cutlass, op, Mode::exact, 64, 128, {64, 256, 8}, 2));
    // Prefill-sized groups (> 64 rows per expert on average: the 128x256 kernel).
    expect_pass(grouped_case(Backend::cutlass, op, Mode::exact, 264, 320, {700, 8, 2}, 4));
  }
}

TEST(CutlassGrouped, RealisticModelPresets) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  for (const check::ModelPreset& model : check::model_presets()) {
    for (const std::int32_t tokens : {1, 64, 4096}) {
      for (const Op op : {Op::grouped_gate_up_fused, Op::grouped_down}) {
        check::Case c = grouped_case(Backend::cutlass, op, Mode::realistic, 0, 0, {}, 11);
        check::apply_model(c, model, tokens);
        expect_pass(c);
      }
    }
  }
}

TEST(CutlassGrouped, RealisticPerExpertGateUp) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  check::Case c = grouped_case(Backend::cutlass, Op::grouped_gate_up, Mode::realistic, 0, 0, {}, 5);
  check::apply_model(c, *check::find_model("qwen3-30b-a3b"), 64);
  expect_pass(c);
}

#ifdef METRALE_HAS_CUDA
// The device-offset form needs each group's rows on the host before CUTLASS's launch: refused as
// unsupported, saying so, and nothing is written.
TEST(CutlassGrouped, DeviceOffsetsAreRefusedWithTheReason) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  const check::Case c =
      grouped_case(Backend::cutlass, Op::grouped_down, Mode::exact, 64, 64, {9, 4, 2}, 1);
  const check::GroupedHost h = check::make_grouped_host(c);
  check::GroupedDevice d = check::upload_grouped(h);
  const GroupedNvfp4 args = check::device_args(h, d, true, h.routing.m_total);
  const Result r = nvfp4_grouped(args, Exec{Backend::cutlass, nullptr, 0, nullptr});
  EXPECT_EQ(r.status, Status::unsupported) << r.message;
  EXPECT_NE(r.message.find("offsets on the device"), std::string::npos) << r.message;
  check::device_synchronize("after the refused call");
  EXPECT_EQ(check::count_poison(d.out[0].download<bf16_bits>()),
            static_cast<std::int64_t>(h.routing.m_total) * h.n);
}

// nvfp4_grouped_workspace_size is what the call needs: one byte less is refused.
TEST(CutlassGrouped, WorkspaceBelowTheQueryIsRefused) {
  METRALE_SKIP_UNLESS_BUILT(Backend::cutlass);
  const check::Case c = grouped_case(Backend::cutlass, Op::grouped_gate_up_fused, Mode::exact, 128,
                                     256, {16, 8, 2}, 1);
  const check::GroupedHost h = check::make_grouped_host(c);
  check::GroupedDevice d = check::upload_grouped(h);
  const GroupedNvfp4 args = check::device_args(h, d, false, h.routing.max_rows);
  std::size_t bytes = 0;
  ASSERT_TRUE(nvfp4_grouped_workspace_size(Backend::cutlass, args.groups, args.n, args.k,
                                           args.proj_count, &bytes)
                  .ok());
  // At least the dequantized weights of every (projection, active expert).
  int active = 0;
  for (int e = 0; e < args.groups.num_experts; ++e)
    active += args.groups.offsets[e + 1] > args.groups.offsets[e];
  EXPECT_GE(bytes, static_cast<std::size_t>(2 * active) * args.n * args.k * 2);

  check::DeviceBuffer ws(bytes, "workspace");
  const Result short_ws =
      nvfp4_grouped(args, Exec{Backend::cutlass, ws.data(), bytes - 1, nullptr});
  EXPECT_EQ(short_ws.status, Status::workspace_too_small) << short_ws.message;
  const Result fits = nvfp4_grouped(args, Exec{Backend::cutlass, ws.data(), bytes, nullptr});
  EXPECT_TRUE(fits.ok()) << fits.message;
  check::device_synchronize("grouped with the queried workspace");
  EXPECT_EQ(check::check_all_guards({&ws}), "");
}
#endif  // METRALE_HAS_CUDA

}  // namespace
}  // namespace metrale::reference_test
