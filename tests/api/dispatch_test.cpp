// Dispatch: which backend a call reaches and what it says when that backend is absent. The
// CUTLASS arm is reached only by name or with METRALE_CUTLASS_GEMM=1; a build without it (or
// without CUDA) answers not_built with the message the user needs, and nothing crashes.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "api/select.hpp"
#include "api_test_util.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::fails_with;
using test::ScopedEnv;

constexpr const char* kCutlassMissing =
    "CUTLASS support was not built; set CUTLASS_HOME or pip install nvidia-cutlass and rebuild";

struct Tiny {
  std::vector<bf16_bits> act = std::vector<bf16_bits>(2 * 16, 0x3F80);
  std::vector<bf16_bits> w = std::vector<bf16_bits>(2 * 16, 0x3F80);
  std::vector<bf16_bits> out = std::vector<bf16_bits>(4);
  DenseGemm args() { return {act.data(), w.data(), out.data(), 2, 2, 16}; }
};

TEST(Dispatch, CutlassNotBuilt) {
  if (backend_built(Backend::cutlass)) GTEST_SKIP() << "this build has CUTLASS";
  Tiny t;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{Backend::cutlass}),
                         Status::not_built,
                         std::string("bf16_gemm_act_weight_t: ") + kCutlassMissing));
  // The C family answers the same, naming the C function, for every operation.
  EXPECT_EQ(metrale_cutlass_bf16_gemm_act_weight_t(t.act.data(), t.w.data(), t.out.data(), 2, 2, 16,
                                                   nullptr, 0, nullptr),
            METRALE_STATUS_NOT_BUILT);
  EXPECT_EQ(std::string(metrale_last_error()),
            std::string("metrale_cutlass_bf16_gemm_act_weight_t: ") + kCutlassMissing);
  EXPECT_EQ(metrale_cutlass_bf16_gemm_act_weight_t_64x64(t.act.data(), t.w.data(), t.out.data(), 2,
                                                         2, 16, nullptr, 0, nullptr),
            METRALE_STATUS_NOT_BUILT);
  EXPECT_EQ(metrale_cutlass_transpose_nvfp4_packed_kton(t.act.data(), t.out.data(), 2, 16, nullptr),
            METRALE_STATUS_NOT_BUILT);
}

TEST(Dispatch, CudaNotBuilt) {
  if (backend_built(Backend::cuda)) GTEST_SKIP() << "this build has the CUDA backend";
  Tiny t;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{}), Status::not_built,
                         "bf16_gemm_act_weight_t: the CUDA backend was not built"));
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{Backend::cuda}), Status::not_built,
                         "the CUDA backend was not built"));
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{Backend::cublaslt}),
                         Status::not_built, "the cuBLASLt backend was not built"));
  EXPECT_EQ(metrale_bf16_gemm_act_weight_t(t.act.data(), t.w.data(), t.out.data(), 2, 2, 16,
                                           nullptr, 0, nullptr),
            METRALE_STATUS_NOT_BUILT);
  EXPECT_EQ(std::string(metrale_last_error()),
            "metrale_bf16_gemm_act_weight_t: the CUDA backend was not built");
  int count = -1;
  EXPECT_EQ(metrale_cublaslt_bf16_gemm_act_weight_t_algo(t.act.data(), t.w.data(), t.out.data(), 2,
                                                         2, 16, nullptr, 0, nullptr, 0, &count),
            METRALE_STATUS_NOT_BUILT);
}

// With CUDA built but no usable GPU (CI), a CUDA-side call is refused with a reason, not a crash.
TEST(Dispatch, CudaBuiltButNoDevice) {
  if (!backend_built(Backend::cuda)) GTEST_SKIP() << "no CUDA backend in this build";
  void* ws = nullptr;
  size_t size = 0;
  if (metrale_workspace_get(METRALE_BACKEND_CUDA, &ws, &size) == METRALE_STATUS_OK)
    GTEST_SKIP() << "a CUDA device is present";
  Tiny t;
  const Result r = bf16_gemm_act_weight_t(t.args(), Exec{Backend::cuda});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("bf16_gemm_act_weight_t: "), std::string::npos) << r.message;
}

TEST(Dispatch, CutlassGemmEnvironmentGate) {
  Tiny t;
  {
    ScopedEnv env("METRALE_CUTLASS_GEMM", "yes");
    EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{}), Status::invalid_argument,
                           "METRALE_CUTLASS_GEMM = 'yes', expected 1"));
    // An explicit backend does not consult the gate.
    EXPECT_TRUE(test::succeeds(bf16_gemm_act_weight_t(t.args(), Exec{Backend::cpu})));
  }
  {
    ScopedEnv env("METRALE_CUTLASS_GEMM", "1");
    EXPECT_TRUE(core::cutlass_gemm_enabled());
    if (!backend_built(Backend::cutlass)) {
      EXPECT_TRUE(fails_with(
          bf16_gemm_act_weight_t(t.args(), Exec{}), Status::not_built,
          std::string("bf16_gemm_act_weight_t: METRALE_CUTLASS_GEMM=1, but ") + kCutlassMissing));
    } else {
      EXPECT_EQ(api::select_backend("t", Backend::automatic), Backend::cutlass);
    }
  }
  for (const char* off : {"0", ""}) {
    ScopedEnv env("METRALE_CUTLASS_GEMM", off);
    EXPECT_FALSE(core::cutlass_gemm_enabled());
  }
  ScopedEnv unset("METRALE_CUTLASS_GEMM", std::nullopt);
  EXPECT_FALSE(core::cutlass_gemm_enabled());
  if (backend_built(Backend::cuda)) {
    EXPECT_EQ(api::select_backend("t", Backend::automatic), Backend::cuda)
        << "by default, automatic means our own kernels";
  }
}

TEST(Dispatch, InvalidBackendValue) {
  Tiny t;
  EXPECT_TRUE(fails_with(bf16_gemm_act_weight_t(t.args(), Exec{static_cast<Backend>(-1)}),
                         Status::invalid_argument,
                         "bf16_gemm_act_weight_t: backend = -1, expected 0 (auto), 1 (cpu), 2 "
                         "(cuda), 3 (cutlass) or 4 (cublaslt)"));
  const metrale_exec bad{
      sizeof(metrale_exec), static_cast<metrale_backend>(11), nullptr, 0, nullptr, -1};
  float s2 = 0;
  EXPECT_EQ(metrale_pack_bf16_weight_to_nvfp4_ex(t.act.data(), t.out.data(), t.out.data(), &s2, 2,
                                                 16, &bad),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(metrale_last_error()),
            "metrale_pack_bf16_weight_to_nvfp4_ex: backend = 11, expected 0 (auto), 1 (cpu), 2 "
            "(cuda), 3 (cutlass) or 4 (cublaslt)");
}

// The CPU backend is reached only by asking for it, and cuBLASLt has no packing operations.
TEST(Dispatch, CublasltHasNoPacking) {
  if (!backend_built(Backend::cublaslt)) GTEST_SKIP() << "no cuBLASLt in this build";
  std::vector<std::uint8_t> in(64), out(512);
  EXPECT_TRUE(fails_with(
      pack_weight_sfb({in.data(), out.data(), 8, 64, true}, Exec{Backend::cublaslt}),
      Status::unsupported, "pack_weight_sfb: the cublaslt backend does not implement this"));
}

// `read` with `variable` = `value` refuses it (invalid_argument), naming both, then `expected`.
template <class Read>
void expect_refused_by_name(const char* variable, const char* value, const char* expected,
                            Read read) {
  ScopedEnv env(variable, value);
  try {
    read();
    ADD_FAILURE() << "'" << value << "' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    const std::string want = std::string(variable) + " = '" + value + "', " + expected;
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

// METRALE_MOE_CHECK_INPUTS: 1 on, 0 / empty / unset off, anything else refused by name
// (the CUDA MoE layer's use of it is tests/cuda/moe_layer_inputs_test.cpp's).
TEST(Dispatch, MoeCheckInputsSwitch) {
  {
    ScopedEnv env("METRALE_MOE_CHECK_INPUTS", "1");
    EXPECT_TRUE(core::moe_check_inputs());
  }
  for (const char* off : {"0", ""}) {
    ScopedEnv env("METRALE_MOE_CHECK_INPUTS", off);
    EXPECT_FALSE(core::moe_check_inputs());
  }
  expect_refused_by_name("METRALE_MOE_CHECK_INPUTS", "on", "expected 1",
                         [] { core::moe_check_inputs(); });
  ScopedEnv unset("METRALE_MOE_CHECK_INPUTS", std::nullopt);
  EXPECT_FALSE(core::moe_check_inputs());
}

// METRALE_CUDA_QUANTIZER: lean (the default: unset or empty too) or proven, anything else
// refused by name (the GPU pack tests run both kernels: tests/cuda/ops_sweep_test.cpp).
TEST(Dispatch, CudaQuantizerSwitch) {
  for (const char* lean : {"lean", ""}) {
    ScopedEnv env("METRALE_CUDA_QUANTIZER", lean);
    EXPECT_EQ(core::cuda_quantizer(), core::CudaQuantizer::lean);
  }
  {
    ScopedEnv env("METRALE_CUDA_QUANTIZER", "proven");
    EXPECT_EQ(core::cuda_quantizer(), core::CudaQuantizer::proven);
  }
  expect_refused_by_name("METRALE_CUDA_QUANTIZER", "Lean", "expected lean",
                         [] { core::cuda_quantizer(); });
  ScopedEnv unset("METRALE_CUDA_QUANTIZER", std::nullopt);
  EXPECT_EQ(core::cuda_quantizer(), core::CudaQuantizer::lean);
}

// METRALE_CUDA_DENSE_COPY: tma (the default: unset or empty too) or cp.async, anything else
// refused by name (the GPU test running both: TiledFamily.DenseCopiesByTmaAndCpAsyncExact).
TEST(Dispatch, DenseCopySwitch) {
  for (const char* tma : {"tma", ""}) {
    ScopedEnv env("METRALE_CUDA_DENSE_COPY", tma);
    EXPECT_FALSE(core::dense_copy_by_cp_async());
  }
  {
    ScopedEnv env("METRALE_CUDA_DENSE_COPY", "cp.async");
    EXPECT_TRUE(core::dense_copy_by_cp_async());
  }
  expect_refused_by_name("METRALE_CUDA_DENSE_COPY", "cpasync", "expected tma",
                         [] { core::dense_copy_by_cp_async(); });
  ScopedEnv unset("METRALE_CUDA_DENSE_COPY", std::nullopt);
  EXPECT_FALSE(core::dense_copy_by_cp_async());
}

// METRALE_CUDA_DENSE_SCHEDULE: auto (the default: unset or empty too), tiles, stream-k or
// stream-k-pairs, anything else refused by name (the GPU tests running stream-K:
// TiledFamily.DenseStreamKExactAndRealistic, Schedules/GraphStreamK.*).
TEST(Dispatch, DenseScheduleSwitch) {
  using core::DenseSchedule;
  const std::pair<const char*, DenseSchedule> values[] = {
      {"", DenseSchedule::automatic},
      {"auto", DenseSchedule::automatic},
      {"tiles", DenseSchedule::tiles},
      {"stream-k", DenseSchedule::stream_k},
      {"stream-k-pairs", DenseSchedule::stream_k_pairs}};
  for (const auto& [value, schedule] : values) {
    ScopedEnv env("METRALE_CUDA_DENSE_SCHEDULE", value);
    EXPECT_EQ(core::dense_schedule(), schedule) << value;
  }
  expect_refused_by_name("METRALE_CUDA_DENSE_SCHEDULE", "streamk", "expected auto",
                         [] { core::dense_schedule(); });
  ScopedEnv unset("METRALE_CUDA_DENSE_SCHEDULE", std::nullopt);
  EXPECT_EQ(core::dense_schedule(), DenseSchedule::automatic);
}

}  // namespace
}  // namespace metrale
