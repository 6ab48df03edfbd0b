// Seeded top-k routing (routing.hpp): softmax over normal logits is monotone in the logits, so
// top-k of the logits is top-k of the softmax; `skew` adds -1.5·ln(1 + e) to expert e's logit
// (a few hot experts, a long cold tail); `empty_expert` never picks experts 0 and E/2;
// `one_expert` puts all T·top_k group rows on one seeded expert.
#include "check/routing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "check/inputs.hpp"
#include "check/weights.hpp"

namespace metrale::check {
namespace {

constexpr std::uint64_t kRoutingTag = 201;

// The experts of each token: choice[t·top_k + j].
std::vector<std::int32_t> choose_experts(const Routing& r, Rng& rng) {
  const std::int32_t E = r.experts, K = r.top_k;
  std::vector<std::int32_t> choice(static_cast<std::size_t>(r.tokens) * K);
  if (r.kind == RoutingKind::one_expert) {
    std::fill(choice.begin(), choice.end(), rng.below(E));
    return choice;
  }
  std::vector<float> logits(E);
  std::vector<std::int32_t> order(E);
  for (std::int32_t t = 0; t < r.tokens; ++t) {
    for (std::int32_t e = 0; e < E; ++e) {
      logits[e] = rng.normal();
      if (r.kind == RoutingKind::skew) logits[e] -= 1.5f * std::log1p(static_cast<float>(e));
      if (r.kind == RoutingKind::empty_expert && (e == 0 || e == E / 2))
        logits[e] = -std::numeric_limits<float>::infinity();
    }
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](std::int32_t a, std::int32_t b) {
                        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                      });
    std::copy(order.begin(), order.begin() + K, choice.begin() + static_cast<std::size_t>(t) * K);
  }
  return choice;
}

}  // namespace

std::vector<std::int32_t> route_choices(const Routing& r, std::uint64_t seed) {
  if (r.tokens < 0 || r.experts < 1 || r.top_k < 1 || r.top_k > r.experts) {
    throw HarnessError(fmt::format(
        "routing: tokens = {}, experts = {}, top_k = {}: expected tokens >= 0, experts >= 1 and "
        "1 <= top_k <= experts",
        r.tokens, r.experts, r.top_k));
  }
  const std::int32_t excluded = r.experts >= 2 ? 2 : 1;  // experts 0 and E/2
  if (r.kind == RoutingKind::empty_expert && r.experts - excluded < r.top_k) {
    throw HarnessError(
        fmt::format("routing empty_expert: experts = {} leaves fewer than top_k = "
                    "{} experts once 0 and E/2 are emptied",
                    r.experts, r.top_k));
  }
  Rng rng(derive_seed(seed, kRoutingTag));
  return choose_experts(r, rng);
}

RoutingPlan make_routing(const Routing& r, std::uint64_t seed) {
  const std::vector<std::int32_t> choice = route_choices(r, seed);
  RoutingPlan plan;
  plan.tokens = r.tokens;
  plan.experts = r.experts;
  plan.top_k = r.top_k;
  plan.m_total = r.tokens * r.top_k;
  plan.offsets.assign(static_cast<std::size_t>(r.experts) + 1, 0);
  for (std::int32_t e : choice) ++plan.offsets[static_cast<std::size_t>(e) + 1];
  for (std::int32_t e = 0; e < r.experts; ++e) {
    plan.max_rows = std::max(plan.max_rows, plan.offsets[e + 1]);
    plan.offsets[e + 1] += plan.offsets[e];
  }
  // Counting sort by expert, stable in (token, k) order.
  plan.sorted_token_ids.resize(plan.m_total);
  plan.expert_of_row.resize(plan.m_total);
  std::vector<std::int32_t> cursor(plan.offsets.begin(), plan.offsets.end() - 1);
  for (std::size_t pair = 0; pair < choice.size(); ++pair) {
    const std::int32_t e = choice[pair];
    const std::int32_t row = cursor[e]++;
    plan.sorted_token_ids[row] = static_cast<std::int32_t>(pair / r.top_k);
    plan.expert_of_row[row] = e;
  }
  return plan;
}

}  // namespace metrale::check
