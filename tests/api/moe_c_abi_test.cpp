// The MoE layer through the C ABI: metrale_moe_forward on the CPU equals the C++ API's result;
// the versioned structs' struct_size is checked (0, a size from a newer header, a null struct)
// with the caller's names (layer->, tokens->); a NULL exec means the automatic backend, which
// refuses the layer without a device; metrale_moe_workspace_size.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/device.hpp"
#include "cpu/moe_fixture.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::MoeFixture;

std::string last_error() {
  return metrale_last_error();
}

metrale_expert_weights c_weights(const ExpertWeights& w) {
  return {w.packed_ptrs, w.scale_ptrs, w.scale2_vals};
}

struct MoeCAbi : ::testing::Test {
  MoeFixture f{8, 2, 3};
  std::vector<bf16_bits> out = f.poisoned_out();
  metrale_moe_layer layer = METRALE_MOE_LAYER_INIT;
  metrale_moe_tokens tokens = METRALE_MOE_TOKENS_INIT;
  metrale_exec cpu = METRALE_EXEC_INIT;

  void SetUp() override {
    layer.num_experts = layer.num_local_experts = 8;
    layer.hidden_size = MoeFixture::kHidden;
    layer.intermediate_size = MoeFixture::kInter;
    layer.top_k = 2;
    layer.scale_layout = METRALE_SCALE_K16_BY_N;
    layer.gate = c_weights(f.layer.gate);
    layer.up = c_weights(f.layer.up);
    layer.down = c_weights(f.layer.down);
    tokens.num_tokens = 3;
    tokens.hidden = f.hidden.data();
    tokens.router_logits = f.logits.data();
    tokens.out = out.data();
    cpu.backend = METRALE_BACKEND_CPU;
  }
};

TEST_F(MoeCAbi, EqualsTheCppApi) {
  ASSERT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_OK) << last_error();
  EXPECT_EQ(last_error(), "");
  std::vector<bf16_bits> cpp = f.poisoned_out();
  MoeTokens t = f.with_logits();
  t.out = cpp.data();
  ASSERT_TRUE(moe_forward(f.layer, t, Exec{Backend::cpu}).ok());
  EXPECT_EQ(out, cpp);
}

TEST_F(MoeCAbi, StructSizesAreChecked) {
  layer.struct_size = 0;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("metrale_moe_forward: layer->struct_size = 0, expected "
                               "sizeof(metrale_moe_layer) = " +
                                   std::to_string(sizeof(metrale_moe_layer)) +
                                   " (set it with METRALE_MOE_LAYER_INIT",
                               0),
            0u)
      << last_error();
  layer.struct_size = sizeof(metrale_moe_layer);
  tokens.struct_size = sizeof(metrale_moe_tokens) + 8;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(
      last_error().find("tokens->struct_size = " + std::to_string(sizeof(metrale_moe_tokens) + 8) +
                        " is larger than this library's metrale_moe_tokens"),
      std::string::npos)
      << last_error();
  tokens.struct_size = sizeof(metrale_moe_tokens) - 8;  // no older layout exists
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(metrale_moe_forward(nullptr, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_moe_forward: layer is null, expected a valid pointer");
  EXPECT_EQ(out, f.poisoned_out());
}

TEST_F(MoeCAbi, MessagesUseTheCNames) {
  layer.top_k = 9;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_moe_forward: layer->top_k = 9 is outside [1, layer->num_experts = 8]");
  layer.top_k = 2;
  f.logits[4] = NAN;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_moe_forward: tokens->router_logits[0][4] = nan is not finite");
  f.logits[4] = 0.5f;
  layer.scale_layout = 7;
  EXPECT_EQ(metrale_moe_forward(&layer, &tokens, &cpu), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_moe_forward: layer->scale_layout = 7 (0x7), expected 0 ([K/16, N]) or 1 "
            "(SFB), optionally or'ed with METRALE_WEIGHTS_PREPACKED (0x100)");
}

// exec NULL is the automatic backend: CUDA, which (on this host's buffers) must not run. Without
// a device it refuses; a build without CUDA says not built.
TEST_F(MoeCAbi, AutomaticBackendWithoutDeviceRefuses) {
  if (metrale_backend_built(METRALE_BACKEND_CUDA) && core::cuda_device_present(nullptr))
    GTEST_SKIP() << "a CUDA device is present: tests/cuda runs the layer there";
  const metrale_status s = metrale_moe_forward(&layer, &tokens, nullptr);
  if (metrale_backend_built(METRALE_BACKEND_CUDA)) {
    EXPECT_EQ(s, METRALE_STATUS_UNSUPPORTED);
    EXPECT_NE(last_error().find("cannot run here: no CUDA device"), std::string::npos)
        << last_error();
  } else {
    EXPECT_EQ(s, METRALE_STATUS_NOT_BUILT);
  }
  EXPECT_EQ(out, f.poisoned_out());
}

TEST_F(MoeCAbi, WorkspaceSize) {
  size_t bytes = 1;
  EXPECT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CPU, &layer, 64, &bytes), METRALE_STATUS_OK)
      << last_error();
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CPU, &layer, 64, nullptr),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "metrale_moe_workspace_size: bytes is null, expected a valid pointer");
  layer.struct_size = 0;
  EXPECT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CPU, &layer, 64, &bytes),
            METRALE_STATUS_INVALID_ARGUMENT);
}

// The CUDA layer's scratch (routes, the gate/up/activation/down rows, the GEMMs' workspace) is
// sized without a device: it grows with T, and T = 0 needs none.
TEST_F(MoeCAbi, CudaWorkspaceGrowsWithTokens) {
  if (!metrale_backend_built(METRALE_BACKEND_CUDA)) GTEST_SKIP() << "no CUDA backend in this build";
  size_t none = 1, small = 0, large = 0;
  ASSERT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CUDA, &layer, 0, &none), METRALE_STATUS_OK);
  ASSERT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CUDA, &layer, 3, &small), METRALE_STATUS_OK);
  ASSERT_EQ(metrale_moe_workspace_size(METRALE_BACKEND_CUDA, &layer, 300, &large), METRALE_STATUS_OK);
  EXPECT_EQ(none, 0u);
  const size_t rows = 3 * static_cast<size_t>(layer.top_k);
  const size_t gate_up_down = rows * (2 * layer.intermediate_size + layer.hidden_size) * 2;
  EXPECT_GE(small, gate_up_down);
  EXPECT_GT(large, 90 * gate_up_down);
}

}  // namespace
}  // namespace metrale
