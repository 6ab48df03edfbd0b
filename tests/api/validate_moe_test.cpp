// Validation of the MoE layer through the C++ API on the CPU backend: every refusal names the
// argument and its value, and nothing is written (out stays poisoned). One valid layer (8
// experts, top-2, softmax routing); each test breaks one thing. Then the CUDA layer's own limits
// and the reference backends' refusal, on any machine.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "core/device.hpp"
#include "cpu/moe_fixture.hpp"

namespace metrale {
namespace {

using test::fails_with;
using test::MoeFixture;
using test::succeeds;

constexpr Exec kCpu{Backend::cpu};
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

struct MoeValidate : ::testing::Test {
  MoeFixture f{8, 2, 3};
  std::vector<bf16_bits> out = f.poisoned_out();
  MoeTokens tokens = f.with_logits();
  std::vector<std::int32_t> ids = {0, 1, 2, 3, 4, 5};
  std::vector<float> weights = std::vector<float>(6, 0.5f);

  void SetUp() override { tokens.out = out.data(); }

  void precomputed() {
    f.layer.routing = MoeRouting::precomputed;
    tokens.router_logits = nullptr;
    tokens.topk_ids = ids.data();
    tokens.topk_weights = weights.data();
  }

  void deepseek(int n_group, int topk_group) {
    f.layer.routing = MoeRouting::sigmoid_grouped_topk;
    f.layer.n_group = n_group;
    f.layer.topk_group = topk_group;
  }

  // Refused with `status` and a message holding `text`; out not written.
  ::testing::AssertionResult refused(const std::string& text,
                                     Status status = Status::invalid_argument) {
    const std::vector<bf16_bits> before = out;
    const auto r = fails_with(moe_forward(f.layer, tokens, kCpu), status, "moe_forward: " + text);
    if (r && out != before) return ::testing::AssertionFailure() << "out was written";
    return r;
  }
};

TEST_F(MoeValidate, ValidLayerRuns) {
  EXPECT_TRUE(succeeds(moe_forward(f.layer, tokens, kCpu)));
  precomputed();
  EXPECT_TRUE(succeeds(moe_forward(f.layer, tokens, kCpu)));
}

TEST_F(MoeValidate, TopKBeyondTheExperts) {
  f.layer.top_k = 9;
  EXPECT_TRUE(refused("layer.top_k = 9 is outside [1, layer.num_experts = 8]"));
  f.layer.top_k = 0;
  EXPECT_TRUE(refused("layer.top_k = 0 is outside [1, layer.num_experts = 8]"));
}

TEST_F(MoeValidate, Shapes) {
  struct Bad {
    std::int32_t MoeLayer::*field;
    std::int32_t value;
    const char* text;
  };
  for (const Bad& bad :
       {Bad{&MoeLayer::hidden_size, 40, "layer.hidden_size = 40 is not a multiple of 16"},
        Bad{&MoeLayer::intermediate_size, 0,
            "layer.intermediate_size = 0, expected layer.intermediate_size > 0"},
        Bad{&MoeLayer::num_local_experts, 4,
            "layer.num_local_experts = 4 != layer.num_experts = 8, expected every expert local "
            "(no layer.expert_map)"}}) {
    const MoeLayer good = f.layer;
    f.layer.*bad.field = bad.value;
    EXPECT_TRUE(refused(bad.text));
    f.layer = good;
  }
  tokens.num_tokens = -1;
  EXPECT_TRUE(refused("tokens.num_tokens = -1, expected tokens.num_tokens >= 0"));
}

TEST_F(MoeValidate, IdsOutOfRangeAndNonFiniteWeights) {
  precomputed();
  ids[2] = 8;
  EXPECT_TRUE(refused("tokens.topk_ids[1][0] = 8 is outside [0, layer.num_experts = 8)"));
  ids[2] = -1;
  EXPECT_TRUE(refused("tokens.topk_ids[1][0] = -1 is outside [0, layer.num_experts = 8)"));
  ids[2] = 2;
  weights[5] = kNan;
  EXPECT_TRUE(refused("tokens.topk_weights[2][1] = nan is not finite"));
}

TEST_F(MoeValidate, NanLogits) {
  f.logits[2 * 8 + 5] = kNan;
  EXPECT_TRUE(refused("tokens.router_logits[2][5] = nan is not finite"));
  std::vector<bf16_bits> logits16(f.logits.size(), 0x3F80);
  logits16[9] = 0x7F80;  // +Inf
  tokens.router_logits = logits16.data();
  tokens.logits_dtype = DType::bf16;
  EXPECT_TRUE(refused("tokens.router_logits[1][1] = inf is not finite"));
}

TEST_F(MoeValidate, GroupLimitedRouting) {
  deepseek(3, 1);
  EXPECT_TRUE(refused("layer.n_group = 3 does not divide layer.num_experts = 8"));
  deepseek(4, 5);
  EXPECT_TRUE(refused("layer.topk_group = 5 is outside [1, layer.n_group = 4]"));
  deepseek(8, 1);
  EXPECT_TRUE(refused("layer.top_k = 2 > 1 experts in the layer.topk_group = 1 groups kept"));
  deepseek(4, 2);
  EXPECT_TRUE(succeeds(moe_forward(f.layer, tokens, kCpu)));
  std::vector<float> bias(8, 0.0f);
  bias[6] = kNan;
  f.layer.correction_bias = bias.data();
  EXPECT_TRUE(refused("layer.correction_bias[6] = nan is not finite"));
}

TEST_F(MoeValidate, OptionsOtherRoutingsDoNotRead) {
  f.layer.n_group = 2;
  EXPECT_TRUE(refused("layer.n_group = 2, layer.topk_group = 1, expected 1 and 1"));
  f.layer.n_group = 1;
  const std::vector<float> bias(8, 0.0f);
  f.layer.correction_bias = bias.data();
  EXPECT_TRUE(refused("layer.correction_bias is set, but layer.routing = 0 (softmax_topk)"));
  f.layer.correction_bias = nullptr;
  tokens.topk_ids = ids.data();
  EXPECT_TRUE(refused("tokens.topk_ids or tokens.topk_weights is set, but layer.routing = 0"));
  precomputed();
  tokens.router_logits = f.logits.data();
  EXPECT_TRUE(refused("tokens.router_logits is set, but layer.routing = 2 (precomputed)"));
}

TEST_F(MoeValidate, EnumsAndActivationParameters) {
  f.layer.routing = static_cast<MoeRouting>(7);
  EXPECT_TRUE(refused("layer.routing = 7, expected 0 (softmax_topk)"));
  f.layer.routing = MoeRouting::softmax_topk;
  f.layer.activation = static_cast<MoeActivation>(5);
  EXPECT_TRUE(refused("layer.activation = 5, expected 0 (silu) or 1 (swiglu_clamped)"));
  f.layer.activation = MoeActivation::swiglu_clamped;
  f.layer.swiglu_limit = 0.0f;
  EXPECT_TRUE(refused("layer.swiglu_limit = 0 is not finite and > 0"));
  f.layer.swiglu_limit = 7.0f;
  f.layer.routed_scaling_factor = 0.0f;
  EXPECT_TRUE(refused("layer.routed_scaling_factor = 0 is not finite and > 0"));
  f.layer.routed_scaling_factor = 1.0f;
  f.layer.scale_layout = static_cast<ScaleLayout>(-1);
  EXPECT_TRUE(refused("layer.scale_layout = -1, expected 0 ([K/16, N]) or 1 (SFB)"));
  f.layer.scale_layout = ScaleLayout::k16_by_n;
  f.layer.weight_layout = static_cast<WeightLayout>(5);
  EXPECT_TRUE(refused("layer.weight_layout = 5, expected 0 (packed) or 1 (prepacked)"));
  f.layer.weight_layout = WeightLayout::packed;
  tokens.logits_dtype = static_cast<DType>(3);
  EXPECT_TRUE(refused("tokens.logits_dtype = 3, expected 0 (f32) or 1 (bf16)"));
}

TEST_F(MoeValidate, ExpertPointersOfRoutableExperts) {
  std::vector<std::uint64_t> packed = f.gate.packed_ptrs;
  packed[3] = 0;
  f.layer.gate.packed_ptrs = packed.data();
  EXPECT_TRUE(
      refused("layer.gate.packed_ptrs[3] is null, expected local expert 3's packed "
              "weight (it can be routed)"));
  f.layer.gate.packed_ptrs = f.gate.packed_ptrs.data();
  std::vector<float> s2 = f.down.scale2;
  s2[1] = kNan;
  f.layer.down.scale2_vals = s2.data();
  EXPECT_TRUE(refused("layer.down.scale2_vals[1] = nan is not finite and > 0"));
  f.layer.down.scale2_vals = f.down.scale2.data();
  f.layer.up.scale_ptrs = nullptr;
  EXPECT_TRUE(refused("layer.up.scale_ptrs is null"));
  f.layer.up.scale_ptrs = f.up.scale_ptrs.data();
  f.add_biases();
  f.bias_ptrs[2][7] = 0;
  EXPECT_TRUE(refused("layer.down_bias_ptrs[7] is null, expected local expert 7's bias"));
  // A bias is bf16: an odd address is refused before the CPU backend reads it (UBSan found the
  // misaligned load in fuzz_abi_grouped).
  f.bias_ptrs[2][7] = f.bias_ptrs[2][6] + 1;
  EXPECT_TRUE(refused("layer.down_bias_ptrs[7] = 0x"));
  EXPECT_TRUE(fails_with(moe_forward(f.layer, tokens, kCpu), Status::invalid_argument,
                         "is not 2-byte aligned, expected bf16 data"));
}

TEST_F(MoeValidate, ExpertMap) {
  f.set_map({0, 1, 4, 3, -1, -1, -1, -1});
  f.layer.num_local_experts = 4;
  EXPECT_TRUE(refused("layer.expert_map[2] = 4 is outside [-1, layer.num_local_experts = 4)"));
  // Local expert 2 is reached by no global expert: its pointers may be null.
  f.map[2] = -1;
  std::vector<std::uint64_t> packed = f.gate.packed_ptrs;
  packed[2] = 0;
  f.layer.gate.packed_ptrs = packed.data();
  EXPECT_TRUE(succeeds(moe_forward(f.layer, tokens, kCpu)));
  f.map[5] = 2;  // now it can be routed
  EXPECT_TRUE(refused("layer.gate.packed_ptrs[2] is null"));
}

// Every expert remote: the tables may be null and num_local_experts any size. Neither the checks
// nor the CPU backend may cost O(num_local_experts): with INT32_MAX they once walked 2^31 local
// experts nine times and allocated three int32 arrays of that length (24 GiB) for the grouping.
TEST_F(MoeValidate, ManyLocalExpertsAllRemote) {
  f.set_map(std::vector<std::int32_t>(8, -1));
  f.layer.num_local_experts = std::numeric_limits<std::int32_t>::max();
  f.layer.gate = f.layer.up = f.layer.down = ExpertWeights{};
  EXPECT_TRUE(succeeds(moe_forward(f.layer, tokens, kCpu)));
  EXPECT_EQ(out, std::vector<bf16_bits>(out.size(), 0));  // no slot is local: Σ over none
}

TEST_F(MoeValidate, TokenBuffers) {
  tokens.hidden = nullptr;
  EXPECT_TRUE(refused("tokens.hidden is null"));
  tokens.hidden = f.hidden.data();
  tokens.out = nullptr;
  EXPECT_TRUE(refused("tokens.out is null"));
  tokens.out = out.data();
  tokens.router_logits = nullptr;
  EXPECT_TRUE(refused("tokens.router_logits is null"));
}

// The reference arms are GEMMs: they refuse the layer by name, before touching anything.
TEST_F(MoeValidate, ReferenceBackendsRefuseTheLayer) {
  for (Backend backend : {Backend::cublaslt, Backend::cutlass}) {
    const Result r = moe_forward(f.layer, tokens, Exec{backend});
    std::size_t bytes = 1;
    const Result w = moe_workspace_size(backend, f.layer, 3, &bytes);
    if (backend_built(backend)) {
      EXPECT_TRUE(fails_with(r, Status::unsupported, "is a reference GEMM and does not run the MoE layer"));
      EXPECT_TRUE(fails_with(w, Status::unsupported, "is a reference GEMM and does not run the MoE layer"));
      EXPECT_EQ(bytes, 1u);
    } else {
      EXPECT_EQ(r.status, Status::not_built) << r.message;
    }
  }
  EXPECT_EQ(out, f.poisoned_out());
}

// The CUDA layer's own limits, refused before any device is asked for (so on any machine, and on
// these host buffers nothing is ever launched): each case breaks exactly one.
TEST_F(MoeValidate, CudaLimitsAreRefusedBeforeAnythingRuns) {
  if (!backend_built(Backend::cuda)) GTEST_SKIP() << "no CUDA backend in this build";
  const Exec cuda{Backend::cuda};
  MoeLayer layer = f.layer;
  layer.hidden_size = 48;  // a multiple of 16 (valid), not of 32
  EXPECT_TRUE(fails_with(moe_forward(layer, tokens, cuda), Status::unsupported,
                         "moe_forward: layer.hidden_size = 48 is not a multiple of 32"));
  layer = f.layer;
  layer.intermediate_size = 16;
  EXPECT_TRUE(fails_with(moe_forward(layer, tokens, cuda), Status::unsupported,
                         "moe_forward: layer.intermediate_size = 16 is not a multiple of 32"));
  // 2049 experts, every table entry set: valid, but past the routing launch's room.
  const std::vector<std::uint64_t> table(2049, 4096);
  const std::vector<float> scale2(2049, 1.0f);
  layer = f.layer;
  layer.num_experts = layer.num_local_experts = 2049;
  layer.gate = layer.up = layer.down = ExpertWeights{table.data(), table.data(), scale2.data()};
  EXPECT_TRUE(fails_with(moe_forward(layer, tokens, cuda), Status::unsupported,
                         "moe_forward: layer.num_experts = 2049 exceeds the CUDA MoE layer's "
                         "limit of 2048"));
  MoeTokens shifted = tokens;
  shifted.hidden = f.hidden.data() + 1;  // 2-byte aligned (valid), not 16
  EXPECT_TRUE(fails_with(moe_forward(f.layer, shifted, cuda), Status::unsupported,
                         "moe_forward: tokens.hidden = "));
  std::vector<std::uint64_t> packed(f.gate.packed_ptrs);
  packed[3] += 8;
  layer = f.layer;
  layer.gate.packed_ptrs = packed.data();
  EXPECT_TRUE(fails_with(moe_forward(layer, tokens, cuda), Status::unsupported,
                         "moe_forward: layer.gate.packed_ptrs[3] = "));
  EXPECT_EQ(out, f.poisoned_out());
}

// Every expert remote: the tables may be null, the SFB scale table alone too. The CUDA layer's
// pointer checks, which run before any device is asked for, skip a null table (they once read
// scale_ptrs[e] through null: SIGSEGV); then the call says there is no device. (With one, these
// host buffers must not reach a kernel: tests/cuda runs remote experts on the device.)
TEST_F(MoeValidate, CudaAllRemoteWithNullScaleTables) {
  if (!backend_built(Backend::cuda)) GTEST_SKIP() << "no CUDA backend in this build";
  if (core::cuda_device_present(nullptr))
    GTEST_SKIP() << "a CUDA device is present: tests/cuda runs the layer there";
  f.set_map(std::vector<std::int32_t>(8, -1));
  f.set_layout(ScaleLayout::sfb);
  for (ExpertWeights* w : {&f.layer.gate, &f.layer.up, &f.layer.down}) w->scale_ptrs = nullptr;
  EXPECT_TRUE(fails_with(moe_forward(f.layer, tokens, Exec{Backend::cuda}), Status::unsupported,
                         "moe_forward: the cuda backend cannot run here: no CUDA device"));
  EXPECT_EQ(out, f.poisoned_out());
}

// The CUDA workspace query refuses what the CUDA layer refuses, instead of sizing it: 2^31 - 1
// remote local experts once came back as 137 GB at T = 1.
TEST_F(MoeValidate, CudaWorkspaceSizeRefusesTheLayersLimits) {
  if (!backend_built(Backend::cuda)) GTEST_SKIP() << "no CUDA backend in this build";
  f.set_map(std::vector<std::int32_t>(8, -1));
  f.layer.num_local_experts = std::numeric_limits<std::int32_t>::max();
  f.layer.gate = f.layer.up = f.layer.down = ExpertWeights{};
  std::size_t bytes = 1;
  EXPECT_TRUE(fails_with(moe_workspace_size(Backend::cuda, f.layer, 1, &bytes), Status::unsupported,
                         "moe_workspace_size: layer.num_local_experts = 2147483647 exceeds the "
                         "CUDA backend's limit of 2048"));
  EXPECT_EQ(bytes, 1u);
}

// Without a device the CUDA backend says so (host buffers are never handed to a kernel); a
// build without it says not built. With a device, tests/cuda/moe_layer_test.cpp runs the layer.
TEST_F(MoeValidate, CudaWithoutDeviceRefuses) {
  if (backend_built(Backend::cuda) && core::cuda_device_present(nullptr))
    GTEST_SKIP() << "a CUDA device is present: tests/cuda runs the layer there";
  for (Backend backend : {Backend::cuda, Backend::automatic}) {
    const Result r = moe_forward(f.layer, tokens, Exec{backend});
    if (backend_built(Backend::cuda)) {
      EXPECT_TRUE(fails_with(r, Status::unsupported, "moe_forward: the cuda backend cannot run here: no CUDA device"));
    } else {
      EXPECT_TRUE(fails_with(r, Status::not_built, "the CUDA backend was not built"));
    }
  }
  EXPECT_EQ(out, f.poisoned_out());
}

TEST_F(MoeValidate, WorkspaceSize) {
  std::size_t bytes = 1;
  EXPECT_TRUE(succeeds(moe_workspace_size(Backend::cpu, f.layer, 4096, &bytes)));
  EXPECT_EQ(bytes, 0u);
  EXPECT_TRUE(fails_with(moe_workspace_size(Backend::cpu, f.layer, -2, &bytes),
                         Status::invalid_argument, "num_tokens = -2"));
  f.layer.top_k = 9;
  EXPECT_TRUE(fails_with(moe_workspace_size(Backend::cpu, f.layer, 1, &bytes),
                         Status::invalid_argument, "moe_workspace_size: layer.top_k = 9"));
  f.layer.top_k = 2;  // T·k past int32, as the call refuses it
  EXPECT_TRUE(fails_with(moe_workspace_size(Backend::cpu, f.layer, 1 << 30, &bytes),
                         Status::invalid_argument,
                         "moe_workspace_size: num_tokens = 1073741824 times layer.top_k = 2 is "
                         "2147483648 expert rows, more than 2147483647 (int32 offsets)"));
}

}  // namespace
}  // namespace metrale
