// The composition property of the MoE layer: moe_forward on the CPU equals, bit for bit, what a
// runtime gets by composing metrale's own public grouped calls (nvfp4_grouped, gate/up with the
// tokens gathered by id, then down) with the glue it would write itself: group the routed slots
// by expert, add the biases, apply the activation in fp32 and round to bf16, and sum each token's
// slots in slot order in fp32. The routing is the layer's own (topk_ids_out, topk_weights_out).
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/moe_fixture.hpp"

namespace metrale {
namespace {

using test::MoeFixture;

constexpr Exec kCpu{Backend::cpu};

// Rows of the grouped calls: for each local expert in turn, its (token, slot) pairs in order.
struct Rows {
  std::vector<std::int32_t> offsets{0}, token, expert;
  std::vector<std::int32_t> of_slot;  // -1: remote
};

Rows group(const MoeFixture& f, const std::vector<std::int32_t>& ids) {
  Rows r;
  r.of_slot.assign(ids.size(), -1);
  for (int l = 0; l < f.local_experts; ++l) {
    for (std::size_t s = 0; s < ids.size(); ++s) {
      const int local = f.map.empty() ? ids[s] : f.map[static_cast<std::size_t>(ids[s])];
      if (local != l) continue;
      r.of_slot[s] = static_cast<std::int32_t>(r.token.size());
      r.token.push_back(static_cast<std::int32_t>(s / static_cast<std::size_t>(f.top_k)));
      r.expert.push_back(l);
    }
    r.offsets.push_back(static_cast<std::int32_t>(r.token.size()));
  }
  return r;
}

// y[i, :] = bf16(y[i, :] + bias of row i's expert)
void add_bias(const std::vector<std::vector<bf16_bits>>& bias, const Rows& r, int n,
              std::vector<bf16_bits>& y) {
  if (bias.empty()) return;
  for (std::size_t i = 0; i < r.token.size(); ++i)
    for (int c = 0; c < n; ++c) {
      bf16_bits& v = y[i * static_cast<std::size_t>(n) + c];
      v = format::float_to_bf16(format::bf16_to_float(v) +
                                format::bf16_to_float(bias[r.expert[i]][c]));
    }
}

// One grouped call over the rows: a (a_rows rows) times each projection, [n, k] weights.
GroupedNvfp4 grouped_call(const MoeFixture& f, const Rows& r, const bf16_bits* a, int a_rows, int n,
                          int k) {
  GroupedNvfp4 call{};
  call.scale_layout = f.layer.scale_layout;
  call.groups = ExpertGroups{r.offsets.data(), false, f.local_experts, r.offsets.back(), 0};
  call.a = a;
  call.a_rows = a_rows;
  call.proj_count = 1;
  call.n = n;
  call.k = k;
  return call;
}

std::vector<bf16_bits> composed(const MoeFixture& f, const std::vector<std::int32_t>& ids,
                                const std::vector<float>& weights,
                                const std::vector<bf16_bits>& residual) {
  const Rows r = group(f, ids);
  const int m = r.offsets.back(), H = MoeFixture::kHidden, I = MoeFixture::kInter;
  std::vector<bf16_bits> g(static_cast<std::size_t>(m) * I), u(g.size()),
      d(static_cast<std::size_t>(m) * H);
  GroupedNvfp4 gate_up = grouped_call(f, r, f.hidden.data(), f.tokens, I, H);
  gate_up.token_ids = r.token.data();
  gate_up.proj[1] = f.layer.up;
  gate_up.out[1] = u.data();
  gate_up.proj_count = 2;
  gate_up.proj[0] = f.layer.gate;
  gate_up.out[0] = g.data();
  EXPECT_TRUE(nvfp4_grouped(gate_up, kCpu).ok());
  add_bias(f.bias[0], r, I, g);
  add_bias(f.bias[1], r, I, u);
  const test::RefLayer act = f.reference();
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] = format::float_to_bf16(
        test::ref_activation(act, format::bf16_to_float(g[i]), format::bf16_to_float(u[i])));
  GroupedNvfp4 down = grouped_call(f, r, g.data(), m, H, I);
  down.proj[0] = f.layer.down;
  down.out[0] = d.data();
  EXPECT_TRUE(nvfp4_grouped(down, kCpu).ok());
  add_bias(f.bias[2], r, H, d);

  std::vector<bf16_bits> out(static_cast<std::size_t>(f.tokens) * H);
  for (int t = 0; t < f.tokens; ++t)
    for (int h = 0; h < H; ++h) {
      float acc = 0.0f;
      for (int j = 0; j < f.top_k; ++j) {
        const int row = r.of_slot[static_cast<std::size_t>(t * f.top_k + j)];
        if (row >= 0) acc += weights[t * f.top_k + j] * format::bf16_to_float(d[row * H + h]);
      }
      const std::size_t at = static_cast<std::size_t>(t) * H + h;
      out[at] =
          format::float_to_bf16(residual.empty() ? acc : acc + format::bf16_to_float(residual[at]));
    }
  return out;
}

void expect_layer_equals_composition(MoeFixture& f, const std::vector<bf16_bits>& residual) {
  std::vector<bf16_bits> out = f.poisoned_out();
  std::vector<std::int32_t> ids(static_cast<std::size_t>(f.tokens) * f.top_k);
  std::vector<float> weights(ids.size());
  MoeTokens t = f.with_logits();
  t.out = out.data();
  t.residual = residual.empty() ? nullptr : residual.data();
  t.topk_ids_out = ids.data();
  t.topk_weights_out = weights.data();
  const Result result = moe_forward(f.layer, t, kCpu);
  ASSERT_TRUE(result.ok()) << result.message;
  EXPECT_EQ(out, composed(f, ids, weights, residual));
}

TEST(CpuMoeComposition, SoftmaxSiluSfb) {
  for (int tokens : {1, 3, 64}) {
    MoeFixture f(8, 2, tokens);
    f.set_layout(ScaleLayout::sfb);
    expect_layer_equals_composition(f, {});
  }
}

TEST(CpuMoeComposition, DeepSeekRoutingHalfRemoteWithResidual) {
  MoeFixture f(16, 4, 64, 1.0f / 64, 8);
  f.set_map({0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, 6, 7, -1, -1});
  f.layer.routing = MoeRouting::sigmoid_grouped_topk;
  f.layer.n_group = 4;
  f.layer.topk_group = 2;
  f.layer.routed_scaling_factor = 2.5f;
  expect_layer_equals_composition(f, test::random_bf16(f.hidden.size(), 3, -20, 20));
}

TEST(CpuMoeComposition, GptOssBiasesAndClampedActivation) {
  MoeFixture f(8, 4, 64, 1.0f / 8);
  f.add_biases();
  f.layer.activation = MoeActivation::swiglu_clamped;
  f.set_layout(ScaleLayout::sfb);
  expect_layer_equals_composition(f, {});
}

}  // namespace
}  // namespace metrale
