// MoE routing for the bench: per token, softmax over seeded random router logits, then the top-k
// experts; the (token, expert) pairs sorted by expert give the group order of the grouped GEMMs.
// With skew s > 0 expert e's logit gains -s·ln(1 + e), so low-numbered experts are picked more
// often (roughly a Zipf law of exponent s before the top-k); s = 0 is uniform. Host only.
#pragma once

#include <cstdint>
#include <vector>

namespace metrale::bench {

struct Routing {
  int tokens = 0, experts = 0, top_k = 0;
  std::vector<std::int32_t> offsets;  // experts + 1: expert e owns group rows [o[e], o[e+1])
  std::vector<std::int32_t> sorted_token_ids;  // tokens·top_k: group row -> token
  std::vector<std::int32_t> active_experts;    // experts with at least one row, ascending
  std::int32_t max_rows = 0;                   // rows of the largest group
  int rows() const { return tokens * top_k; }
  // Rows of each expert (o[e+1] - o[e]): what the JSON records so that another tool (e.g.
  // bench/torch_grouped.py) can rebuild the same grouping.
  std::vector<int> rows_per_expert() const;
};

Routing route(int tokens, int experts, int top_k, double skew, std::uint64_t seed);

}  // namespace metrale::bench
