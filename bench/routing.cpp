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

Routing route(int tokens, int experts, int top_k, double skew, std::uint64_t seed) {
  Routing r;
  r.tokens = tokens;
  r.experts = experts;
  r.top_k = top_k;
  const std::uint64_t logit_seed = derive_seed(seed, 0x726F757465ull);  // "route"
  std::vector<int> counts(experts, 0);
  std::vector<int> choice(static_cast<std::size_t>(tokens) * top_k);
  std::vector<double> prob(experts);
  std::vector<int> order(experts);
  for (int t = 0; t < tokens; ++t) {
    double peak = -1e300;
    for (int e = 0; e < experts; ++e) {
      const std::uint64_t index = static_cast<std::uint64_t>(t) * experts + e;
      prob[e] = normal_at(logit_seed, index) - skew * std::log1p(static_cast<double>(e));
      peak = std::max(peak, prob[e]);
    }
    double sum = 0;
    for (int e = 0; e < experts; ++e) sum += prob[e] = std::exp(prob[e] - peak);
    for (int e = 0; e < experts; ++e) prob[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    // Highest probability first; ties (measure zero) broken by the lower expert.
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [&](int a, int b) { return prob[a] != prob[b] ? prob[a] > prob[b] : a < b; });
    for (int j = 0; j < top_k; ++j) {
      choice[static_cast<std::size_t>(t) * top_k + j] = order[j];
      ++counts[order[j]];
    }
  }
  r.offsets.assign(experts + 1, 0);
  for (int e = 0; e < experts; ++e) {
    r.offsets[e + 1] = r.offsets[e] + counts[e];
    r.max_rows = std::max(r.max_rows, counts[e]);
    if (counts[e] > 0) r.active_experts.push_back(e);
  }
  // Counting sort by expert, tokens ascending inside each group.
  std::vector<std::int32_t> cursor(r.offsets.begin(), r.offsets.end() - 1);
  r.sorted_token_ids.assign(choice.size(), 0);
  for (int t = 0; t < tokens; ++t) {
    for (int j = 0; j < top_k; ++j) {
      const int e = choice[static_cast<std::size_t>(t) * top_k + j];
      r.sorted_token_ids[cursor[e]++] = t;
    }
  }
  return r;
}

}  // namespace metrale::bench
