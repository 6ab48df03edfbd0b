// MoE routing for the bench: per token, softmax over seeded random router logits, then the top-k
// experts; the (token, expert) pairs sorted by expert give the group order of the grouped GEMMs.
// (Op moe routes the same logits with each model's own function, inside the layer.)
// With skew s > 0 expert e's logit gains -s·ln(1 + e), so low-numbered experts are picked more
// often (roughly a Zipf law of exponent s before the top-k); s = 0 is uniform. Host only.
#pragma once

#include <cstdint>
#include <vector>

#include "metrale/metrale.hpp"

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

// The grouped calls' view of a routing: host offsets, every row of the groups.
ExpertGroups expert_groups(const Routing& r);

// The router logits route() draws, [tokens, experts] in fp32 (the MoE layer's input: op moe
// applies each model's own routing function to them).
std::vector<float> router_logits(int tokens, int experts, double skew, std::uint64_t seed);

// The grouping of a routing given as ids[t·top_k + j] (the experts of token t, e.g. a layer's
// topk_ids_out): rows sorted by expert, each expert's rows in (token, slot) order.
Routing routing_from_ids(int tokens, int experts, int top_k, const std::vector<std::int32_t>& ids);

}  // namespace metrale::bench
