// Tests of cpu::nvfp4_grouped (the grouped gate_up, gate_up_fused and down on the CPU): each
// expert's group rows equal cpu::nvfp4_gemm on those rows bit for bit, for both projections and
// their own scale_2, with an empty expert, all rows on one expert, and rows outside every expert
// left untouched; the gather through token ids equals gathering the rows first; the SFB layout
// equals the [K/16, N] one; a token id out of range is an error, not a read out of bounds.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/cpu_test_util.hpp"
#include "format/layouts.hpp"

namespace metrale::cpu {
namespace {

constexpr bf16_bits kPoison = 0x7FC1;  // a NaN no computation produces

// Per-expert weights of one projection in both scale layouts.
struct Projection {
  std::vector<std::vector<std::uint8_t>> packed, scale, sfb;
  std::vector<std::uint64_t> packed_ptrs, scale_ptrs, sfb_ptrs;
  std::vector<float> scale2;

  Projection(int experts, int n, int k, std::uint32_t seed) {
    for (int e = 0; e < experts; ++e) {
      packed.push_back(test::random_bytes(static_cast<std::size_t>(n) * k / 2, seed + 3 * e));
      scale.push_back(test::random_scales(static_cast<std::size_t>(n) * k / 16, seed + 3 * e + 1));
      std::vector<std::uint8_t> swizzled(format::sfb_bytes(n, k), 0);
      for (int row = 0; row < n; ++row)
        for (int b = 0; b < k / 16; ++b)
          swizzled[format::sfb_offset(row, b, k)] =
              scale.back()[format::k16_by_n_offset(row, b, n)];
      sfb.push_back(swizzled);
      scale2.push_back(0.01f * static_cast<float>(e + 1) + 0.001f * static_cast<float>(seed % 7));
    }
    for (int e = 0; e < experts; ++e) {
      packed_ptrs.push_back(test::ptr_bits(packed[e].data()));
      scale_ptrs.push_back(test::ptr_bits(scale[e].data()));
      sfb_ptrs.push_back(test::ptr_bits(sfb[e].data()));
    }
  }

  ExpertWeights weights(ScaleLayout layout) const {
    return ExpertWeights{packed_ptrs.data(),
                         layout == ScaleLayout::sfb ? sfb_ptrs.data() : scale_ptrs.data(),
                         scale2.data()};
  }
};

struct Case {
  int n = 48, k = 64;
  std::vector<std::int32_t> offsets;
  int m_total = 0;
  std::vector<Projection> proj;
  std::vector<bf16_bits> a;

  Case(std::vector<std::int32_t> offsets_in, int m_total_in, int a_rows, bool realistic = false)
      : offsets(std::move(offsets_in)), m_total(m_total_in) {
    const int experts = static_cast<int>(offsets.size()) - 1;
    proj.emplace_back(experts, n, k, 100);
    proj.emplace_back(experts, n, k, 200);
    a = realistic ? test::random_normal_bf16(static_cast<std::size_t>(a_rows) * k, 9, 1.0f)
                  : test::random_bf16(static_cast<std::size_t>(a_rows) * k, 9, -6, 6);
  }

  std::vector<std::vector<bf16_bits>> run(ScaleLayout layout, const std::int32_t* token_ids,
                                          int a_rows, int proj_count = 2) const {
    std::vector<std::vector<bf16_bits>> out(
        2, std::vector<bf16_bits>(static_cast<std::size_t>(m_total) * n, kPoison));
    GroupedNvfp4 args{};
    args.a = a.data();
    args.a_rows = a_rows;
    args.token_ids = token_ids;
    args.proj[0] = proj[0].weights(layout);
    args.proj[1] = proj[1].weights(layout);
    args.out[0] = out[0].data();
    args.out[1] = out[1].data();
    args.proj_count = proj_count;
    args.scale_layout = layout;
    args.groups = ExpertGroups{offsets.data(), false, static_cast<std::int32_t>(offsets.size()) - 1,
                               m_total, m_total};
    args.n = n;
    args.k = k;
    nvfp4_grouped(args);
    return out;
  }

  // cpu::nvfp4_gemm of expert e, projection p on rows [offsets[e], offsets[e+1]) of `rows`.
  std::vector<bf16_bits> expert_gemm(const std::vector<bf16_bits>& rows, int p, int e) const {
    const int begin = offsets[e], m = offsets[e + 1] - offsets[e];
    std::vector<bf16_bits> out(static_cast<std::size_t>(m) * n, kPoison);
    nvfp4_gemm(Nvfp4Gemm{rows.data() + static_cast<std::size_t>(begin) * k,
                         proj[p].packed[e].data(), proj[p].scale[e].data(), proj[p].scale2[e],
                         ScaleLayout::k16_by_n, out.data(), m, n, k});
    return out;
  }

  void expect_per_expert(const std::vector<std::vector<bf16_bits>>& got,
                         const std::vector<bf16_bits>& rows, int proj_count = 2) const {
    for (int p = 0; p < proj_count; ++p)
      for (int e = 0; e + 1 < static_cast<int>(offsets.size()); ++e) {
        const auto want = expert_gemm(rows, p, e);
        const std::vector<bf16_bits> slice(
            got[p].begin() + static_cast<std::ptrdiff_t>(offsets[e]) * n,
            got[p].begin() + static_cast<std::ptrdiff_t>(offsets[e + 1]) * n);
        EXPECT_EQ(slice, want) << "projection " << p << " expert " << e;
      }
  }
};

TEST(CpuGrouped, EqualsPerExpertGemmWithAnEmptyExpert) {
  for (bool realistic : {false, true}) {
    const Case c({0, 3, 3, 10, 11, 16}, 16, 16, realistic);  // expert 1 has no rows
    const auto first = c.run(ScaleLayout::k16_by_n, nullptr, 16);
    c.expect_per_expert(first, c.a);
    EXPECT_EQ(c.run(ScaleLayout::k16_by_n, nullptr, 16), first) << "a second run is identical";
  }
}

TEST(CpuGrouped, AllRowsOnOneExpert) {
  const Case c({0, 0, 0, 37, 37}, 37, 37);
  c.expect_per_expert(c.run(ScaleLayout::k16_by_n, nullptr, 37), c.a);
}

TEST(CpuGrouped, SingleProjectionLeavesSecondOutputAlone) {
  const Case c({0, 5, 9}, 9, 9);
  const auto got = c.run(ScaleLayout::k16_by_n, nullptr, 9, 1);
  c.expect_per_expert(got, c.a, 1);
  EXPECT_EQ(got[1], std::vector<bf16_bits>(got[1].size(), kPoison));
}

TEST(CpuGrouped, RowsOutsideEveryExpertAreNotWritten) {
  const Case c({2, 5, 5, 9}, 11, 11);
  const auto got = c.run(ScaleLayout::k16_by_n, nullptr, 11);
  c.expect_per_expert(got, c.a);
  for (int p = 0; p < 2; ++p)
    for (int row : {0, 1, 9, 10})
      for (int col = 0; col < c.n; ++col) EXPECT_EQ(got[p][row * c.n + col], kPoison);
}

TEST(CpuGrouped, NoRowsAtAllWritesNothing) {
  const Case c({0, 0, 0}, 4, 4);
  const auto got = c.run(ScaleLayout::k16_by_n, nullptr, 4);
  EXPECT_EQ(got[0], std::vector<bf16_bits>(got[0].size(), kPoison));
}

TEST(CpuGrouped, GatherThroughTokenIdsEqualsGatheringFirst) {
  // 6 tokens, top-2 routing: 12 group rows in expert order, each naming its token.
  const int tokens = 6;
  Case c({0, 4, 4, 9, 12}, 12, tokens, true);
  const std::vector<std::int32_t> ids = {5, 0, 3, 1, 2, 2, 4, 0, 5, 1, 3, 4};
  const auto gathered_run = c.run(ScaleLayout::k16_by_n, ids.data(), tokens);
  // Gather by hand, then run without ids.
  std::vector<bf16_bits> rows;
  for (std::int32_t id : ids)
    rows.insert(rows.end(), c.a.begin() + static_cast<std::ptrdiff_t>(id) * c.k,
                c.a.begin() + static_cast<std::ptrdiff_t>(id + 1) * c.k);
  Case plain = c;
  plain.a = rows;
  EXPECT_EQ(gathered_run, plain.run(ScaleLayout::k16_by_n, nullptr, 12));
  c.expect_per_expert(gathered_run, rows);
}

TEST(CpuGrouped, SfbLayoutEqualsK16ByN) {
  const Case c({0, 7, 7, 20}, 20, 20, true);
  EXPECT_EQ(c.run(ScaleLayout::sfb, nullptr, 20), c.run(ScaleLayout::k16_by_n, nullptr, 20));
}

TEST(CpuGrouped, TokenIdOutOfRangeIsAnError) {
  const Case c({0, 2}, 2, 3);
  const std::vector<std::int32_t> ids = {0, 3};
  try {
    c.run(ScaleLayout::k16_by_n, ids.data(), 3);
    ADD_FAILURE() << "expected metrale::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("token_ids[1] = 3"), std::string::npos)
        << error.what();
  }
}

TEST(CpuGrouped, GroupRowBeyondARowsIsAnError) {
  const Case c({0, 3}, 3, 2);  // no token ids, 3 group rows, but `a` has 2 rows
  try {
    c.run(ScaleLayout::k16_by_n, nullptr, 2);
    ADD_FAILURE() << "expected metrale::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("group row 2"), std::string::npos) << error.what();
  }
}

TEST(CpuGrouped, OffsetsOnTheDeviceAreRefused) {
  const std::vector<std::int32_t> offsets = {0, 1};
  GroupedNvfp4 args{};
  args.proj_count = 1;
  args.groups = ExpertGroups{offsets.data(), true, 1, 1, 1};
  args.n = 16;
  args.k = 16;
  try {
    nvfp4_grouped(args);
    ADD_FAILURE() << "expected metrale::Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.status(), Status::unsupported) << error.what();
  }
}

}  // namespace
}  // namespace metrale::cpu
