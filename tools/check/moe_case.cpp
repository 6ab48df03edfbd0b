// The inputs, the weight pool and the CPU oracle of a MoE layer check (moe_case.hpp).
#include "check/moe_case.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "check/grouped.hpp"
#include "check/inputs.hpp"
#include "check/routing.hpp"
#include "check/runners.hpp"

namespace metrale::check {
namespace {

enum Tag : std::uint64_t {
  kPoolTag = 151,
  kBiasTag = 155,
  kLogitTag = 161,
  kCorrectionTag,
  kWeightTag
};

constexpr float kNeverChosen = -1e30f;  // finite (the API refuses others), exp() of it is 0

// 2^⌈log2 √K⌉: divides exact-mode scale_2 so that sums over K stay of order one.
int half_log2(std::int32_t k) {
  return (std::bit_width(static_cast<std::uint32_t>(std::max(k - 1, 1))) + 1) / 2;
}

PackedWeight make_member(const Case& c, int projection, std::int32_t n, std::int32_t k,
                         std::int32_t member) {
  const std::uint64_t seed = derive_seed(c.seed, kPoolTag + projection, member);
  if (c.mode == Mode::realistic) return make_nvfp4_weight(Mode::realistic, n, k, seed, true);
  if (projection == kDown)
    return pack_weight_cpu(selection_weight_bf16(n, k, seed), n, k, false, true);
  return pack_weight_cpu(grid_weight_bf16(n, k, seed), n, k, false, true);
}

void make_pool(const Case& c, MoeHost& h) {
  const std::int64_t per_expert = 3 * static_cast<std::int64_t>(h.hidden) * h.inter;
  const auto members = static_cast<std::int32_t>(std::min<std::int64_t>(
      h.experts, std::max<std::int64_t>(1, kPoolElementBudget / per_expert)));
  for (int p = 0; p < 3; ++p)
    for (std::int32_t m = 0; m < members; ++m)
      h.pool[p].push_back(c.prepacked ? prepacked_weight(make_member(c, p, h.n_of(p), h.k_of(p), m))
                                      : make_member(c, p, h.n_of(p), h.k_of(p), m));
  for (std::int32_t e = 0; e < h.experts; ++e) {
    h.pool_of_expert.push_back(e % members);
    for (int p = 0; p < 3; ++p) {
      const std::int32_t k = h.k_of(p);
      const float s = c.mode == Mode::exact
                          ? std::ldexp(exact_scale_2(e + 2 * p), -half_log2(k))
                          : h.pool[p][e % members].scale_2 *
                                (1.0f + static_cast<float>((37 * e + 11 * p) % 2048) / 1024) /
                                std::sqrt(static_cast<float>(k));
      h.scale2[p].push_back(s);
    }
  }
}

void make_biases(const Case& c, MoeHost& h) {
  if (!h.recipe.biases) return;
  for (int p = 0; p < 3; ++p) {
    const std::size_t count = static_cast<std::size_t>(h.experts) * h.n_of(p);
    const std::uint64_t seed = derive_seed(c.seed, kBiasTag + p);
    h.bias[p] =
        c.mode == Mode::exact ? small_int_bf16(count, seed, 4) : normal_bf16(count, seed, 0.5f);
  }
}

// Router logits (and DeepSeek's correction bias), shaped by the routing kind.
void make_logits(const Case& c, MoeHost& h) {
  const RoutingKind kind = c.routing.kind;
  if (kind == RoutingKind::one_expert)
    throw HarnessError(
        "routing one_expert: a router picks k distinct experts; use the "
        "precomputed router");
  if (kind == RoutingKind::empty_expert && h.experts - (h.experts >= 2 ? 2 : 1) < h.top_k)
    throw HarnessError(
        fmt::format("routing empty_expert: experts = {} leaves fewer than top_k = "
                    "{} experts once 0 and E/2 are emptied",
                    h.experts, h.top_k));
  const auto emptied = [&](std::int32_t e) {
    return kind == RoutingKind::empty_expert && (e == 0 || e == h.experts / 2);
  };
  Rng rng(derive_seed(c.seed, kLogitTag));
  h.logits.resize(static_cast<std::size_t>(h.tokens) * h.experts);
  for (std::size_t i = 0; i < h.logits.size(); ++i) {
    const auto e = static_cast<std::int32_t>(i % static_cast<std::size_t>(h.experts));
    float l = 2.0f * rng.normal();
    if (kind == RoutingKind::skew) l -= 1.5f * std::log1p(static_cast<float>(e));
    h.logits[i] = emptied(e) ? kNeverChosen : l;
  }
  if (!h.recipe.correction_bias || h.recipe.routing != MoeRouting::sigmoid_grouped_topk) return;
  Rng bias_rng(derive_seed(c.seed, kCorrectionTag));
  for (std::int32_t e = 0; e < h.experts; ++e)
    h.correction_bias.push_back(emptied(e) ? -1.0f : 0.1f * bias_rng.normal());
}

void make_precomputed(const Case& c, MoeHost& h) {
  h.ids = route_choices(c.routing, c.seed);
  Rng rng(derive_seed(c.seed, kWeightTag));
  for (std::size_t i = 0; i < h.ids.size(); ++i) {
    h.weights.push_back(c.mode == Mode::exact
                            ? std::ldexp(1.0f, -rng.below(4))
                            : static_cast<float>(0.0625 + 0.9375 * rng.uniform()));
  }
}

}  // namespace

MoeHost make_moe_host(const Case& c) {
  MoeHost h;
  h.mode = c.mode;
  h.tokens = c.routing.tokens;
  h.experts = c.routing.experts;
  h.top_k = c.routing.top_k;
  h.hidden = c.moe.hidden;
  h.inter = c.moe.inter;
  h.recipe = c.moe.recipe;
  if (h.hidden < 16 || h.hidden % 16 != 0 || h.inter < 16 || h.inter % 16 != 0)
    throw HarnessError(fmt::format("moe shape {}x{}: H and I must be positive multiples of 16",
                                   h.hidden, h.inter));
  if (h.tokens < 0 || h.experts < 1 || h.top_k < 1 || h.top_k > h.experts)
    throw HarnessError(fmt::format("moe routing: tokens = {}, experts = {}, top_k = {}", h.tokens,
                                   h.experts, h.top_k));
  h.x = make_activations(c.mode, static_cast<std::size_t>(h.tokens) * h.hidden, c.seed);
  if (h.from_logits()) {
    make_logits(c, h);
  } else {
    make_precomputed(c, h);
  }
  make_pool(c, h);
  make_biases(c, h);
  return h;
}

MoeTables host_tables(const MoeHost& h) {
  MoeTables t;
  for (int p = 0; p < 3; ++p) {
    for (std::int32_t e = 0; e < h.experts; ++e) {
      const PackedWeight& w = h.pool[p][static_cast<std::size_t>(h.pool_of_expert[e])];
      t.packed[p].push_back(address(w.packed.data()));
      t.scale[p].push_back(address(w.sfb.data()));
      if (!h.bias[p].empty())
        t.bias[p].push_back(address(h.bias[p].data() + static_cast<std::size_t>(e) * h.n_of(p)));
    }
  }
  return t;
}

MoeLayer moe_layer(const MoeHost& h, const MoeTables& tables, const float* correction_bias) {
  MoeLayer layer = layer_skeleton(h.experts, h.hidden, h.inter, h.top_k, h.recipe);
  layer.weight_layout = h.pool[kGate].front().weight_layout;
  ExpertWeights* projections[3] = {&layer.gate, &layer.up, &layer.down};
  for (int p = 0; p < 3; ++p)
    *projections[p] = {tables.packed[p].data(), tables.scale[p].data(), h.scale2[p].data()};
  if (h.recipe.biases) {
    layer.gate_bias_ptrs = tables.bias[kGate].data();
    layer.up_bias_ptrs = tables.bias[kUp].data();
    layer.down_bias_ptrs = tables.bias[kDown].data();
  }
  if (!h.correction_bias.empty()) layer.correction_bias = correction_bias;
  return layer;
}

void set_routing_inputs(const MoeHost& h, MoeTokenData& d, const float* logits,
                        const std::int32_t* ids, const float* weights) {
  d.logits = h.from_logits() ? logits : nullptr;
  d.ids = h.from_logits() ? nullptr : ids;
  d.weights = h.from_logits() ? nullptr : weights;
}

MoeTokens moe_tokens(const MoeTokenData& d) {
  MoeTokens t;
  t.num_tokens = d.count;
  t.hidden = d.x;
  t.router_logits = d.logits;
  t.logits_dtype = DType::f32;
  t.topk_ids = d.ids;
  t.topk_weights = d.weights;
  t.out = d.out;
  t.topk_ids_out = d.ids_out;
  t.topk_weights_out = d.weights_out;
  return t;
}

MoeOutputs moe_oracle(const MoeHost& h, const std::vector<std::int64_t>& rows) {
  const auto rows_of = [&rows](const auto& data, std::int64_t cols) {
    return data.empty() ? std::decay_t<decltype(data)>{} : detail::gather_rows(data, cols, rows);
  };
  const std::vector<bf16_bits> x = rows_of(h.x, h.hidden);
  const std::vector<float> logits = rows_of(h.logits, h.experts);
  const std::vector<std::int32_t> ids = rows_of(h.ids, h.top_k);
  const std::vector<float> weights = rows_of(h.weights, h.top_k);
  MoeOutputs o;
  o.out.resize(rows.size() * static_cast<std::size_t>(h.hidden));
  o.ids.resize(rows.size() * static_cast<std::size_t>(h.top_k));
  o.weights.resize(o.ids.size());
  MoeTokenData d{.count = static_cast<std::int32_t>(rows.size()),
                 .x = x.data(),
                 .out = o.out.data(),
                 .ids_out = o.ids.data(),
                 .weights_out = o.weights.data()};
  set_routing_inputs(h, d, logits.data(), ids.data(), weights.data());
  const MoeTables tables = host_tables(h);
  require_ok(moe_forward(moe_layer(h, tables, h.correction_bias.data()), moe_tokens(d), kCpuOracle),
             "CPU oracle moe_forward");
  return o;
}

}  // namespace metrale::check
