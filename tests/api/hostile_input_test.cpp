// Findings of the hostile-input review (issue 11), each pinned by a test that failed before its
// fix: no undefined behaviour on extreme ids, messages in the caller's own names, fail-fast on
// sizes no host can hold, non-finite weights refused by the quantizer.
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "metrale/metrale.h"
#include "seed_arrays.hpp"

namespace metrale {
namespace {

using test::SeedArrays;

std::string last_error() {
  return metrale_last_error();
}

// Issue 11, item 1: an id of INT32_MAX made `max id + 1` overflow (UBSan: signed integer
// overflow in infer_a_rows), then the message named an internal operation and an a_rows the
// caller never passed.
TEST(HostileInput, TokenIdOfInt32MaxIsRefusedInTheCallersNames) {
  SeedArrays s(20);
  const std::vector<std::int32_t> offsets = {0, 4, 20};
  std::vector<std::int32_t> ids(20, 3);
  ids[17] = INT32_MAX;
  EXPECT_EQ(metrale_cpu_nvfp4_grouped_gate_up_fused(
                s.a.data(), ids.data(), s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data(),
                s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data(), s.c.data(), s.c2.data(),
                offsets.data(), 2, 8, 32, nullptr, 0, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_gate_up_fused: sorted_token_ids[17] = 2147483647 is not a "
            "row of a, expected a row index < 2147483647");
  // The largest id an int32 row count allows still runs (a is 20 rows here, so use one in it).
  ids[17] = 19;
  EXPECT_EQ(metrale_cpu_nvfp4_grouped_gate_up_fused(
                s.a.data(), ids.data(), s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data(),
                s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data(), s.c.data(), s.c2.data(),
                offsets.data(), 2, 8, 32, nullptr, 0, nullptr),
            METRALE_STATUS_OK)
      << last_error();
}


// Issue 11, item 5: one NaN, or ±Inf, or all-NaN weights were quantized with status OK and
// scale_2 = 1. Every form of the quantizer refuses them, naming the first bad index.
TEST(HostileInput, QuantizerRefusesNonFiniteWeights) {
  constexpr int kN = 4, kK = 32;
  std::vector<std::uint16_t> w(kN * kK, 0x3F80);
  std::vector<std::uint8_t> packed(kN * kK / 2), scale(kN * kK / 16);
  float scale_2 = 0.0f;
  w[37] = 0x7FC0;  // NaN at row 1, column 5
  EXPECT_EQ(metrale_cpu_pack_bf16_weight_to_nvfp4_t(w.data(), packed.data(), scale.data(), kN, kK,
                                                    nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_pack_bf16_weight_to_nvfp4_t: weight_bf16[37] = nan (row 1, column 5) is "
            "not finite, expected finite weights (NVFP4 has no NaN or Inf)");
  w[37] = 0x3F80;
  w[100] = 0xFF80;  // -Inf
  metrale_exec cpu = METRALE_EXEC_INIT;
  cpu.backend = METRALE_BACKEND_CPU;
  EXPECT_EQ(metrale_pack_bf16_weight_to_nvfp4_ex(w.data(), packed.data(), scale.data(), &scale_2,
                                                 kN, kK, &cpu),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_pack_bf16_weight_to_nvfp4_ex: weight_bf16[100] = -inf (row 3, column 4) is "
            "not finite, expected finite weights (NVFP4 has no NaN or Inf)");
  EXPECT_EQ(scale_2, 0.0f) << "a refused call writes nothing";
  std::fill(w.begin(), w.end(), std::uint16_t{0x7FC0});
  PackNvfp4 args{w.data(), packed.data(), scale.data(), &scale_2, kN, kK};
  EXPECT_TRUE(test::fails_with(pack_bf16_weight_to_nvfp4_t(args, Exec{Backend::cpu}),
                               Status::invalid_argument, "weight_bf16[0] = nan (row 0, column 0)"));
}

}  // namespace
}  // namespace metrale
