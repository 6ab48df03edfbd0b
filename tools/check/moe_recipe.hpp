// How a model routes its tokens and activates its experts: the settings of the MoE layer besides
// its shapes (docs/api.md, "The MoE layer"). Each model preset carries its model's recipe, so that
// `metrale check --op moe` and `metrale bench --ops moe` build the layer the model runs:
//   DeepSeek-V3      sigmoid_grouped_topk, 8 groups, 4 kept, renormalised, x2.5, correction bias
//   gpt-oss-120b     softmax_topk, renormalised; swiglu_clamped (alpha 1.702, limit 7), biases
//   the others       softmax_topk, renormalised; silu
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/metrale.hpp"

namespace metrale::check {

struct MoeRecipe {
  MoeRouting routing = MoeRouting::softmax_topk;
  bool renormalize = true;
  std::int32_t n_group = 1, topk_group = 1;  // sigmoid_grouped_topk: groups, groups kept
  float routed_scaling_factor = 1.0f;
  bool correction_bias = false;  // sigmoid_grouped_topk: a seeded fp32 bias per expert
  MoeActivation activation = MoeActivation::silu;
  float swiglu_alpha = 1.702f, swiglu_limit = 7.0f;
  bool biases = false;  // bf16 gate, up and down biases per expert
};

inline constexpr MoeRecipe kDeepSeekV3Recipe{.routing = MoeRouting::sigmoid_grouped_topk,
                                             .n_group = 8,
                                             .topk_group = 4,
                                             .routed_scaling_factor = 2.5f,
                                             .correction_bias = true};
inline constexpr MoeRecipe kGptOssRecipe{.activation = MoeActivation::swiglu_clamped,
                                         .biases = true};

// `base` with another router: its activation and biases kept, the router's settings those of the
// model known for it (sigmoid_grouped_topk: DeepSeek-V3's scaling and correction bias, in one
// group; softmax_topk: renormalised, no scaling).
MoeRecipe with_router(const MoeRecipe& base, MoeRouting routing);

// The layer's routing and activation fields. correction_bias (memory of the backend) and the
// bias tables stay the caller's to set.
void apply_recipe(const MoeRecipe& recipe, MoeLayer& layer);

// A layer of E experts (no expert map), SFB scales, the recipe applied; no weights yet.
MoeLayer layer_skeleton(std::int32_t experts, std::int32_t hidden, std::int32_t inter,
                        std::int32_t top_k, const MoeRecipe& recipe);

// "sigmoid_grouped_topk (8 groups, 4 kept, renormalized, x2.5, correction bias); silu"
std::string recipe_text(const MoeRecipe& recipe);

// Names as typed on the command line and printed in reports.
std::string_view router_name(MoeRouting routing);
std::optional<MoeRouting> parse_router(std::string_view name);
std::string_view activation_name(MoeActivation activation);
std::optional<MoeActivation> parse_activation(std::string_view name);

}  // namespace metrale::check
