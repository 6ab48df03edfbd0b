// Validation of the grouped NVFP4 GEMMs through the public C++ API on the CPU backend: the seed's
// offset rules plus M_total, the per-expert host arrays and scale_2 values (naming the index),
// device offsets, gathered row ids, row counts and the buffers of experts that have rows.
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"

namespace metrale {
namespace {

using test::fails_with;
using test::ptr_bits;
using test::succeeds;

constexpr Exec kCpu{Backend::cpu};
constexpr int kN = 8, kK = 32, kExperts = 4;

// Four experts, 64 group rows, valid for every form; tests break one thing each.
struct GroupedFixture {
  std::vector<std::int32_t> offsets = {0, 30, 60, 60, 64};
  std::vector<bf16_bits> a = std::vector<bf16_bits>(64 * kK, 0x3F80);
  std::vector<std::uint8_t> packed = std::vector<std::uint8_t>(kN * kK / 2, 0x22);
  std::vector<std::uint8_t> scale = std::vector<std::uint8_t>(128 * 4, 0x38);  // fits SFB too
  std::vector<std::uint64_t> packed_ptrs =
      std::vector<std::uint64_t>(kExperts, ptr_bits(packed.data()));
  std::vector<std::uint64_t> scale_ptrs =
      std::vector<std::uint64_t>(kExperts, ptr_bits(scale.data()));
  std::vector<float> gate_s2 = std::vector<float>(kExperts, 1.0f);
  std::vector<float> up_s2 = std::vector<float>(kExperts, 0.5f);
  std::vector<bf16_bits> c0 = std::vector<bf16_bits>(64 * kN), c1 = std::vector<bf16_bits>(64 * kN);
  std::vector<std::int32_t> ids = std::vector<std::int32_t>(64, 3);

  GroupedNvfp4 gate_up() {
    GroupedNvfp4 g{};
    g.a = a.data();
    g.a_rows = 64;
    g.proj[0] = {packed_ptrs.data(), scale_ptrs.data(), gate_s2.data()};
    g.proj[1] = {packed_ptrs.data(), scale_ptrs.data(), up_s2.data()};
    g.out[0] = c0.data();
    g.out[1] = c1.data();
    g.proj_count = 2;
    g.scale_layout = ScaleLayout::k16_by_n;
    g.groups = {offsets.data(), false, kExperts, 64, 0};
    g.n = kN;
    g.k = kK;
    return g;
  }
  GroupedNvfp4 fused() {
    GroupedNvfp4 g = gate_up();
    g.scale_layout = ScaleLayout::sfb;
    g.token_ids = ids.data();
    g.a_rows = 8;
    return g;
  }
  GroupedNvfp4 down() {
    GroupedNvfp4 g = gate_up();
    g.proj_count = 1;
    g.scale_layout = ScaleLayout::sfb;
    return g;
  }
};

TEST(ValidateGrouped, ValidCallsRun) {
  GroupedFixture f;
  EXPECT_TRUE(succeeds(nvfp4_grouped(f.gate_up(), kCpu)));
  EXPECT_TRUE(succeeds(nvfp4_grouped(f.fused(), kCpu)));
  EXPECT_TRUE(succeeds(nvfp4_grouped(f.down(), kCpu)));
}

TEST(ValidateGrouped, LastOffsetWithinMTotal) {
  GroupedFixture f;
  f.offsets = {0, 10, 20, 30, 90};
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.down(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: expert_offsets[4] = 90 > M_total = 64"));
}

TEST(ValidateGrouped, SeedOffsetRules) {
  GroupedFixture f;
  f.offsets = {-2, 10, 20, 30, 40};
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.gate_up(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up: expert_offsets[0] = -2 is negative"));
  f.offsets = {0, 10, 5, 30, 40};
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.fused(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up_fused: expert_offsets[2] = 5 < "
                         "expert_offsets[1] = 10"));
  auto g = f.down();
  g.groups.offsets = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: expert_offsets is null"));
  g = f.down();
  g.groups.num_experts = -1;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: num_experts = -1, expected num_experts >= 0"));
}

TEST(ValidateGrouped, EmptyExpertAndZeroExpertsAccepted) {
  GroupedFixture f;
  f.offsets = {0, 0, 64, 64, 64};
  EXPECT_TRUE(succeeds(nvfp4_grouped(f.gate_up(), kCpu)));
  // Zero experts: the per-expert arrays are never read, so they may be null.
  auto g = f.down();
  f.offsets = {0};
  g.groups = {f.offsets.data(), false, 0, 0, 0};
  g.proj[0] = {nullptr, nullptr, nullptr};
  EXPECT_TRUE(succeeds(nvfp4_grouped(g, kCpu)));
}

TEST(ValidateGrouped, PerExpertArraysMustExist) {
  GroupedFixture f;
  auto g = f.gate_up();
  g.proj[0].scale_ptrs = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up: gate_scale_ptrs is null"));
  g = f.fused();
  g.proj[1].scale_ptrs = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up_fused: up_sfb_ptrs is null"));
  g = f.down();
  g.proj[0].scale2_vals = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: scale2_vals is null"));
}

TEST(ValidateGrouped, EachExpertScale2IsCheckedByIndex) {
  GroupedFixture f;
  f.gate_s2[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.gate_up(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up: gate_scale2_vals[3] = nan is not finite and > 0"));
  f.gate_s2[3] = 1.0f;
  f.up_s2[1] = 0.0f;
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.fused(), kCpu), Status::invalid_argument,
                         "up_scale2_vals[1] = 0 is not finite and > 0"));
  f.up_s2[1] = 1.0f;
  f.gate_s2[2] = -std::numeric_limits<float>::infinity();  // expert 2 has no rows: still checked
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.down(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: scale2_vals[2] = -inf is not finite and > 0"));
}

TEST(ValidateGrouped, ShapeArguments) {
  GroupedFixture f;
  auto g = f.down();
  g.k = 40;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: K = 40 is not a multiple of 16"));
  g = f.down();
  g.n = -8;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: N = -8, expected N > 0"));
  g = f.down();
  g.proj_count = 3;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "proj_count = 3, expected 1 (down) or 2 (gate and up)"));
  g = f.down();
  g.groups.m_total = -1;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "M_total = -1, expected M_total >= 0"));
  g = f.down();
  g.weight_layout = static_cast<WeightLayout>(2);
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: weight_layout = 2, expected 0 (packed) or 1 "
                         "(prepacked)"));
}

TEST(ValidateGrouped, WeightsOfExpertsWithRows) {
  GroupedFixture f;
  f.packed_ptrs[1] = 0;
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.down(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: packed_ptrs[1] is null"));
  // Expert 2 owns no rows (offsets 60..60): its weights are never read and may be null.
  f.packed_ptrs[1] = ptr_bits(f.packed.data());
  f.packed_ptrs[2] = 0;
  f.scale_ptrs[2] = 0;
  EXPECT_TRUE(succeeds(nvfp4_grouped(f.down(), kCpu)));
}

TEST(ValidateGrouped, RowsAndBuffers) {
  GroupedFixture f;
  auto g = f.down();
  g.a_rows = 63;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: a_rows = 63 < M_total = 64"));
  g = f.down();
  g.a = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: a is null"));
  g = f.gate_up();
  g.out[1] = nullptr;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up: c_up is null"));
  g = f.down();
  g.a = reinterpret_cast<const bf16_bits*>(reinterpret_cast<const char*>(f.a.data()) + 1);
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "is not 2-byte aligned, expected bf16 data"));
  // M_total = 0: no rows, nothing read or written.
  f.offsets = {0, 0, 0, 0, 0};
  g = f.down();
  g.groups.m_total = 0;
  g.a = nullptr;
  g.out[0] = nullptr;
  EXPECT_TRUE(succeeds(nvfp4_grouped(g, kCpu)));
}

TEST(ValidateGrouped, GatheredRowIdsOnTheCpu) {
  GroupedFixture f;
  f.ids[61] = 9;
  EXPECT_TRUE(fails_with(nvfp4_grouped(f.fused(), kCpu), Status::invalid_argument,
                         "nvfp4_grouped_gate_up_fused: sorted_token_ids[61] = 9 is outside "
                         "[0, a_rows = 8)"));
  // a_rows = 0 is "unknown" (the seeds' fused call): only negative ids are refused then.
  auto g = f.fused();
  g.a_rows = 0;
  f.ids[61] = -1;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "sorted_token_ids[61] = -1 is negative, expected a row of a"));
  f.ids[61] = 5;
  EXPECT_TRUE(succeeds(nvfp4_grouped(g, kCpu)));
}

TEST(ValidateGrouped, DeviceOffsets) {
  GroupedFixture f;
  auto g = f.down();
  g.groups.offsets_on_device = true;
  g.groups.max_rows_per_expert = 65;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "nvfp4_grouped_down: max_rows_per_expert = 65 is outside "
                         "[0, M_total = 64]"));
  g.groups.max_rows_per_expert = -1;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::invalid_argument,
                         "max_rows_per_expert = -1 is outside"));
  g.groups.max_rows_per_expert = 30;
  EXPECT_TRUE(fails_with(nvfp4_grouped(g, kCpu), Status::unsupported,
                         "nvfp4_grouped_down: offsets_on_device = true, but the CPU backend "
                         "reads expert_offsets on the host"));
}

}  // namespace
}  // namespace metrale
