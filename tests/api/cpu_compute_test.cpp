// Numbers through the public API on the CPU backend: the dispatch hands each form the layout the
// seeds define (gate_up: [K/16, N] scales; fused and down: SFB; fused gathers rows through
// sorted_token_ids), so each grouped form equals a naive product of the original weights, bit for
// bit, on inputs whose quantization is exact. A broken route (wrong layout, no gather, wrong
// scale_2) changes the numbers.
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "format/layouts.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::ptr_bits;

constexpr int kN = 24, kK = 64, kExperts = 3;

// One projection of kExperts experts: original weights, packed, [K/16, N] and SFB scales.
struct Projection {
  std::vector<std::vector<float>> w;
  std::vector<std::vector<std::uint8_t>> packed, scale, sfb;
  std::vector<std::uint64_t> packed_ptrs, scale_ptrs, sfb_ptrs;
  std::vector<float> scale2;

  Projection(std::uint32_t seed, std::vector<float> s2) : scale2(std::move(s2)) {
    for (int e = 0; e < kExperts; ++e) {
      w.push_back(test::grid_weights(kN, kK, seed + e));
      const auto bf = test::to_bf16(w.back());
      packed.emplace_back(kN * kK / 2);
      scale.emplace_back(kK / 16 * kN);
      sfb.emplace_back(format::sfb_bytes(kN, kK), 0xEE);
      EXPECT_EQ(metrale_cpu_pack_bf16_weight_to_nvfp4_t(bf.data(), packed[e].data(),
                                                        scale[e].data(), kN, kK, nullptr),
                METRALE_STATUS_OK)
          << metrale_last_error();
      EXPECT_EQ(metrale_cpu_pack_weight_sfb(scale[e].data(), sfb[e].data(), kN, kK, 1, nullptr),
                METRALE_STATUS_OK)
          << metrale_last_error();
      packed_ptrs.push_back(ptr_bits(packed[e].data()));
      scale_ptrs.push_back(ptr_bits(scale[e].data()));
      sfb_ptrs.push_back(ptr_bits(sfb[e].data()));
    }
  }
};

struct Problem {
  std::vector<std::int32_t> offsets = {0, 5, 5, 11};  // expert 1 has no rows
  std::vector<std::int32_t> ids = {6, 0, 3, 3, 1, 2, 5, 4, 0, 6, 1};
  std::vector<float> act = test::small_ints(7 * kK, 11);  // 7 tokens
  std::vector<bf16_bits> act_bf = test::to_bf16(act);
  Projection gate{100, {1.0f, 0.5f, 2.0f}}, up{200, {0.25f, 1.0f, 4.0f}};

  // The expected rows of one projection, group row i reading token rows[i].
  std::vector<bf16_bits> expected(const Projection& p, const std::vector<int>& rows) const {
    std::vector<bf16_bits> out(rows.size() * kN);
    for (int e = 0; e < kExperts; ++e) {
      const std::vector<int> mine(rows.begin() + offsets[e], rows.begin() + offsets[e + 1]);
      const auto part = test::naive_rows(act, mine, p.w[e], kN, kK, p.scale2[e]);
      std::copy(part.begin(), part.end(), out.begin() + static_cast<long>(offsets[e]) * kN);
    }
    return out;
  }

  // The seed's grouped_down of projection `p` on act_bf (group row i reads row i) into `out`.
  int grouped_down(const Projection& p, std::vector<bf16_bits>& out) const {
    return metrale_cpu_nvfp4_grouped_down(act_bf.data(), p.packed_ptrs.data(), p.sfb_ptrs.data(),
                                          p.scale2.data(), out.data(), offsets.data(), kExperts,
                                          kN, kK, nullptr, 0, nullptr);
  }
};

TEST(CpuCompute, FusedGathersAndUsesSfb) {
  Problem pr;
  std::vector<bf16_bits> gate(11 * kN, 0x7FC1), up(11 * kN, 0x7FC1);
  ASSERT_EQ(metrale_cpu_nvfp4_grouped_gate_up_fused(
                pr.act_bf.data(), pr.ids.data(), pr.gate.packed_ptrs.data(),
                pr.gate.sfb_ptrs.data(), pr.gate.scale2.data(), pr.up.packed_ptrs.data(),
                pr.up.sfb_ptrs.data(), pr.up.scale2.data(), gate.data(), up.data(),
                pr.offsets.data(), kExperts, kN, kK, nullptr, 0, nullptr),
            METRALE_STATUS_OK)
      << metrale_last_error();
  const std::vector<int> rows(pr.ids.begin(), pr.ids.end());
  EXPECT_EQ(gate, pr.expected(pr.gate, rows));
  EXPECT_EQ(up, pr.expected(pr.up, rows));
}

TEST(CpuCompute, GateUpUsesK16ByNScalesAndDownUsesSfb) {
  Problem pr;
  // Without a gather, group row i reads row i: use the first 11 rows of a longer activation.
  pr.act = test::small_ints(11 * kK, 12);
  pr.act_bf = test::to_bf16(pr.act);
  std::vector<int> identity(11);
  for (int i = 0; i < 11; ++i) identity[i] = i;
  std::vector<bf16_bits> gate(11 * kN, 0x7FC1), up(11 * kN, 0x7FC1), down(11 * kN, 0x7FC1);
  ASSERT_EQ(metrale_cpu_nvfp4_grouped_gate_up(
                pr.act_bf.data(), pr.gate.packed_ptrs.data(), pr.gate.scale_ptrs.data(),
                pr.gate.scale2.data(), pr.up.packed_ptrs.data(), pr.up.scale_ptrs.data(),
                pr.up.scale2.data(), gate.data(), up.data(), pr.offsets.data(), kExperts, kN, kK,
                nullptr, 0, nullptr),
            METRALE_STATUS_OK)
      << metrale_last_error();
  EXPECT_EQ(gate, pr.expected(pr.gate, identity));
  EXPECT_EQ(up, pr.expected(pr.up, identity));
  ASSERT_EQ(pr.grouped_down(pr.up, down), METRALE_STATUS_OK) << metrale_last_error();
  EXPECT_EQ(down, up) << "down on the up weights equals the up projection";
}

TEST(CpuCompute, SingleGemmsMatchTheNaiveProduct) {
  Problem pr;
  std::vector<bf16_bits> out(7 * kN), dense(7 * kN);
  const std::vector<int> rows = {0, 1, 2, 3, 4, 5, 6};
  const Nvfp4Gemm args{pr.act_bf.data(),
                       pr.gate.packed[2].data(),
                       pr.gate.scale[2].data(),
                       2.0f,
                       ScaleLayout::k16_by_n,
                       out.data(),
                       7,
                       kN,
                       kK};
  ASSERT_TRUE(test::succeeds(nvfp4_gemm_bf16_act_weight_t(args, Exec{Backend::cpu})));
  EXPECT_EQ(out, test::naive_rows(pr.act, rows, pr.gate.w[2], kN, kK, 2.0f));
  const auto w_bf = test::to_bf16(pr.gate.w[2]);
  ASSERT_TRUE(test::succeeds(bf16_gemm_act_weight_t(
      {pr.act_bf.data(), w_bf.data(), dense.data(), 7, kN, kK}, Exec{Backend::cpu})));
  EXPECT_EQ(dense, test::naive_rows(pr.act, rows, pr.gate.w[2], kN, kK, 1.0f));
}

TEST(CpuCompute, GroupedExMatchesTheSeedForm) {
  Problem pr;
  std::vector<bf16_bits> seed(11 * kN), ex(11 * kN);
  // Without a gather the seed form reads group row i from row i: 11 rows of activations.
  pr.act = test::small_ints(11 * kK, 13);
  pr.act_bf = test::to_bf16(pr.act);
  ASSERT_EQ(pr.grouped_down(pr.gate, seed), METRALE_STATUS_OK) << metrale_last_error();
  const metrale_groups groups{sizeof(metrale_groups), pr.offsets.data(), 0, kExperts, 11, 0};
  const metrale_expert_weights w{pr.gate.packed_ptrs.data(), pr.gate.sfb_ptrs.data(),
                                 pr.gate.scale2.data()};
  void* out[1] = {ex.data()};
  const metrale_exec cpu{sizeof(metrale_exec), METRALE_BACKEND_CPU, nullptr, 0, nullptr, -1};
  ASSERT_EQ(metrale_nvfp4_grouped_ex(pr.act_bf.data(), 11, nullptr, &w, out, 1, METRALE_SCALE_SFB,
                                     &groups, kN, kK, &cpu),
            METRALE_STATUS_OK)
      << metrale_last_error();
  EXPECT_EQ(seed, ex);
}

}  // namespace
}  // namespace metrale
