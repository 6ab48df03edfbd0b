// Recipes of the MoE layer (moe_recipe.hpp): applying one to a layer, and its names.
#include "check/moe_recipe.hpp"

#include <fmt/format.h>

namespace metrale::check {

MoeRecipe with_router(const MoeRecipe& base, MoeRouting routing) {
  if (routing == base.routing) return base;
  MoeRecipe recipe = routing == MoeRouting::sigmoid_grouped_topk ? kDeepSeekV3Recipe : MoeRecipe{};
  recipe.routing = routing;
  if (routing == MoeRouting::sigmoid_grouped_topk) recipe.n_group = recipe.topk_group = 1;
  recipe.activation = base.activation;
  recipe.swiglu_alpha = base.swiglu_alpha;
  recipe.swiglu_limit = base.swiglu_limit;
  recipe.biases = base.biases;
  return recipe;
}

void apply_recipe(const MoeRecipe& recipe, MoeLayer& layer) {
  layer.routing = recipe.routing;
  layer.renormalize = recipe.renormalize;
  const bool grouped = recipe.routing == MoeRouting::sigmoid_grouped_topk;
  layer.n_group = grouped ? recipe.n_group : 1;  // the API refuses groups for other routings
  layer.topk_group = grouped ? recipe.topk_group : 1;
  layer.routed_scaling_factor = recipe.routed_scaling_factor;
  layer.activation = recipe.activation;
  layer.swiglu_alpha = recipe.swiglu_alpha;
  layer.swiglu_limit = recipe.swiglu_limit;
}

MoeLayer layer_skeleton(std::int32_t experts, std::int32_t hidden, std::int32_t inter,
                        std::int32_t top_k, const MoeRecipe& recipe) {
  MoeLayer layer;
  layer.num_experts = layer.num_local_experts = experts;
  layer.hidden_size = hidden;
  layer.intermediate_size = inter;
  layer.top_k = top_k;
  layer.scale_layout = ScaleLayout::sfb;
  apply_recipe(recipe, layer);
  return layer;
}

std::string recipe_text(const MoeRecipe& recipe) {
  std::string routing(router_name(recipe.routing));
  if (recipe.routing != MoeRouting::precomputed) {
    std::string details;
    if (recipe.routing == MoeRouting::sigmoid_grouped_topk)
      details = fmt::format("{} groups, {} kept, ", recipe.n_group, recipe.topk_group);
    details += recipe.renormalize ? "renormalized" : "not renormalized";
    if (recipe.routed_scaling_factor != 1.0f)
      details += fmt::format(", x{}", recipe.routed_scaling_factor);
    if (recipe.routing == MoeRouting::sigmoid_grouped_topk && recipe.correction_bias)
      details += ", correction bias";
    routing += fmt::format(" ({})", details);
  }
  std::string activation(activation_name(recipe.activation));
  if (recipe.activation == MoeActivation::swiglu_clamped)
    activation += fmt::format(" (alpha {}, limit {})", recipe.swiglu_alpha, recipe.swiglu_limit);
  if (recipe.biases) activation += ", biases";
  return routing + "; " + activation;
}

std::string_view router_name(MoeRouting routing) {
  switch (routing) {
    case MoeRouting::softmax_topk: return "softmax_topk";
    case MoeRouting::sigmoid_grouped_topk: return "sigmoid_grouped_topk";
    case MoeRouting::precomputed: return "precomputed";
  }
  return "unknown";
}

std::optional<MoeRouting> parse_router(std::string_view name) {
  for (MoeRouting r :
       {MoeRouting::softmax_topk, MoeRouting::sigmoid_grouped_topk, MoeRouting::precomputed})
    if (name == router_name(r)) return r;
  return std::nullopt;
}

std::string_view activation_name(MoeActivation activation) {
  return activation == MoeActivation::silu ? "silu" : "swiglu_clamped";
}

std::optional<MoeActivation> parse_activation(std::string_view name) {
  for (MoeActivation a : {MoeActivation::silu, MoeActivation::swiglu_clamped})
    if (name == activation_name(a)) return a;
  return std::nullopt;
}

}  // namespace metrale::check
