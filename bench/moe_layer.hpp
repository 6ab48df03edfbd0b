// The MoE layer of `metrale bench --ops moe`, the parts both runs share (host only):
//   the layer     the model's shapes and recipe (check/moe_recipe.hpp), weights left to the run
//   its inputs    router logits = router_logits(seed, skew), as the grouped ops route;
//   DeepSeek-V3's
//                 correction bias normal × 0.1; gpt-oss's biases normal × 0.1 (bf16)
//   the oracle's  routing: the CPU backend's moe_forward on a miniature layer with the same
//   experts,
//                 top_k and recipe (the routing reads only the logits), through the public API. It
//                 says which experts to quantize before the layer runs, and it is the routing of
//                 the grouped calls when the layer cannot run
//   the tables    every expert must have weights (any may be routed): experts that are not
//   quantized
//                 point to one that is (never read: no row reaches them)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_config.hpp"
#include "bench/report.hpp"
#include "bench/routing.hpp"
#include "metrale/metrale.hpp"

namespace metrale::bench {

// Shapes and recipe; no weights, biases or correction bias yet.
MoeLayer layer_of(const ModelShape& m);

// [E] fp32 when the model's routing takes a correction bias, else empty.
std::vector<float> correction_bias_of(const ModelShape& m, std::uint64_t seed);

// The CPU oracle's routing of `logits` ([tokens, E]): topk ids [tokens, top_k].
std::vector<std::int32_t> oracle_routing(const ModelShape& m, const std::vector<float>& logits,
                                         const std::vector<float>& correction_bias, int tokens);

// gpt-oss's biases: bf16 normal × kBiasStddev, [E, N] per projection (gate, up, down) from
// bias_seed(seed, projection), on the host and on the device alike.
inline constexpr float kBiasStddev = 0.1f;
std::uint64_t bias_seed(std::uint64_t seed, int projection);

// Points every null entry of a per-expert table at `spare`.
void alias_unquantized(std::vector<std::uint64_t>& table, std::uint64_t spare);

// The moe row before any measurement, on routing `r`.
Row moe_row(const ModelShape& m, const Routing& r, const std::string& impl);

// A grouped row (op gate_up or down) as a part of a moe row.
GroupedPart as_part(const Row& grouped);

// NaN values among bf16 outputs (the poison a layer left unwritten, or non-finite results).
long long count_nan_bf16(const std::vector<bf16_bits>& values);

// Slots whose expert differs between two routings of the same tokens.
long long slots_differing(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b);

inline constexpr const char* kLayerRouting = "the layer's routing (topk_ids_out)";
inline constexpr const char* kOracleRouting = "the CPU oracle's routing (the layer did not run)";

}  // namespace metrale::bench
