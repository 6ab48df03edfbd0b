// The C ABI: statuses and metrale_last_error() (thread-local, "" after a success), the names and
// the version, and the seed-shaped entry points' own checks (M_total = offsets[num_experts],
// per-expert host arrays non-null, src_n_major, the C function named in each message).
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "seed_arrays.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::ptr_bits;
using test::SeedArrays;

std::string last_error() {
  return metrale_last_error();
}

TEST(CAbi, StatusNamesVersionAndBuilds) {
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_OK), "ok");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_NOT_BUILT), "not_built");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_CUDA_ERROR), "cuda_error");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_WORKSPACE_TOO_SMALL), "workspace_too_small");
  EXPECT_STREQ(metrale_status_name(METRALE_STATUS_INTERNAL), "internal");
  EXPECT_STREQ(metrale_status_name(42), "unknown_status");
  EXPECT_STREQ(metrale_version(), METRALE_VERSION_STRING);
  EXPECT_EQ(metrale_backend_built(METRALE_BACKEND_CPU), 1);
  EXPECT_EQ(metrale_backend_built(static_cast<metrale_backend>(17)), 0);
#ifdef METRALE_HAS_CUDA
  EXPECT_EQ(metrale_backend_built(METRALE_BACKEND_CUDA), 1);
#else
  EXPECT_EQ(metrale_backend_built(METRALE_BACKEND_CUDA), 0);
  EXPECT_EQ(metrale_backend_built(METRALE_BACKEND_CUBLASLT), 0);
#endif
#ifndef METRALE_HAS_CUTLASS
  EXPECT_EQ(metrale_backend_built(METRALE_BACKEND_CUTLASS), 0);
#endif
}

TEST(CAbi, LastErrorIsSetOnFailureAndClearedOnSuccess) {
  std::vector<std::uint16_t> act(16, 0x3F80), w(16, 0x3F80), out(1);
  EXPECT_EQ(metrale_cpu_nvfp4_gemm_bf16_act_weight_t(act.data(), w.data(), w.data(), 1.0f,
                                                     out.data(), 1, 1, 3000, nullptr, 0, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_gemm_bf16_act_weight_t: K = 3000 is not a multiple of 16");
  EXPECT_EQ(metrale_cpu_bf16_gemm_act_weight_t(act.data(), w.data(), out.data(), 1, 1, 16, nullptr,
                                               0, nullptr),
            METRALE_STATUS_OK);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(out[0], 0x4180) << "1·1 summed over K = 16 is 16.0 (bf16 0x4180)";
}

// Each thread fails with its own message and must read back exactly that one.
TEST(CAbi, LastErrorIsThreadLocal) {
  constexpr int kThreads = 8;
  std::vector<std::string> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &seen] {
      std::vector<std::uint16_t> buf(64, 0x3F80);
      for (int round = 0; round < 200; ++round) {
        // Thread t asks for M = -1 - t: a different message per thread.
        metrale_cpu_bf16_gemm_act_weight_t(buf.data(), buf.data(), buf.data(), -1 - t, 1, 16,
                                           nullptr, 0, nullptr);
        std::this_thread::yield();
        const std::string mine = metrale_last_error();
        if (mine != "metrale_cpu_bf16_gemm_act_weight_t: M = " + std::to_string(-1 - t) +
                        ", expected M >= 0") {
          seen[t] = "round " + std::to_string(round) + ": " + mine;
          return;
        }
      }
      seen[t] = "ok";
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[t], "ok") << "thread " << t;
  // A thread that never failed sees "".
  std::string fresh = "unset";
  std::thread([&fresh] { fresh = metrale_last_error(); }).join();
  EXPECT_EQ(fresh, "");
}

metrale_status down(SeedArrays& s, const std::vector<std::int32_t>& offsets, int32_t experts) {
  return metrale_cpu_nvfp4_grouped_down(s.a.data(), s.packed_ptrs.data(), s.scale_ptrs.data(),
                                        s.s2.data(), s.c.data(), offsets.data(), experts, 8, 32,
                                        nullptr, 0, nullptr);
}

TEST(CAbiSeed, GroupedOffsetsRules) {
  SeedArrays s;
  EXPECT_EQ(down(s, {0, 4, 9}, 2), METRALE_STATUS_OK) << last_error();
  EXPECT_EQ(down(s, {-1, 4, 9}, 2), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_down: expert_offsets[0] = -1 is negative, expected >= 0");
  EXPECT_EQ(down(s, {0, 9, 4}, 2), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("metrale_cpu_nvfp4_grouped_down: expert_offsets[2] = 4 < "
                              "expert_offsets[1] = 9"),
            std::string::npos)
      << last_error();
  EXPECT_EQ(down(s, {0, 4, 4}, 2), METRALE_STATUS_OK) << "an empty expert: " << last_error();
  EXPECT_EQ(down(s, {0}, 0), METRALE_STATUS_OK) << "zero experts: " << last_error();
  EXPECT_EQ(down(s, {0}, -3), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_down: num_experts = -3, expected "
            "num_experts >= 0");
  EXPECT_EQ(metrale_cpu_nvfp4_grouped_down(s.a.data(), s.packed_ptrs.data(), s.scale_ptrs.data(),
                                           s.s2.data(), s.c.data(), nullptr, 2, 8, 32, nullptr, 0,
                                           nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_down: expert_offsets is null, expected a "
            "valid pointer");
}

TEST(CAbiSeed, PerExpertArraysAndScale2) {
  SeedArrays s;
  const std::vector<std::int32_t> offsets = {0, 4, 9};
  EXPECT_EQ(metrale_cpu_nvfp4_grouped_gate_up(
                s.a.data(), s.packed_ptrs.data(), nullptr, s.s2.data(), s.packed_ptrs.data(),
                s.scale_ptrs.data(), s.s2.data(), s.c.data(), s.c2.data(), offsets.data(), 2, 8, 32,
                nullptr, 0, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_gate_up: gate_scale_ptrs is null, expected "
            "a valid pointer");
  std::vector<float> bad = {1.0f, NAN};
  std::vector<std::int32_t> ids(9, 0);
  EXPECT_EQ(test::seed_fused(s, ids.data(), offsets, bad.data()), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_gate_up_fused: up_scale2_vals[1] = nan is "
            "not finite and > 0");
  // The seed form of the fused call has no token count: ids are checked only for sign.
  ids[7] = -4;
  EXPECT_EQ(test::seed_fused(s, ids.data(), offsets), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_nvfp4_grouped_gate_up_fused: sorted_token_ids[7] = -4 is "
            "negative, expected a row of a_bf16");
}

TEST(CAbiSeed, SwizzleFlagAndTransposeNames) {
  std::vector<std::uint8_t> in(64, 0x38), out(512);
  EXPECT_EQ(metrale_cpu_pack_weight_sfb(in.data(), out.data(), 8, 64, 2, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_pack_weight_sfb: src_n_major = 2, expected 1 (scale_in "
            "is [K/16, N]) or 0 ([N, K/16])");
  EXPECT_EQ(metrale_cpu_transpose_nvfp4_packed_ntok(in.data(), nullptr, 8, 64, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_cpu_transpose_nvfp4_packed_ntok: dst_packed_t is null, "
            "expected a valid pointer");
}

TEST(CAbiEx, GroupedExAndQueries) {
  SeedArrays s;
  const std::vector<std::int32_t> offsets = {0, 4, 9};
  const metrale_groups groups{sizeof(metrale_groups), offsets.data(), 0, 2, 16, 0};
  const metrale_expert_weights proj{s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data()};
  void* out[1] = {s.c.data()};
  const metrale_exec cpu{sizeof(metrale_exec), METRALE_BACKEND_CPU, nullptr, 0, nullptr, -1};
  EXPECT_EQ(metrale_nvfp4_grouped_ex(s.a.data(), 16, nullptr, &proj, out, 1, METRALE_SCALE_SFB,
                                     &groups, 8, 32, &cpu),
            METRALE_STATUS_OK)
      << last_error();
  const metrale_groups too_few{sizeof(metrale_groups), offsets.data(), 0, 2, 8, 0};
  EXPECT_EQ(metrale_nvfp4_grouped_ex(s.a.data(), 16, nullptr, &proj, out, 1, METRALE_SCALE_SFB,
                                     &too_few, 8, 32, &cpu),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_nvfp4_grouped_ex: groups->offsets[2] = 9 > groups->m_total = 8");
  EXPECT_EQ(metrale_nvfp4_grouped_ex(s.a.data(), 16, nullptr, &proj, out, 1, METRALE_SCALE_SFB,
                                     nullptr, 8, 32, &cpu),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_nvfp4_grouped_ex: groups is null, expected a valid pointer");
  size_t bytes = 99;
  EXPECT_EQ(metrale_nvfp4_grouped_workspace_size(METRALE_BACKEND_CPU, &groups, 8, 32, 1, &bytes),
            METRALE_STATUS_OK);
  EXPECT_EQ(bytes, 0u);
  // Without host offsets the query sizes for the bound, which the call would refuse past M_total.
  const metrale_groups unbounded{sizeof(metrale_groups), nullptr, 0, 2, 8, 50};
  EXPECT_EQ(
      metrale_nvfp4_grouped_workspace_size(METRALE_BACKEND_CPU, &unbounded, 8, 32, 1, &bytes),
      METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_nvfp4_grouped_workspace_size: groups->max_rows_per_expert = 50 is outside "
            "[0, groups->m_total = 8], expected a bound on every expert's rows (no offsets are "
            "read on the host)");
  bytes = 99;
  EXPECT_EQ(metrale_gemm_workspace_size(METRALE_BACKEND_CPU, 4, 8, 32, &bytes), METRALE_STATUS_OK);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(metrale_gemm_workspace_size(METRALE_BACKEND_CPU, 4, 0, 32, &bytes),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_gemm_workspace_size: N = 0, expected N > 0");
}

}  // namespace
}  // namespace metrale
