// CPU reference of the MoE layer (moe_forward): route, group the (token, slot) pairs by local
// expert, gate/up through the grouped NVFP4 GEMM with the tokens gathered by id, bias and
// activation, down through the grouped GEMM again, and a combine that sums each token's slots in
// slot order in fp32. The GEMMs are cpu::nvfp4_grouped's, so the layer equals metrale's own
// grouped calls composed with this glue, bit for bit (docs/api.md, "The MoE layer"). Deterministic:
// nothing depends on the schedule. Host memory; arguments arrive validated.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "cpu/cpu_backend.hpp"
#include "cpu/footprint.hpp"
#include "cpu/moe_routing.hpp"
#include "format/bf16.hpp"
#include "format/moe_math.hpp"

namespace metrale::cpu {
namespace {

// The (token, slot) pairs of local experts in expert order, each expert's rows in (token, slot)
// order: group row i reads token row_token[i]; slot_row[t·k + j] is the group row of slot j of
// token t, or -1 when its expert is remote. Only the local experts that have rows take part
// (`experts`, ascending; the grouped calls see them as experts 0, 1, ...): with an expert map,
// num_local_experts may be far larger than E, and nothing here may cost O(num_local_experts).
// Experts without rows compute nothing in the grouped calls, so the result is the same.
struct Grouping {
  std::vector<std::int32_t> experts;  // the local experts with rows, ascending
  std::vector<std::int32_t> offsets;  // experts.size() + 1
  std::vector<std::int32_t> row_token, row_expert, slot_row;  // row_expert: local expert id
  std::int32_t max_rows = 0;
  std::int32_t rows() const { return offsets.back(); }
};

Grouping group_by_expert(const MoeLayer& layer, const std::vector<std::int32_t>& ids) {
  const std::size_t k = static_cast<std::size_t>(layer.top_k);
  Grouping g;
  g.slot_row.assign(ids.size(), -1);
  std::vector<std::int32_t> local(ids.size());
  for (std::size_t s = 0; s < ids.size(); ++s) {
    local[s] = layer.expert_map ? layer.expert_map[ids[s]] : ids[s];
    if (local[s] >= 0) g.experts.push_back(local[s]);
  }
  std::sort(g.experts.begin(), g.experts.end());
  g.experts.erase(std::unique(g.experts.begin(), g.experts.end()), g.experts.end());
  // local[s] becomes the index of its expert in g.experts (-1 stays -1).
  for (std::int32_t& l : local) {
    if (l >= 0)
      l = static_cast<std::int32_t>(std::lower_bound(g.experts.begin(), g.experts.end(), l) -
                                    g.experts.begin());
  }
  const std::size_t L = g.experts.size();
  std::vector<std::int32_t> count(L, 0);
  for (std::int32_t l : local)
    if (l >= 0) ++count[static_cast<std::size_t>(l)];
  g.offsets.assign(L + 1, 0);
  for (std::size_t l = 0; l < L; ++l) {
    g.offsets[l + 1] = g.offsets[l] + count[l];
    g.max_rows = std::max(g.max_rows, count[l]);
  }
  g.row_token.resize(static_cast<std::size_t>(g.rows()));
  g.row_expert.resize(static_cast<std::size_t>(g.rows()));
  std::vector<std::int32_t> next(g.offsets.begin(), g.offsets.end() - 1);
  for (std::size_t s = 0; s < ids.size(); ++s) {  // ascending (token, slot): a stable placement
    if (local[s] < 0) continue;
    const std::int32_t row = next[static_cast<std::size_t>(local[s])]++;
    g.row_token[static_cast<std::size_t>(row)] = static_cast<std::int32_t>(s / k);
    g.row_expert[static_cast<std::size_t>(row)] = g.experts[static_cast<std::size_t>(local[s])];
    g.slot_row[s] = row;
  }
  return g;
}

// One projection's tables, cut down to the grouping's experts (in its order).
struct ExpertTables {
  std::vector<std::uint64_t> packed, scale;
  std::vector<float> scale2;
  ExpertTables(const ExpertWeights& w, const Grouping& g) {
    for (std::int32_t l : g.experts) {
      const std::size_t i = static_cast<std::size_t>(l);
      packed.push_back(w.packed_ptrs[i]);
      scale.push_back(w.scale_ptrs[i]);
      scale2.push_back(w.scale2_vals[i]);
    }
  }
  ExpertWeights view() const { return {packed.data(), scale.data(), scale2.data()}; }
};

GroupedNvfp4 grouped_call(const MoeLayer& layer, const Grouping& g, std::int32_t n,
                          std::int32_t k) {
  GroupedNvfp4 args{};
  args.scale_layout = layer.scale_layout;
  args.weight_layout = layer.weight_layout;
  args.groups = ExpertGroups{g.offsets.data(), false, static_cast<std::int32_t>(g.experts.size()),
                             g.rows(), g.max_rows};
  args.n = n;
  args.k = k;
  return args;
}

// x[i, :] = bf16(x[i, :] + bias of row i's expert), when the layer has that bias.
void add_bias(const std::uint64_t* bias_ptrs, const Grouping& g, std::int32_t n,
              std::vector<bf16_bits>& x) {
  if (bias_ptrs == nullptr) return;
  const std::size_t N = static_cast<std::size_t>(n);
  for (std::size_t i = 0; i < g.row_expert.size(); ++i) {
    const auto* bias = reinterpret_cast<const bf16_bits*>(
        static_cast<std::uintptr_t>(bias_ptrs[static_cast<std::size_t>(g.row_expert[i])]));
    for (std::size_t c = 0; c < N; ++c) {
      const float sum = format::bf16_to_float(x[i * N + c]) + format::bf16_to_float(bias[c]);
      x[i * N + c] = format::float_to_bf16(sum);
    }
  }
}

float activation(const MoeLayer& layer, float g, float u) {
  if (layer.activation == MoeActivation::silu) return format::silu_mul(g, u);
  return format::swiglu_clamped(g, u, layer.swiglu_alpha, layer.swiglu_limit);
}

// out[t, :] = bf16(Σ_j w[t, j] · d[row of (t, j), :] + residual[t, :]), fp32, j ascending.
void combine(const MoeForward& args, const Grouping& g, const std::vector<float>& weights,
             const std::vector<bf16_bits>& d) {
  const MoeTokens& t = args.tokens;
  const std::size_t H = static_cast<std::size_t>(args.layer.hidden_size),
                    k = static_cast<std::size_t>(args.layer.top_k);
  std::vector<float> acc(H);
  for (std::size_t token = 0; token < static_cast<std::size_t>(t.num_tokens); ++token) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (std::size_t j = 0; j < k; ++j) {
      const std::int32_t row = g.slot_row[token * k + j];
      if (row < 0) continue;  // a remote expert: another rank adds this slot
      const float w = weights[token * k + j];
      const bf16_bits* src = d.data() + static_cast<std::size_t>(row) * H;
      for (std::size_t c = 0; c < H; ++c) acc[c] += w * format::bf16_to_float(src[c]);
    }
    // The residual row is read before out's row is written: out may be the residual buffer.
    for (std::size_t c = 0; c < H; ++c) {
      const float r = t.residual ? format::bf16_to_float(t.residual[token * H + c]) : 0.0f;
      t.out[token * H + c] = format::float_to_bf16(t.residual ? acc[c] + r : acc[c]);
    }
  }
}

// The layer's own scratch (the grouped calls check theirs): the routing, the grouping, and the
// gate, up, activation and down rows, all in bf16.
void require_moe_memory(const MoeForward& args) {
  const double T = args.tokens.num_tokens, k = args.layer.top_k, H = args.layer.hidden_size,
               I = args.layer.intermediate_size, E = args.layer.num_experts;
  require_host_memory(
      fmt::format("num_tokens = {}, top_k = {}, hidden_size = {}, intermediate_size = {}",
                  args.tokens.num_tokens, args.layer.top_k, args.layer.hidden_size,
                  args.layer.intermediate_size),
      {{"tokens", T * (H * 2 * 3 + E * 4)},
       {"routing", T * k * (4 + 4 + 4 * 4)},
       {"expert rows", T * k * (I * 2 * 3 + H * 2)}});
}

}  // namespace

void moe_forward(const MoeForward& args) {
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  if (t.num_tokens == 0) return;
  require_moe_memory(args);
  const MoeRoutes routes = route_tokens(layer, t);
  if (t.topk_ids_out) std::copy(routes.ids.begin(), routes.ids.end(), t.topk_ids_out);
  if (t.topk_weights_out)
    std::copy(routes.weights.begin(), routes.weights.end(), t.topk_weights_out);
  const Grouping g = group_by_expert(layer, routes.ids);
  const std::size_t M = static_cast<std::size_t>(g.rows()),
                    H = static_cast<std::size_t>(layer.hidden_size),
                    I = static_cast<std::size_t>(layer.intermediate_size);

  std::vector<bf16_bits> gate(M * I), up(M * I), d(M * H);
  if (M > 0) {
    GroupedNvfp4 gate_up = grouped_call(layer, g, layer.intermediate_size, layer.hidden_size);
    gate_up.a = t.hidden;
    gate_up.a_rows = t.num_tokens;
    gate_up.token_ids = g.row_token.data();
    const ExpertTables gate_w(layer.gate, g), up_w(layer.up, g), down_w(layer.down, g);
    gate_up.proj[0] = gate_w.view();
    gate_up.proj[1] = up_w.view();
    gate_up.out[0] = gate.data();
    gate_up.out[1] = up.data();
    gate_up.proj_count = 2;
    nvfp4_grouped(gate_up);
    add_bias(layer.gate_bias_ptrs, g, layer.intermediate_size, gate);
    add_bias(layer.up_bias_ptrs, g, layer.intermediate_size, up);
    for (std::size_t i = 0; i < M * I; ++i) {  // the activation overwrites gate
      gate[i] = format::float_to_bf16(
          activation(layer, format::bf16_to_float(gate[i]), format::bf16_to_float(up[i])));
    }
    GroupedNvfp4 down = grouped_call(layer, g, layer.hidden_size, layer.intermediate_size);
    down.a = gate.data();
    down.a_rows = g.rows();
    down.proj[0] = down_w.view();
    down.out[0] = d.data();
    down.proj_count = 1;
    nvfp4_grouped(down);
    add_bias(layer.down_bias_ptrs, g, layer.hidden_size, d);
  }
  combine(args, g, routes.weights, d);
}

}  // namespace metrale::cpu
