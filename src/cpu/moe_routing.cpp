// CPU routing of the MoE layer (moe_routing.hpp). Each routing function works on one token's row
// of logits; the formulas are docs/api.md's, operation for operation, in fp32.
#include "cpu/moe_routing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cpu {
namespace {

// Indices of `score` from highest to lowest; equal scores keep ascending index order, so a tie
// goes to the lower id. Only indices with allowed[i] (all, when empty) take part.
std::vector<std::int32_t> ranked(std::span<const float> score, const std::vector<bool>& allowed) {
  std::vector<std::int32_t> order;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(score.size()); ++i)
    if (allowed.empty() || allowed[static_cast<std::size_t>(i)]) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return score[a] > score[b]; });
  return order;
}

// Divides the k weights by their sum (taken in slot order), plus `epsilon` (DeepSeek-V3's 1e-20,
// which keeps an all-underflowed sigmoid row finite).
void renormalize(std::span<float> w, float epsilon) {
  float sum = 0.0f;
  for (float v : w) sum += v;
  sum += epsilon;
  for (float& v : w) v /= sum;
}

// Softmax over all E logits, top-k, optional renormalisation (Qwen3, Mixtral, gpt-oss). The
// choice is made on the logits themselves: softmax is monotone, so this is the top-k of the
// probabilities without depending on how exp rounds. exp is format::exp_f32, the CUDA kernels'.
void softmax_topk(const MoeLayer& layer, std::span<const float> logits, std::span<std::int32_t> ids,
                  std::span<float> w) {
  const std::vector<std::int32_t> order = ranked(logits, {});
  const float max = logits[static_cast<std::size_t>(order[0])];
  // The sum in format::kSoftmaxPartials strided partials, then their fixed tree.
  constexpr std::size_t kPartials = format::kSoftmaxPartials;
  std::array<float, kPartials> partial{};
  for (std::size_t e = 0; e < logits.size(); ++e)
    partial[e % kPartials] += format::exp_f32(logits[e] - max);
  for (std::size_t half = kPartials / 2; half > 0; half /= 2)
    for (std::size_t i = 0; i < half; ++i) partial[i] += partial[i + half];
  const float sum = partial[0];
  for (std::size_t j = 0; j < ids.size(); ++j) {
    ids[j] = order[j];
    w[j] = format::exp_f32(logits[static_cast<std::size_t>(order[j])] - max) / sum;
  }
  if (layer.renormalize) renormalize(w, 0.0f);
}

// The groups whose score (the sum of its two best choice scores, best first; the one score of a
// group of one) is among the topk_group highest; all experts when every group is kept.
std::vector<bool> kept_experts(const MoeLayer& layer, std::span<const float> choice) {
  if (layer.topk_group == layer.n_group) return {};
  const std::size_t size = choice.size() / static_cast<std::size_t>(layer.n_group);
  std::vector<float> group_score(static_cast<std::size_t>(layer.n_group));
  for (std::size_t g = 0; g < group_score.size(); ++g) {
    const std::vector<std::int32_t> best = ranked(choice.subspan(g * size, size), {});
    group_score[g] = choice[g * size + static_cast<std::size_t>(best[0])];
    if (size > 1) group_score[g] += choice[g * size + static_cast<std::size_t>(best[1])];
  }
  const std::vector<std::int32_t> groups = ranked(group_score, {});
  std::vector<bool> kept(choice.size(), false);
  for (std::int32_t i = 0; i < layer.topk_group; ++i) {
    const std::size_t g = static_cast<std::size_t>(groups[static_cast<std::size_t>(i)]);
    std::fill_n(kept.begin() + static_cast<std::ptrdiff_t>(g * size), size, true);
  }
  return kept;
}

// DeepSeek-V3: sigmoid scores; the choice on score + correction bias within the kept groups; the
// weights are the scores without the bias, optionally normalised.
void sigmoid_grouped_topk(const MoeLayer& layer, std::span<const float> logits,
                          std::span<std::int32_t> ids, std::span<float> w) {
  std::vector<float> score(logits.size()), choice(logits.size());
  for (std::size_t e = 0; e < logits.size(); ++e) {
    score[e] = format::sigmoid_f32(logits[e]);
    choice[e] = layer.correction_bias ? score[e] + layer.correction_bias[e] : score[e];
  }
  const std::vector<std::int32_t> order = ranked(choice, kept_experts(layer, choice));
  for (std::size_t j = 0; j < ids.size(); ++j) {
    ids[j] = order[j];
    w[j] = score[static_cast<std::size_t>(order[j])];
  }
  if (layer.renormalize) renormalize(w, 1e-20f);
}

}  // namespace

MoeRoutes route_tokens(const MoeLayer& layer, const MoeTokens& tokens) {
  const std::size_t T = static_cast<std::size_t>(tokens.num_tokens),
                    k = static_cast<std::size_t>(layer.top_k),
                    E = static_cast<std::size_t>(layer.num_experts);
  MoeRoutes routes;
  if (layer.routing == MoeRouting::precomputed) {
    routes.ids.assign(tokens.topk_ids, tokens.topk_ids + T * k);
    routes.weights.assign(tokens.topk_weights, tokens.topk_weights + T * k);
    return routes;
  }
  routes.ids.resize(T * k);
  routes.weights.resize(T * k);
  std::vector<float> row(E);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t e = 0; e < E; ++e) {
      const std::size_t i = t * E + e;
      row[e] = tokens.logits_dtype == DType::f32
                   ? static_cast<const float*>(tokens.router_logits)[i]
                   : format::bf16_to_float(static_cast<const bf16_bits*>(tokens.router_logits)[i]);
    }
    const std::span<std::int32_t> ids(routes.ids.data() + t * k, k);
    const std::span<float> w(routes.weights.data() + t * k, k);
    if (layer.routing == MoeRouting::softmax_topk) {
      softmax_topk(layer, row, ids, w);
    } else {
      sigmoid_grouped_topk(layer, row, ids, w);
    }
    for (float& v : w) v *= layer.routed_scaling_factor;
  }
  return routes;
}

}  // namespace metrale::cpu
