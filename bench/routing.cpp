// Softmax-then-top-k routing over seeded random logits (routing.hpp).
#include "bench/routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "bench/random.hpp"

namespace metrale::bench {

std::vector<int> Routing::rows_per_expert() const {
  std::vector<int> rows(experts, 0);
  for (int e = 0; e < experts; ++e) rows[e] = offsets[e + 1] - offsets[e];
  return rows;
}

ExpertGroups expert_groups(const Routing& r) {
  return ExpertGroups{r.offsets.data(), false, r.experts, r.rows(), r.max_rows};
}

namespace {

constexpr std::uint64_t kRouteTag = 0x726F757465ull;  // "route"

double logit(std::uint64_t logit_seed, int token, int experts, int e, double skew) {
  const std::uint64_t index = static_cast<std::uint64_t>(token) * experts + e;
  return normal_at(logit_seed, index) - skew * std::log1p(static_cast<double>(e));
}

}  // namespace

std::vector<float> router_logits(int tokens, int experts, double skew, std::uint64_t seed) {
  const std::uint64_t logit_seed = derive_seed(seed, kRouteTag);
  std::vector<float> logits(static_cast<std::size_t>(tokens) * experts);
  for (int t = 0; t < tokens; ++t) {
    for (int e = 0; e < experts; ++e)
      logits[static_cast<std::size_t>(t) * experts + e] =
          static_cast<float>(logit(logit_seed, t, experts, e, skew));
  }
  return logits;
}

Routing routing_from_ids(int tokens, int experts, int top_k, const std::vector<std::int32_t>& ids) {
  Routing r;
  r.tokens = tokens;
  r.experts = experts;
  r.top_k = top_k;
  std::vector<int> counts(experts, 0);
  for (std::int32_t e : ids) ++counts[e];
  r.offsets.assign(experts + 1, 0);
  for (int e = 0; e < experts; ++e) {
    r.offsets[e + 1] = r.offsets[e] + counts[e];
    r.max_rows = std::max(r.max_rows, counts[e]);
    if (counts[e] > 0) r.active_experts.push_back(e);
  }
  // Counting sort by expert, stable in (token, slot) order.
  std::vector<std::int32_t> cursor(r.offsets.begin(), r.offsets.end() - 1);
  r.sorted_token_ids.assign(ids.size(), 0);
  for (std::size_t slot = 0; slot < ids.size(); ++slot)
    r.sorted_token_ids[cursor[ids[slot]]++] = static_cast<std::int32_t>(slot / top_k);
  return r;
}

Routing route(int tokens, int experts, int top_k, double skew, std::uint64_t seed) {
  const std::uint64_t logit_seed = derive_seed(seed, kRouteTag);
  std::vector<std::int32_t> choice(static_cast<std::size_t>(tokens) * top_k);
  std::vector<double> prob(experts);
  std::vector<int> order(experts);
  for (int t = 0; t < tokens; ++t) {
    double peak = -1e300;
    for (int e = 0; e < experts; ++e) {
      prob[e] = logit(logit_seed, t, experts, e, skew);
      peak = std::max(peak, prob[e]);
    }
    double sum = 0;
    for (int e = 0; e < experts; ++e) sum += prob[e] = std::exp(prob[e] - peak);
    for (int e = 0; e < experts; ++e) prob[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    // Highest probability first; ties (measure zero) broken by the lower expert.
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int a, int b) { return prob[a] != prob[b] ? prob[a] > prob[b] : a < b; });
    for (int j = 0; j < top_k; ++j) choice[static_cast<std::size_t>(t) * top_k + j] = order[j];
  }
  return routing_from_ids(tokens, experts, top_k, choice);
}

}  // namespace metrale::bench
