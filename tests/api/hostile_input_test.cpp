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
#include "core/device.hpp"
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
  EXPECT_EQ(test::seed_fused(s, ids.data(), offsets), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_gate_up_fused: sorted_token_ids[17] = 2147483647 is not a "
            "row of a_bf16, expected a row index < 2147483647");
  // The largest id an int32 row count allows still runs (a is 20 rows here, so use one in it).
  ids[17] = 19;
  EXPECT_EQ(test::seed_fused(s, ids.data(), offsets), METRALE_STATUS_OK) << last_error();
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


// Issue 11, item 2: metrale_nvfp4_grouped_ex named the seeds' parameters (sorted_token_ids,
// c_up, gate_packed_ptrs, expert_offsets) instead of its own.
TEST(HostileInput, GroupedExMessagesUseItsOwnParameterNames) {
  SeedArrays s;
  const std::vector<std::int32_t> offsets = {0, 4, 9};
  std::vector<std::int32_t> ids(9, 0);
  metrale_groups groups = METRALE_GROUPS_INIT;
  groups.offsets = offsets.data();
  groups.num_experts = 2;
  groups.m_total = 9;
  metrale_expert_weights proj[2] = {{s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data()},
                                    {s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data()}};
  void* out[2] = {s.c.data(), nullptr};
  metrale_exec cpu = METRALE_EXEC_INIT;
  cpu.backend = METRALE_BACKEND_CPU;
  auto call = [&](std::int32_t a_rows) {
    return metrale_nvfp4_grouped_ex(s.a.data(), a_rows, ids.data(), proj, out, 2, METRALE_SCALE_SFB,
                                    &groups, 8, 32, &cpu);
  };
  EXPECT_EQ(call(16), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_nvfp4_grouped_ex: out[1] is null, expected a valid pointer");
  out[1] = s.c2.data();
  ids[5] = 40;
  EXPECT_EQ(call(16), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_nvfp4_grouped_ex: token_ids[5] = 40 is outside [0, a_rows = 16)");
  ids[5] = 0;
  std::vector<std::uint64_t> no_weights = {s.packed_ptrs[0], 0};
  proj[0].packed_ptrs = no_weights.data();
  EXPECT_EQ(call(16), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_nvfp4_grouped_ex: proj[0].packed_ptrs[1] is null, expected expert 1's weight "
            "(it may have rows)");
  proj[0].packed_ptrs = s.packed_ptrs.data();
  groups.num_experts = -1;
  EXPECT_EQ(call(16), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_nvfp4_grouped_ex: groups->num_experts = -1, expected groups->num_experts >= 0");
  groups.num_experts = 2;
  EXPECT_EQ(call(16), METRALE_STATUS_OK) << last_error();
}

// Issue 11, item 2: a failure found below the API (an environment variable's check) named no
// function.
TEST(HostileInput, EnvironmentErrorsNameTheFunction) {
  test::ScopedEnv env("METRALE_CUTLASS_GEMM", "yes");
  std::vector<std::uint16_t> buf(16, 0x3F80);
  EXPECT_NE(metrale_bf16_gemm_act_weight_t(buf.data(), buf.data(), buf.data(), 1, 1, 16, nullptr,
                                           0, nullptr),
            METRALE_STATUS_OK);
  EXPECT_EQ(last_error().rfind("metrale_bf16_gemm_act_weight_t: METRALE_CUTLASS_GEMM = 'yes'", 0),
            0u)
      << last_error();
}


// Issue 11, item 3: without a usable device, metrale_workspace_get(CUDA or AUTO) answered
// cuda_error with the runtime's allocation text while other calls said unsupported. One status,
// one plain message ("no CUDA device"), the runtime's text as its detail, for every call.
TEST(HostileInput, NoGpuIsOneStory) {
  if (!backend_built(Backend::cuda)) GTEST_SKIP() << "no CUDA backend in this build";
  if (core::cuda_device_present(nullptr)) GTEST_SKIP() << "a CUDA device is present";
  void* ws = nullptr;
  size_t size = 0;
  std::vector<std::uint16_t> buf(16, 0x3F80);
  for (metrale_backend backend : {METRALE_BACKEND_CUDA, METRALE_BACKEND_AUTO}) {
    EXPECT_EQ(metrale_workspace_get(backend, &ws, &size), METRALE_STATUS_UNSUPPORTED);
    EXPECT_EQ(last_error().rfind("metrale_workspace_get: the cuda backend cannot run here: no CUDA "
                                 "device (",
                                 0),
              0u)
        << last_error();
  }
  EXPECT_EQ(metrale_bf16_gemm_act_weight_t(buf.data(), buf.data(), buf.data(), 1, 1, 16, nullptr,
                                           0, nullptr),
            METRALE_STATUS_UNSUPPORTED);
  EXPECT_NE(last_error().find("cannot run here: no CUDA device ("), std::string::npos)
      << last_error();
  EXPECT_EQ(metrale_workspace_get(METRALE_BACKEND_CUBLASLT, &ws, &size), METRALE_STATUS_UNSUPPORTED);
  EXPECT_NE(last_error().find("cannot run here: no CUDA device ("), std::string::npos)
      << last_error();
}

}  // namespace
}  // namespace metrale
