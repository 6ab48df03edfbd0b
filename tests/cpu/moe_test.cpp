// Tests of the CPU oracle of the MoE layer (moe_forward on Backend::cpu) against the independent
// reference of moe_reference.hpp, bit for bit: each routing function at T in {1, 3, 64}, an expert
// with no tokens, every token on one expert, half the experts remote, residual on and off (and in
// place), biases, gpt-oss's clamped activation, the SFB layout, a second run, no tokens at all.
// The composition property (the layer equals metrale's own grouped calls plus glue) is
// moe_composition_test.cpp's.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/moe_fixture.hpp"

namespace metrale {
namespace {

using test::MoeFixture;
using test::RefRoute;

constexpr Exec kCpu{Backend::cpu};

// Runs the layer, expects success; the routing it chose comes back in `route`.
std::vector<bf16_bits> run(const MoeFixture& f, MoeTokens t, RefRoute* route = nullptr) {
  std::vector<bf16_bits> out = f.poisoned_out();
  std::vector<std::int32_t> ids(static_cast<std::size_t>(f.tokens) * f.top_k, -7);
  std::vector<float> weights(ids.size(), NAN);
  t.out = out.data();
  t.topk_ids_out = ids.data();
  t.topk_weights_out = weights.data();
  const Result r = moe_forward(f.layer, t, kCpu);
  EXPECT_TRUE(r.ok()) << r.message;
  if (route) *route = RefRoute{ids, weights};
  return out;
}

RefRoute ref_softmax(const MoeFixture& f) {
  RefRoute all;
  for (int t = 0; t < f.tokens; ++t) {
    const RefRoute r = test::ref_softmax_topk(f.logits_row(t), f.top_k, f.layer.renormalize,
                                              f.layer.routed_scaling_factor);
    all.ids.insert(all.ids.end(), r.ids.begin(), r.ids.end());
    all.weights.insert(all.weights.end(), r.weights.begin(), r.weights.end());
  }
  return all;
}

RefRoute ref_sigmoid(const MoeFixture& f) {
  RefRoute all;
  for (int t = 0; t < f.tokens; ++t) {
    const RefRoute r = test::ref_sigmoid_grouped(
        f.logits_row(t), f.layer.correction_bias, f.top_k, f.layer.n_group, f.layer.topk_group,
        f.layer.renormalize, f.layer.routed_scaling_factor);
    all.ids.insert(all.ids.end(), r.ids.begin(), r.ids.end());
    all.weights.insert(all.weights.end(), r.weights.begin(), r.weights.end());
  }
  return all;
}

void expect_route(const RefRoute& got, const RefRoute& want) {
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.weights, want.weights);
}

TEST(CpuMoe, SoftmaxTopkMatchesReference) {
  for (int tokens : {1, 3, 64})
    for (bool renormalize : {true, false}) {
      SCOPED_TRACE(testing::Message() << "T = " << tokens << ", renormalize = " << renormalize);
      MoeFixture f(8, 2, tokens);
      f.layer.renormalize = renormalize;
      f.layer.routed_scaling_factor = renormalize ? 1.0f : 2.5f;
      RefRoute route;
      const auto out = run(f, f.with_logits(), &route);
      const RefRoute want = ref_softmax(f);
      expect_route(route, want);
      EXPECT_EQ(out, test::ref_moe(f.reference(), f.hidden, want, {}));
    }
}

TEST(CpuMoe, SoftmaxWeightsAreTheSoftmaxInDouble) {
  MoeFixture f(8, 3, 3);
  f.layer.renormalize = false;
  RefRoute route;
  run(f, f.with_logits(), &route);
  for (int t = 0; t < f.tokens; ++t) {
    const std::vector<float> row = f.logits_row(t);
    double sum = 0;
    for (float l : row) sum += std::exp(static_cast<double>(l));
    for (int j = 0; j < f.top_k; ++j) {
      const double p = std::exp(static_cast<double>(row[route.ids[t * 3 + j]])) / sum;
      EXPECT_NEAR(route.weights[t * 3 + j], p, 1e-6 * p) << "token " << t << " slot " << j;
      if (j > 0) {
        EXPECT_GE(route.weights[t * 3 + j - 1], route.weights[t * 3 + j]);
      }
    }
  }
}

TEST(CpuMoe, Bf16LogitsRouteAsTheirFloatValues) {
  MoeFixture f(8, 2, 3);
  std::vector<bf16_bits> logits16;
  for (float& l : f.logits) {
    logits16.push_back(format::float_to_bf16(l));
    l = format::bf16_to_float(logits16.back());  // the reference sees the rounded values
  }
  MoeTokens t = f.with_logits();
  t.router_logits = logits16.data();
  t.logits_dtype = DType::bf16;
  RefRoute route;
  const auto out = run(f, t, &route);
  expect_route(route, ref_softmax(f));
  EXPECT_EQ(out, test::ref_moe(f.reference(), f.hidden, ref_softmax(f), {}));
}

TEST(CpuMoe, TiesGoToTheLowerExpertId) {
  MoeFixture f(8, 3, 1);
  f.logits = {0.5f, 2.0f, 1.0f, 2.0f, 1.0f, 2.0f, 0.0f, 0.0f};
  RefRoute route;
  run(f, f.with_logits(), &route);
  EXPECT_EQ(route.ids, (std::vector<std::int32_t>{1, 3, 5}));
}

TEST(CpuMoe, SigmoidGroupedTopkMatchesReference) {
  for (int tokens : {1, 3, 64}) {
    SCOPED_TRACE(testing::Message() << "T = " << tokens);
    MoeFixture f(16, 4, tokens);
    std::vector<float> bias;
    for (int e = 0; e < 16; ++e) bias.push_back(0.05f * static_cast<float>((e * 7) % 5) - 0.1f);
    f.layer.routing = MoeRouting::sigmoid_grouped_topk;
    f.layer.n_group = 4;
    f.layer.topk_group = 2;
    f.layer.routed_scaling_factor = 2.5f;
    f.layer.correction_bias = bias.data();
    RefRoute route;
    const auto out = run(f, f.with_logits(), &route);
    const RefRoute want = ref_sigmoid(f);
    expect_route(route, want);
    EXPECT_EQ(out, test::ref_moe(f.reference(), f.hidden, want, {}));
    for (int t = 0; t < tokens; ++t) {  // at most topk_group groups of 4 experts used
      std::vector<bool> group(4, false);
      for (int j = 0; j < 4; ++j) group[route.ids[t * 4 + j] / 4] = true;
      EXPECT_LE(std::count(group.begin(), group.end(), true), 2) << "token " << t;
    }
  }
}

TEST(CpuMoe, CorrectionBiasChangesTheChoiceNotTheWeight) {
  MoeFixture f(4, 1, 1);
  f.logits = {1.0f, 0.0f, -1.0f, 0.5f};
  const std::vector<float> bias = {0.0f, 0.0f, 0.9f, 0.0f};  // sigmoid(-1) + 0.9 > sigmoid(1)
  f.layer.routing = MoeRouting::sigmoid_grouped_topk;
  f.layer.renormalize = false;
  f.layer.correction_bias = bias.data();
  RefRoute route;
  run(f, f.with_logits(), &route);
  EXPECT_EQ(route.ids, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(route.weights, (std::vector<float>{1.0f / (1.0f + std::exp(1.0f))}));
}

// Precomputed routing: power-of-two weights, an expert nobody uses, every token on one expert.
TEST(CpuMoe, PrecomputedWithAnEmptyExpertAndAllOnOne) {
  for (int tokens : {1, 3, 64}) {
    MoeFixture f(6, 2, tokens);
    f.layer.routing = MoeRouting::precomputed;
    RefRoute given;
    for (int t = 0; t < tokens; ++t) {
      given.ids.insert(given.ids.end(), {(t % 2) * 2, 5 - (t % 3)});  // expert 1 never
      given.weights.insert(given.weights.end(), {0.5f, 0.25f});
    }
    MoeTokens tk = f.with_logits();
    tk.router_logits = nullptr;
    tk.topk_ids = given.ids.data();
    tk.topk_weights = given.weights.data();
    RefRoute route;
    EXPECT_EQ(run(f, tk, &route), test::ref_moe(f.reference(), f.hidden, given, {}));
    expect_route(route, given);
    std::fill(given.ids.begin(), given.ids.end(), 4);  // every slot of every token on expert 4
    EXPECT_EQ(run(f, tk), test::ref_moe(f.reference(), f.hidden, given, {}));
  }
}

TEST(CpuMoe, ExpertMapWithHalfTheExpertsRemote) {
  for (int tokens : {1, 3, 64}) {
    MoeFixture f(8, 2, tokens, 1.0f / 64, 4);
    f.set_map({0, -1, 1, -1, 2, -1, 3, -1});  // even experts here, odd ones elsewhere
    RefRoute route;
    const auto out = run(f, f.with_logits(), &route);
    EXPECT_EQ(out, test::ref_moe(f.reference(), f.hidden, ref_softmax(f), {}));
    expect_route(route, ref_softmax(f));  // global ids, remote ones included
  }
}

TEST(CpuMoe, EveryExpertRemoteGivesZeroOrTheResidual) {
  MoeFixture f(4, 2, 3, 1.0f / 64, 1);
  f.set_map({-1, -1, -1, -1});
  EXPECT_EQ(run(f, f.with_logits()), std::vector<bf16_bits>(f.hidden.size(), 0));
  const std::vector<bf16_bits> residual = test::random_bf16(f.hidden.size(), 77, -9, 9);
  MoeTokens t = f.with_logits();
  t.residual = residual.data();
  EXPECT_EQ(run(f, t), residual);
}

TEST(CpuMoe, ResidualOnOffAndInPlace) {
  MoeFixture f(8, 2, 3);
  const std::vector<bf16_bits> residual = test::random_bf16(f.hidden.size(), 78, -50, 50);
  MoeTokens t = f.with_logits();
  t.residual = residual.data();
  const auto with = run(f, t);
  EXPECT_EQ(with, test::ref_moe(f.reference(), f.hidden, ref_softmax(f), residual));
  std::vector<bf16_bits> in_place = residual;
  t.residual = in_place.data();
  t.out = in_place.data();
  ASSERT_TRUE(moe_forward(f.layer, t, kCpu).ok());
  EXPECT_EQ(in_place, with);
  EXPECT_NE(run(f, f.with_logits()), with);
}

TEST(CpuMoe, BiasesAndClampedActivation) {
  for (int tokens : {1, 3, 64}) {
    MoeFixture f(8, 4, tokens, 1.0f / 8);  // gate and up reach past the clamp at 7
    f.add_biases();
    f.layer.activation = MoeActivation::swiglu_clamped;
    const auto out = run(f, f.with_logits());
    EXPECT_EQ(out, test::ref_moe(f.reference(), f.hidden, ref_softmax(f), {}));
    f.layer.activation = MoeActivation::silu;
    EXPECT_NE(run(f, f.with_logits()), out);
  }
}

TEST(CpuMoe, SfbLayoutEqualsK16ByN) {
  MoeFixture f(8, 2, 64);
  f.add_biases();
  const auto k16 = run(f, f.with_logits());
  f.set_layout(ScaleLayout::sfb);
  EXPECT_EQ(run(f, f.with_logits()), k16);
}

TEST(CpuMoe, SecondRunIsBitwiseIdentical) {
  MoeFixture f(16, 4, 64, 1.0f / 8);
  f.add_biases();
  f.layer.activation = MoeActivation::swiglu_clamped;
  const auto first = run(f, f.with_logits());
  EXPECT_EQ(run(f, f.with_logits()), first);
}

TEST(CpuMoe, NoTokensTouchesNothing) {
  MoeFixture f(8, 2, 0);
  MoeTokens t;  // every buffer null: with T = 0 none is read or written
  EXPECT_TRUE(moe_forward(f.layer, t, kCpu).ok());
}

}  // namespace
}  // namespace metrale
