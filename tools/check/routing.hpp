// Seeded top-k routing of T tokens over E experts, in the form the grouped operations take:
// group rows in expert order, expert e owning rows [offsets[e], offsets[e+1]), and
// sorted_token_ids[i] the token of group row i (the token id of each (token, k) pair, pairs of
// one expert in token order). M_total = T·top_k.
#pragma once

#include <cstdint>
#include <vector>

#include "check/check.hpp"

namespace metrale::check {

struct RoutingPlan {
  std::int32_t tokens = 0, experts = 0, top_k = 0;
  std::int32_t m_total = 0;
  std::int32_t max_rows = 0;                   // rows of the busiest expert
  std::vector<std::int32_t> offsets;           // experts + 1 entries
  std::vector<std::int32_t> sorted_token_ids;  // m_total entries
  std::vector<std::int32_t> expert_of_row;     // m_total entries
};

// Throws HarnessError for an impossible request (top_k > experts, negative sizes, ...).
RoutingPlan make_routing(const Routing& routing, std::uint64_t seed);

// The experts make_routing groups, per token: choice[t·top_k + j] (the same checks and draws).
std::vector<std::int32_t> route_choices(const Routing& routing, std::uint64_t seed);

}  // namespace metrale::check
