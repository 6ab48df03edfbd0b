// The data of a MoE layer check (Op::moe), generated from the case and its seed, and the layer and
// tokens over it in any memory space:
//   hidden [T, H]         integers in [-2, 2] (exact) or normal (realistic)
//   logits [T, E] fp32    normal × 2; skew: − 1.5·ln(1 + e); empty_expert: experts 0 and E/2 at
//                         −1e30 (never chosen)
//   correction bias [E]   normal × 0.1 (−1 for the emptied experts), when the recipe has one
//   topk ids, weights     precomputed router: route_choices' ids; weights 2^-r, r in [0, 3]
//                         (exact), or uniform in [1/16, 1) (realistic)
//   gate, up, down        a pool of P distinct packed weights per projection (P = E unless the
//                         layer would exceed kPoolElementBudget, as grouped.hpp), expert e using
//                         member e % P with its own scale_2 per projection
//   biases [I], [I], [H]  per expert, when the recipe has them: integers in [-4, 4] (exact) or
//                         normal × 0.5 (realistic)
// Exact mode: gate and up are grid weights and scale_2 a power of two, so every gate/up sum is
// exact; down has one nonzero per row (selection_weight_bf16), because the activation's output is
// arbitrary bf16 and no fp32 order sums several such products exactly. Realistic mode: the
// packer's scale_2 × (1 + (37e mod 64)/32) / √K, outputs of order one, so silu and the clamp work
// in their interesting range.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "check/check.hpp"
#include "check/weights.hpp"

namespace metrale::check {

enum MoeProjection { kGate = 0, kUp = 1, kDown = 2 };

struct MoeHost {
  Mode mode = Mode::exact;
  std::int32_t tokens = 0, experts = 0, top_k = 0, hidden = 0, inter = 0;
  MoeRecipe recipe;
  std::vector<bf16_bits> x;                       // [T, H]
  std::vector<float> logits;                      // [T, E]: routing from logits
  std::vector<float> correction_bias;             // [E], or empty
  std::vector<std::int32_t> ids;                  // [T, k]: precomputed routing
  std::vector<float> weights;                     // [T, k]: precomputed routing
  std::array<std::vector<PackedWeight>, 3> pool;  // gate, up, down: the distinct weights
  std::vector<std::int32_t> pool_of_expert;       // [E]
  std::array<std::vector<float>, 3> scale2;       // [projection][E]
  std::array<std::vector<bf16_bits>, 3> bias;     // [projection][E · N], or empty
  std::int32_t n_of(int projection) const { return projection == kDown ? hidden : inter; }
  std::int32_t k_of(int projection) const { return projection == kDown ? inter : hidden; }
  bool from_logits() const { return recipe.routing != MoeRouting::precomputed; }
};

// Throws HarnessError for what the case cannot build (shapes, routing).
MoeHost make_moe_host(const Case& c);

// Per-expert address tables of one memory space: packed and SFB scales per projection, biases.
struct MoeTables {
  std::array<std::vector<std::uint64_t>, 3> packed, scale, bias;
};
MoeTables host_tables(const MoeHost& h);

// The layer over `tables`; `correction_bias` in the same memory space (or null).
MoeLayer moe_layer(const MoeHost& h, const MoeTables& tables, const float* correction_bias);

// The inputs of `count` tokens in one memory space (null where the routing does not read them),
// and where the outputs go.
struct MoeTokenData {
  std::int32_t count = 0;
  const bf16_bits* x = nullptr;
  const float* logits = nullptr;
  const std::int32_t* ids = nullptr;
  const float* weights = nullptr;
  bf16_bits* out = nullptr;
  std::int32_t* ids_out = nullptr;
  float* weights_out = nullptr;
};
MoeTokens moe_tokens(const MoeTokenData& data);
// Sets the routing inputs h's router reads (the logits, or the precomputed ids and weights) and
// nulls the others.
void set_routing_inputs(const MoeHost& h, MoeTokenData& data, const float* logits,
                        const std::int32_t* ids, const float* weights);

// The outputs of one run of the layer: out [tokens, H], ids and weights [tokens, k].
struct MoeOutputs {
  std::vector<bf16_bits> out;
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
};

// The CPU oracle on the tokens `rows` (ascending): the same layer, those tokens' inputs.
MoeOutputs moe_oracle(const MoeHost& h, const std::vector<std::int64_t>& rows);

}  // namespace metrale::check
