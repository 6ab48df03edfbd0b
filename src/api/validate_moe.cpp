// Validation of the MoE layer (moe_forward, metrale_moe_forward). validate() checks what every
// backend needs, reading only the layer's host arrays (per-expert tables, the expert map);
// validate_for_cpu() then reads the tokens' data on the host (logits, ids, weights, the correction
// bias), so a NaN logit or an id out of range is refused before anything is computed or written.
// Messages use the caller's names: layer->top_k in C, layer.top_k in C++.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "api/validate.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "format/bf16.hpp"

namespace metrale::api {

using core::require_aligned;
using core::require_not_null;

namespace {

// "layer->" and "tokens->" in the C ABI, "layer." and "tokens." in the C++ API.
struct MoeNames {
  std::string layer, tokens;
  std::string l(std::string_view field) const { return fmt::format("{}{}", layer, field); }
  std::string t(std::string_view field) const { return fmt::format("{}{}", tokens, field); }
};

MoeNames names_for(std::string_view who) {
  return who.starts_with("metrale_") ? MoeNames{"layer->", "tokens->"}
                                     : MoeNames{"layer.", "tokens."};
}

std::string_view routing_name(MoeRouting routing) {
  switch (routing) {
    case MoeRouting::softmax_topk: return "softmax_topk";
    case MoeRouting::sigmoid_grouped_topk: return "sigmoid_grouped_topk";
    default: return "precomputed";
  }
}

void validate_shape(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  core::require_positive(who, n.l("num_experts"), layer.num_experts);
  for (auto [name, size] : {std::pair{"hidden_size", layer.hidden_size},
                            std::pair{"intermediate_size", layer.intermediate_size}}) {
    core::require_positive(who, n.l(name), size);
    core::require_multiple_of(who, n.l(name), size, 16);
  }
  METRALE_REQUIRE(layer.top_k >= 1 && layer.top_k <= layer.num_experts,
                  "{}: {} = {} is outside [1, {} = {}]", who, n.l("top_k"), layer.top_k,
                  n.l("num_experts"), layer.num_experts);
  require_scale_layout(who, layer.scale_layout, n.l("scale_layout"));
  require_weight_layout(who, layer.weight_layout, n.l("weight_layout"));
  if (layer.expert_map == nullptr) {
    METRALE_REQUIRE(layer.num_local_experts == layer.num_experts,
                    "{}: {} = {} != {} = {}, expected every expert local (no {})", who,
                    n.l("num_local_experts"), layer.num_local_experts, n.l("num_experts"),
                    layer.num_experts, n.l("expert_map"));
  }
  core::require_non_negative(who, n.l("num_local_experts"), layer.num_local_experts);
}

void validate_activation(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  const auto act = static_cast<std::int32_t>(layer.activation);
  METRALE_REQUIRE(act == 0 || act == 1, "{}: {} = {}, expected 0 (silu) or 1 (swiglu_clamped)", who,
                  n.l("activation"), act);
  if (layer.activation != MoeActivation::swiglu_clamped) return;
  METRALE_REQUIRE(std::isfinite(layer.swiglu_alpha), "{}: {} = {} is not finite", who,
                  n.l("swiglu_alpha"), layer.swiglu_alpha);
  METRALE_REQUIRE(std::isfinite(layer.swiglu_limit) && layer.swiglu_limit > 0.0f,
                  "{}: {} = {} is not finite and > 0", who, n.l("swiglu_limit"),
                  layer.swiglu_limit);
}

void validate_groups(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  const std::int32_t e = layer.num_experts, groups = layer.n_group;
  METRALE_REQUIRE(groups >= 1 && e % groups == 0,
                  "{}: {} = {} does not divide {} = {}, expected groups of equal size", who,
                  n.l("n_group"), groups, n.l("num_experts"), e);
  METRALE_REQUIRE(layer.topk_group >= 1 && layer.topk_group <= groups,
                  "{}: {} = {} is outside [1, {} = {}]", who, n.l("topk_group"), layer.topk_group,
                  n.l("n_group"), groups);
  const std::int64_t eligible = std::int64_t{layer.topk_group} * (e / groups);
  METRALE_REQUIRE(eligible >= layer.top_k,
                  "{}: {} = {} > {} experts in the {} = {} groups kept, expected enough to "
                  "choose from",
                  who, n.l("top_k"), layer.top_k, eligible, n.l("topk_group"), layer.topk_group);
  require_aligned(who, n.l("correction_bias"), layer.correction_bias, alignof(float), "fp32 data");
}

void validate_routing(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  const auto routing = static_cast<std::int32_t>(layer.routing);
  METRALE_REQUIRE(routing >= 0 && routing <= 2,
                  "{}: {} = {}, expected 0 (softmax_topk), 1 (sigmoid_grouped_topk) or 2 "
                  "(precomputed)",
                  who, n.l("routing"), routing);
  if (layer.routing != MoeRouting::precomputed) {
    METRALE_REQUIRE(std::isfinite(layer.routed_scaling_factor) && layer.routed_scaling_factor > 0,
                    "{}: {} = {} is not finite and > 0", who, n.l("routed_scaling_factor"),
                    layer.routed_scaling_factor);
  }
  if (layer.routing == MoeRouting::sigmoid_grouped_topk) return validate_groups(who, layer, n);
  // Only the grouped sigmoid routing reads these: a value elsewhere would be silently ignored.
  METRALE_REQUIRE(layer.n_group == 1 && layer.topk_group == 1,
                  "{}: {} = {}, {} = {}, expected 1 and 1: only {} = 1 (sigmoid_grouped_topk) "
                  "limits the choice to groups",
                  who, n.l("n_group"), layer.n_group, n.l("topk_group"), layer.topk_group,
                  n.l("routing"));
  METRALE_REQUIRE(layer.correction_bias == nullptr,
                  "{}: {} is set, but {} = {} ({}) does not read it", who, n.l("correction_bias"),
                  n.l("routing"), routing, routing_name(layer.routing));
}

// The local experts some global expert can be routed to: all of [0, L) without a map (L = E
// then), else the ones the map names. Kept as that list, not as L flags: with a map, L may be
// far larger than E (the tables hold L entries, but only the mapped ones are read), and the
// checks must cost O(E), not O(L).
struct Reachable {
  std::int32_t all = 0;              // without a map: every local expert in [0, all)
  std::vector<std::int32_t> mapped;  // with a map: the local experts it names, ascending
  template <class F>
  void each(F&& f) const {
    for (std::int32_t l = 0; l < all; ++l) f(static_cast<std::size_t>(l));
    for (std::int32_t l : mapped) f(static_cast<std::size_t>(l));
  }
};

Reachable reachable_experts(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  Reachable reachable;
  if (layer.expert_map == nullptr) {
    reachable.all = layer.num_local_experts;
    return reachable;
  }
  require_aligned(who, n.l("expert_map"), layer.expert_map, alignof(std::int32_t), "int32 data");
  for (std::int32_t e = 0; e < layer.num_experts; ++e) {
    const std::int32_t local = layer.expert_map[e];
    METRALE_REQUIRE(local >= -1 && local < layer.num_local_experts,
                    "{}: {}[{}] = {} is outside [-1, {} = {}), expected a local expert or -1 "
                    "(remote)",
                    who, n.l("expert_map"), e, local, n.l("num_local_experts"),
                    layer.num_local_experts);
    if (local >= 0) reachable.mapped.push_back(local);
  }
  std::sort(reachable.mapped.begin(), reachable.mapped.end());
  reachable.mapped.erase(std::unique(reachable.mapped.begin(), reachable.mapped.end()),
                         reachable.mapped.end());
  return reachable;
}

// A per-expert pointer table: non-null and aligned when any expert is reachable, and an entry
// for each reachable expert; with `bf16`, each entry 2-byte aligned (the biases are bf16 arrays;
// the packed weights and the scales are bytes). This runs per expert on every call, so no string
// is built unless a check fails (formatting each name cost 118 µs a call at 512 experts; 13 now).
void require_table(std::string_view who, const std::string& name, const std::uint64_t* table,
                   const Reachable& reachable, std::string_view what, bool bf16 = false) {
  require_aligned(who, name, table, alignof(std::uint64_t), "uint64 data");
  reachable.each([&](std::size_t l) {
    require_not_null(who, name, table);
    METRALE_REQUIRE(table[l] != 0,
                    "{}: {}[{}] is null, expected local expert {}'s {} (it can "
                    "be routed)",
                    who, name, l, l, what);
    if (bf16 && table[l] % alignof(bf16_bits) != 0) {
      require_aligned(who, fmt::format("{}[{}]", name, l),
                      reinterpret_cast<const void*>(static_cast<std::uintptr_t>(table[l])),
                      alignof(bf16_bits), "bf16 data");
    }
  });
}

void validate_experts(std::string_view who, const MoeLayer& layer, const MoeNames& n) {
  const Reachable reachable = reachable_experts(who, layer, n);
  for (auto [name, w] : {std::pair{"gate", &layer.gate}, std::pair{"up", &layer.up},
                         std::pair{"down", &layer.down}}) {
    require_table(who, n.l(fmt::format("{}.packed_ptrs", name)), w->packed_ptrs, reachable,
                  "packed weight");
    require_table(who, n.l(fmt::format("{}.scale_ptrs", name)), w->scale_ptrs, reachable,
                  "block scales");
    const std::string scale2 = n.l(fmt::format("{}.scale2_vals", name));
    const float* values = w->scale2_vals;  // a structured binding cannot be captured (clang 14)
    require_aligned(who, scale2, values, alignof(float), "fp32 data");
    reachable.each([&](std::size_t l) {
      require_not_null(who, scale2, values);
      core::require_scale2(who, scale2, static_cast<std::int64_t>(l), values[l]);
    });
  }
  for (auto [name, table] : {std::pair{"gate_bias_ptrs", layer.gate_bias_ptrs},
                             std::pair{"up_bias_ptrs", layer.up_bias_ptrs},
                             std::pair{"down_bias_ptrs", layer.down_bias_ptrs}}) {
    if (table != nullptr) require_table(who, n.l(name), table, reachable, "bias", true);
  }
}

// The token buffers the routing reads: logits, or the caller's ids and weights, never both.
void validate_routing_inputs(std::string_view who, const MoeForward& args, const MoeNames& n) {
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  const bool precomputed = layer.routing == MoeRouting::precomputed;
  const auto routing = static_cast<std::int32_t>(layer.routing);
  if (precomputed) {
    METRALE_REQUIRE(t.router_logits == nullptr,
                    "{}: {} is set, but {} = 2 (precomputed) reads {} and {}", who,
                    n.t("router_logits"), n.l("routing"), n.t("topk_ids"), n.t("topk_weights"));
    require_not_null(who, n.t("topk_ids"), t.topk_ids);
    require_not_null(who, n.t("topk_weights"), t.topk_weights);
    require_aligned(who, n.t("topk_ids"), t.topk_ids, alignof(std::int32_t), "int32 data");
    require_aligned(who, n.t("topk_weights"), t.topk_weights, alignof(float), "fp32 data");
    return;
  }
  METRALE_REQUIRE(t.topk_ids == nullptr && t.topk_weights == nullptr,
                  "{}: {} or {} is set, but {} = {} ({}) computes the routing from {}", who,
                  n.t("topk_ids"), n.t("topk_weights"), n.l("routing"), routing,
                  routing_name(layer.routing), n.t("router_logits"));
  const auto dtype = static_cast<std::int32_t>(t.logits_dtype);
  METRALE_REQUIRE(dtype == 0 || dtype == 1, "{}: {} = {}, expected 0 (f32) or 1 (bf16)", who,
                  n.t("logits_dtype"), dtype);
  require_not_null(who, n.t("router_logits"), t.router_logits);
  require_aligned(who, n.t("router_logits"), t.router_logits,
                  t.logits_dtype == DType::f32 ? alignof(float) : alignof(bf16_bits),
                  t.logits_dtype == DType::f32 ? "fp32 data" : "bf16 data");
}

// T and T·k: the slots are int32 offsets.
void require_token_count(std::string_view who, const MoeLayer& layer, std::int32_t num_tokens,
                         std::string_view name, const MoeNames& n) {
  core::require_non_negative(who, name, num_tokens);
  const std::int64_t rows = std::int64_t{num_tokens} * layer.top_k;
  METRALE_REQUIRE(rows <= INT32_MAX,
                  "{}: {} = {} times {} = {} is {} expert rows, more than {} (int32 offsets)", who,
                  name, num_tokens, n.l("top_k"), layer.top_k, rows, INT32_MAX);
}

void validate_tokens(std::string_view who, const MoeForward& args, const MoeNames& n) {
  const MoeTokens& t = args.tokens;
  require_token_count(who, args.layer, t.num_tokens, n.t("num_tokens"), n);
  require_aligned(who, n.t("topk_ids_out"), t.topk_ids_out, alignof(std::int32_t), "int32 data");
  require_aligned(who, n.t("topk_weights_out"), t.topk_weights_out, alignof(float), "fp32 data");
  require_aligned(who, n.t("residual"), t.residual, alignof(bf16_bits), "bf16 data");
  if (t.num_tokens == 0) return;  // nothing is read or written
  require_not_null(who, n.t("hidden"), t.hidden);
  require_aligned(who, n.t("hidden"), t.hidden, alignof(bf16_bits), "bf16 data");
  require_not_null(who, n.t("out"), t.out);
  require_aligned(who, n.t("out"), t.out, alignof(bf16_bits), "bf16 data");
  validate_routing_inputs(who, args, n);
}

float logit_at(const MoeTokens& t, std::size_t i) {
  return t.logits_dtype == DType::f32
             ? static_cast<const float*>(t.router_logits)[i]
             : format::bf16_to_float(static_cast<const bf16_bits*>(t.router_logits)[i]);
}

}  // namespace

void validate_moe_layer(std::string_view who, const MoeLayer& layer) {
  const MoeNames n = names_for(who);
  validate_shape(who, layer, n);
  validate_activation(who, layer, n);
  validate_routing(who, layer, n);
  validate_experts(who, layer, n);
}

void validate_moe_token_count(std::string_view who, const MoeLayer& layer,
                              std::int32_t num_tokens) {
  require_token_count(who, layer, num_tokens, "num_tokens", names_for(who));
}

void validate(std::string_view who, const MoeForward& args) {
  validate_moe_layer(who, args.layer);
  validate_tokens(who, args, names_for(who));
}

void validate_for_cpu(std::string_view who, const MoeForward& args) {
  const MoeNames n = names_for(who);
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  if (t.num_tokens == 0) return;
  const std::size_t tokens = static_cast<std::size_t>(t.num_tokens);
  if (layer.routing == MoeRouting::precomputed) {
    const std::size_t k = static_cast<std::size_t>(layer.top_k);
    for (std::size_t i = 0; i < tokens * k; ++i) {
      METRALE_REQUIRE(t.topk_ids[i] >= 0 && t.topk_ids[i] < layer.num_experts,
                      "{}: {}[{}][{}] = {} is outside [0, {} = {})", who, n.t("topk_ids"), i / k,
                      i % k, t.topk_ids[i], n.l("num_experts"), layer.num_experts);
      METRALE_REQUIRE(std::isfinite(t.topk_weights[i]), "{}: {}[{}][{}] = {} is not finite", who,
                      n.t("topk_weights"), i / k, i % k, t.topk_weights[i]);
    }
    return;
  }
  const std::size_t e = static_cast<std::size_t>(layer.num_experts);
  for (std::size_t i = 0; i < tokens * e; ++i) {
    const float logit = logit_at(t, i);
    METRALE_REQUIRE(std::isfinite(logit), "{}: {}[{}][{}] = {} is not finite", who,
                    n.t("router_logits"), i / e, i % e, logit);
  }
  if (layer.correction_bias == nullptr) return;
  for (std::size_t i = 0; i < e; ++i) {
    METRALE_REQUIRE(std::isfinite(layer.correction_bias[i]), "{}: {}[{}] = {} is not finite", who,
                    n.l("correction_bias"), i, layer.correction_bias[i]);
  }
}

}  // namespace metrale::api
