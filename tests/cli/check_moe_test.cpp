// Self-tests of `metrale check --op moe`'s harness that need no GPU: the presets' recipes, the
// exact-mode premise of the down projection, the whole case run on Backend::cpu against the oracle
// (host memory: every router, activation and routing kind, both modes), the realistic rule
// catching a layer that drops one slot of one token, and the reproduction command.
#include <string>

#include <gtest/gtest.h>

#include "check/check.hpp"
#include "check/compare.hpp"
#include "check/inputs.hpp"
#include "check/moe_case.hpp"
#include "check/moe_reference.hpp"
#include "check/weights.hpp"
#include "format/bf16.hpp"
#include "format/e2m1.hpp"
#include "format/e4m3.hpp"

namespace metrale::check {
namespace {

Case moe_case(Mode mode, std::int32_t hidden, std::int32_t inter, Routing routing,
              MoeRecipe recipe = {}, std::uint64_t seed = 1) {
  Case c;
  c.op = Op::moe;
  c.mode = mode;
  c.backend = Backend::cpu;  // host memory: the harness against its own oracle
  c.moe = MoeCase{hidden, inter, recipe};
  c.routing = routing;
  c.seed = seed;
  return c;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckMoe, PresetsCarryTheirModelsRecipes) {
  const MoeRecipe deepseek = find_model("deepseek-v3")->moe;
  EXPECT_EQ(deepseek.routing, MoeRouting::sigmoid_grouped_topk);
  EXPECT_EQ(deepseek.n_group, 8);
  EXPECT_EQ(deepseek.topk_group, 4);
  EXPECT_FLOAT_EQ(deepseek.routed_scaling_factor, 2.5f);
  EXPECT_TRUE(deepseek.correction_bias && deepseek.renormalize);
  const MoeRecipe gpt_oss = find_model("gpt-oss-120b")->moe;
  EXPECT_EQ(gpt_oss.routing, MoeRouting::softmax_topk);
  EXPECT_EQ(gpt_oss.activation, MoeActivation::swiglu_clamped);
  EXPECT_FLOAT_EQ(gpt_oss.swiglu_alpha, 1.702f);
  EXPECT_FLOAT_EQ(gpt_oss.swiglu_limit, 7.0f);
  EXPECT_TRUE(gpt_oss.biases && gpt_oss.renormalize);
  for (const char* name : {"qwen3-30b-a3b", "mixtral-8x7b", "qwen3-next-80b-a3b"}) {
    const MoeRecipe r = find_model(name)->moe;
    EXPECT_EQ(r.routing, MoeRouting::softmax_topk) << name;
    EXPECT_EQ(r.activation, MoeActivation::silu) << name;
    EXPECT_TRUE(r.renormalize && !r.biases && !r.correction_bias) << name;
  }
}

// Exact mode's down weights: one nonzero per row, and packing gives it back exactly.
TEST(CheckMoe, SelectionWeightsSurvivePacking) {
  const std::int32_t n = 40, k = 96;
  const std::vector<bf16_bits> w = selection_weight_bf16(n, k, 7);
  const PackedWeight packed = pack_weight_cpu(w, n, k, false, false);
  for (std::int32_t row = 0; row < n; ++row) {
    int nonzero = 0;
    for (std::int32_t col = 0; col < k; ++col) {
      const std::size_t i = static_cast<std::size_t>(row) * k + col;
      const std::uint8_t byte = packed.packed[i / 2];
      const float code = format::e2m1_to_float(col % 2 == 0 ? byte : byte >> 4);
      const float decoded = code * format::e4m3_to_float(packed.scale[(col / 16) * n + row]);
      EXPECT_EQ(decoded, format::bf16_to_float(w[i])) << row << ", " << col;
      nonzero += w[i] != format::float_to_bf16(0.0f);
    }
    EXPECT_EQ(nonzero, 1) << "row " << row;
  }
}

struct RoutedCase {
  Routing routing;
  MoeRecipe recipe;
};

std::vector<RoutedCase> routed_cases() {
  MoeRecipe grouped = with_router({}, MoeRouting::sigmoid_grouped_topk);
  grouped.n_group = 4;
  grouped.topk_group = 2;
  const MoeRecipe precomputed = with_router({}, MoeRouting::precomputed);
  return {
      {{5, 8, 2, RoutingKind::uniform}, {}},
      {{0, 8, 2, RoutingKind::uniform}, {}},
      {{1, 1, 1, RoutingKind::uniform}, {}},
      {{17, 16, 4, RoutingKind::skew}, kGptOssRecipe},
      {{9, 16, 4, RoutingKind::empty_expert}, grouped},
      {{7, 16, 3, RoutingKind::uniform}, kDeepSeekV3Recipe},  // 8 groups of 2, 4 kept
      {{6, 8, 2, RoutingKind::one_expert}, precomputed},      // a token names one expert twice
      {{11, 8, 4, RoutingKind::skew}, precomputed},
  };
}

TEST(CheckMoe, CpuBackendPassesAgainstItsOracleInBothModes) {
  for (Mode mode : {Mode::exact, Mode::realistic}) {
    for (const RoutedCase& rc : routed_cases()) {
      const Case c = moe_case(mode, 64, 48, rc.routing, rc.recipe, 3);
      const Report r = run_case(c);
      EXPECT_TRUE(r.passed()) << summary(c, r);
      const std::int64_t slots = std::int64_t{rc.routing.tokens} * rc.routing.top_k;
      EXPECT_EQ(r.compared, slots * 2 + std::int64_t{rc.routing.tokens} * 64) << summary(c, r);
      EXPECT_TRUE(contains(r.detail, "second run identical")) << r.detail;
      if (mode == Mode::realistic && rc.routing.tokens > 0) {
        EXPECT_TRUE(contains(r.detail, "fp64 layer")) << r.detail;
      }
    }
  }
}

// The oracle on a sample of tokens equals those tokens of the whole run.
TEST(CheckMoe, SampledTokensMatchTheWholeCall) {
  Case c = moe_case(Mode::exact, 32, 32, {12, 8, 2, RoutingKind::uniform});
  c.sample_rows = 4;
  const Report r = run_case(c);
  EXPECT_TRUE(r.passed()) << summary(c, r);
  EXPECT_EQ(r.rows_compared, 4);
  EXPECT_EQ(r.rows_total, 12);
  EXPECT_TRUE(contains(summary(c, r), "[oracle on 4 sampled rows of 12]")) << summary(c, r);
}

// A layer that leaves out one slot of one token (the smallest weight) fails the realistic rule.
TEST(CheckMoe, RealisticRuleCatchesADroppedSlot) {
  const Case c = moe_case(Mode::realistic, 128, 64, {6, 16, 4, RoutingKind::uniform});
  const MoeHost h = make_moe_host(c);
  const std::vector<std::int64_t> rows = {0, 1, 2, 3, 4, 5};
  const MoeOutputs oracle = moe_oracle(h, rows);
  const std::vector<double> ideal = moe_ideal(h, rows, oracle.ids, oracle.weights);
  const IdealRule rule = ideal_rule(oracle.out, ideal);
  EXPECT_EQ(compare_to_ideal(oracle.out, ideal, rule, 128, rows, "out").mismatches, 0);

  std::vector<float> dropped = oracle.weights;
  dropped[2 * 4 + 3] = 0.0f;  // token 2, last slot
  std::vector<bf16_bits> wrong;
  for (double v : moe_ideal(h, rows, oracle.ids, dropped))
    wrong.push_back(format::float_to_bf16(static_cast<float>(v)));
  const Comparison cmp = compare_to_ideal(wrong, ideal, rule, 128, rows, "out");
  EXPECT_GT(cmp.mismatches, 0) << "limit " << rule.limit;
  EXPECT_TRUE(contains(cmp.first_detail, "out[2, ")) << cmp.first_detail;
}

TEST(CheckMoe, ReproduceCommandCarriesTheRecipe) {
  MoeRecipe recipe = with_router(kGptOssRecipe, MoeRouting::sigmoid_grouped_topk);
  recipe.n_group = 4;
  recipe.topk_group = 2;
  recipe.biases = false;
  Case custom = moe_case(Mode::realistic, 64, 32, {5, 8, 2, RoutingKind::skew}, recipe, 9);
  custom.backend = Backend::cuda;
  EXPECT_EQ(reproduce_command(custom),
            "metrale check --op moe --backend cuda --mode realistic --seed 9 --shape 64x32 "
            "--experts 8 --topk 2 --router sigmoid_grouped_topk --n-group 4 --topk-group 2 "
            "--activation swiglu_clamped --tokens 5 --routing skew");
  Case preset = moe_case(Mode::exact, 0, 0, {}, {}, 2);
  preset.backend = Backend::cuda;
  apply_model(preset, *find_model("gpt-oss-120b"), 3);
  EXPECT_EQ(reproduce_command(preset),
            "metrale check --op moe --backend cuda --mode exact --seed 2 --model gpt-oss-120b "
            "--tokens 3");
  preset.moe.recipe.biases = false;
  EXPECT_TRUE(contains(reproduce_command(preset), "--no-biases")) << reproduce_command(preset);
}

TEST(CheckMoe, ImpossibleCasesAreHarnessFailures) {
  const Report one = run_case(moe_case(Mode::exact, 32, 32, {4, 8, 2, RoutingKind::one_expert}));
  EXPECT_EQ(one.outcome, Outcome::fail);
  EXPECT_TRUE(contains(one.detail, "precomputed router")) << one.detail;
  const Report shape = run_case(moe_case(Mode::exact, 40, 32, {4, 8, 2, RoutingKind::uniform}));
  EXPECT_EQ(shape.outcome, Outcome::fail);
  EXPECT_TRUE(contains(shape.detail, "multiples of 16")) << shape.detail;
}

}  // namespace
}  // namespace metrale::check
