// The MoE layer (moe_forward) on the CUDA backend against the CPU oracle, through the harness
// (`metrale check --op moe`): small layers at the edges (no tokens, one token, one expert, an
// empty expert, a token naming one expert twice, 256 experts, an expert past 64 rows; every
// router, both activations, biases) in exact and realistic mode, then the five model presets
// with their own routing and activation at T = 1, 64 and 512 (realistic; a token sample for the
// big ones); the small layers again on prepacked weights. A refusal is a failure: the CUDA
// backend runs the layer.
// tests/cuda/moe_layer_test.cpp has the directed cases (graph replay, determinism, the expert
// map), tests/cuda/moe_layer_inputs_test.cpp bad token data and refusals.
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"

namespace metrale::cuda_test {
namespace {

// Runs the case and requires a pass (a skip or a refusal fails), counting failures.
void run_moe(const check::Case& c, int& failures) {
  if (!expect_pass(c)) ++failures;
}

struct LayerShape {
  int hidden, inter;
  check::Routing routing;
  check::MoeRecipe recipe;
};

// DeepSeek-V3's group-limited routing on a small layer (8 groups, 2 of them kept), and the
// caller's own ids and weights.
check::MoeRecipe grouped_recipe() {
  check::MoeRecipe grouped = check::with_router({}, MoeRouting::sigmoid_grouped_topk);
  grouped.n_group = 8;
  grouped.topk_group = 2;
  return grouped;
}
check::MoeRecipe precomputed_recipe() {
  return check::with_router({}, MoeRouting::precomputed);
}

std::vector<LayerShape> layer_shapes() {
  const check::MoeRecipe grouped = grouped_recipe(), precomputed = precomputed_recipe();
  return {
      {64, 32, {0, 4, 2, RoutingKind::uniform}, {}},
      {64, 32, {1, 1, 1, RoutingKind::uniform}, {}},
      {96, 64, {3, 8, 2, RoutingKind::uniform}, check::kGptOssRecipe},
      {64, 96, {17, 16, 4, RoutingKind::skew}, check::kDeepSeekV3Recipe},
      {128, 64, {33, 16, 4, RoutingKind::empty_expert}, grouped},
      {64, 64, {20, 8, 2, RoutingKind::one_expert}, precomputed},
      {32, 64, {64, 256, 8, RoutingKind::skew}, {}},
      {2048, 64, {65, 32, 4, RoutingKind::uniform}, check::kGptOssRecipe},
      // 80 rows on one expert, one 16-token decode launch: an expert past 64 rows sums K in one
      // chunk, here 3 and 2 k-tiles, not whole stages of 4 (a sum that lost all but its last
      // stage until e4c3d2e, as gpt-oss's K = 2880 did).
      {160, 96, {80, 8, 1, RoutingKind::one_expert}, precomputed},
  };
}

// The stream family forced on every grouped call of the layer (METRALE_CUDA_KERNEL=sm90-stream):
// the shapes it takes (H and I multiples of 64, prepacked in the fragment order), decode sizes
// and past them; one token; an expert past its widest token tile (40 rows: two tiles); 256
// experts on device offsets; gpt-oss's biases (the activation kernel) and the activation applied
// to gate/up's sums as it stores them (the others: nvfp4_grouped_to_glu).
std::vector<LayerShape> stream_layer_shapes() {
  const check::MoeRecipe grouped = grouped_recipe(), precomputed = precomputed_recipe();
  return {
      {64, 64, {0, 4, 2, RoutingKind::uniform}, {}},
      {64, 64, {1, 1, 1, RoutingKind::uniform}, {}},
      {128, 64, {3, 8, 2, RoutingKind::uniform}, check::kGptOssRecipe},
      {128, 64, {17, 16, 4, RoutingKind::skew}, check::kDeepSeekV3Recipe},
      {128, 64, {33, 16, 4, RoutingKind::empty_expert}, grouped},
      {64, 64, {20, 8, 2, RoutingKind::one_expert}, precomputed},
      {192, 128, {64, 256, 8, RoutingKind::skew}, {}},
      {2048, 64, {65, 32, 4, RoutingKind::uniform}, check::kGptOssRecipe},
  };
}

// prepacked: every projection's weights in prepack_nvfp4's layout, for the oracle too;
// `layout`: what prepacked means (Case::prepacked_layout; "" the default, the fragment order);
// `kernel`: a family forced (Case::cuda_kernel), "" the dispatcher's choice.
void sweep(check::Mode mode, bool prepacked = false, const char* layout = "",
           const std::vector<LayerShape>& shapes = layer_shapes(), const char* kernel = "") {
  int failures = 0;
  std::uint64_t seed = mode == check::Mode::exact ? 900 : 950;
  for (const LayerShape& s : shapes) {
    check::Case c = moe_case(mode, s.hidden, s.inter, s.routing, s.recipe, ++seed);
    c.prepacked = prepacked;
    c.prepacked_layout = layout;
    c.cuda_kernel = kernel;
    run_moe(c, failures);
    if (failures >= kMaxReportedFailures) return;
  }
}

TEST(MoeLayer, ExactSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::exact);
}

TEST(MoeLayer, RealisticSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::realistic);
}

TEST(MoeLayer, PrepackedExactSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::exact, true);
}

TEST(MoeLayer, PrepackedRealisticSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::realistic, true);
}

// Prepacked in the halves' layout (METRALE_PREPACKED_LAYOUT=halves): the decode family stages K
// in its decode order, its gated input (the layer's down) too. (PrepackedExactSweep: the default,
// the fragment order, K in natural order but for a K % 64 tail.)
TEST(MoeLayer, HalvesLayoutExactSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::exact, true, "halves");
}

TEST(MoeLayer, StreamFamilyExactSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::exact, true, "", stream_layer_shapes(), "sm90-stream");
}

TEST(MoeLayer, StreamFamilyRealisticSweep) {
  METRALE_SKIP_WITHOUT_GPU();
  sweep(check::Mode::realistic, true, "", stream_layer_shapes(), "sm90-stream");
}

TEST(MoeLayer, Presets) {
  METRALE_SKIP_WITHOUT_GPU();
  int failures = 0;
  for (const check::ModelPreset& model : check::model_presets()) {
    for (int tokens : {1, 64, 512}) {
      check::Case c = moe_case(check::Mode::realistic, 0, 0, {}, {}, 5000 + tokens);
      check::apply_model(c, model, tokens);
      run_moe(c, failures);
    }
  }
}

}  // namespace
}  // namespace metrale::cuda_test
