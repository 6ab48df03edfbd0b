// The MoE layer's routing on the CPU: each token's top_k experts and their weights, from router
// logits (softmax top-k; DeepSeek-V3's grouped sigmoid top-k) or the caller's ids and weights.
// Every step in fp32 in a fixed order (docs/api.md, "Routing"), the choice by a stable sort, so
// ties go to the lower expert (or group) id. Host memory; arguments arrive validated.
#pragma once

#include <cstdint>
#include <vector>

#include "metrale/metrale.hpp"

namespace metrale::cpu {

// [T, k] each: slot j of token t is expert ids[t·k + j] (global id) with weight weights[t·k + j];
// slots in the order chosen (highest score first), or the caller's order when precomputed.
struct MoeRoutes {
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

MoeRoutes route_tokens(const MoeLayer& layer, const MoeTokens& tokens);

}  // namespace metrale::cpu
