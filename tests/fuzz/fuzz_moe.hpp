// The MoE layer's part of fuzz_abi_grouped: metrale_moe_forward and metrale_moe_workspace_size on
// the CPU backend, with a layer and tokens drawn field by field — struct_size (0, short, exact,
// larger), null structs, any routing, activation, n_group/topk_group, renormalize and scaling
// factor, an expert map with any entries, null or present per-expert tables and biases, NaN or
// huge logits and correction biases, topk_ids out of range, out aliasing the residual — at small
// shapes (E <= 5 experts, H <= 64, I <= 32, T <= 6 tokens) or any int32 (then no buffers).
// Each struct lives in a heap block of exactly its size, and every array the call may read holds
// exactly the entries metrale.h promises (E for the expert map and the correction bias,
// num_local_experts for the tables, T·E logits, T·k ids and weights): ASan sees one beyond.
// Tables have num_local_experts entries only while that count is small; a larger one gets null
// tables, which the library must refuse as soon as an expert can be routed to them.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <memory>

#include "fuzz_support.hpp"

namespace metrale::fuzz {

constexpr std::int32_t kMoeMaxTokens = 6, kMoeMaxExperts = 5, kMoeMaxHidden = 64,
                       kMoeMaxIntermediate = 32;
// Each hostile value is drawn rarely enough that a whole valid call (a few dozen draws) stays
// likely, so the fuzzer reaches the layer's computation as well as every refusal.
constexpr ExpertOdds kMoeOdds{.absent = 32, .any_scale2 = 32, .rare_last = true};

// A struct_size a caller might write: right, 0, one field short, larger, any byte.
template <class T>
std::size_t draw_struct_size(FuzzedDataProvider& in, std::size_t short_size) {
  if (!rarely(in, 16)) return sizeof(T);
  const std::size_t sizes[] = {0, short_size, sizeof(T) + 8, in.ConsumeIntegral<std::uint8_t>()};
  return sizes[in.ConsumeIntegralInRange<int>(0, 3)];
}

// A value in [lo, hi] most of the time, any int32 one time in 32.
inline std::int32_t draw_small(FuzzedDataProvider& in, std::int32_t lo, std::int32_t hi) {
  if (rarely(in, 32)) return in.ConsumeIntegral<std::int32_t>();
  return in.ConsumeIntegralInRange<std::int32_t>(lo, hi);
}

// `usual`, or any float (NaN, ±Inf, 0, negative, huge) one time in `one_in`.
inline float draw_float(FuzzedDataProvider& in, float usual, int one_in = 16) {
  return rarely(in, one_in) ? in.ConsumeFloatingPoint<float>() : usual;
}

// Everything the layer points at, kept alive for the call.
struct MoeState {
  std::vector<std::int32_t> expert_map;
  Experts gate, up, down;
  std::vector<Buffer> bias_buffers;
  std::vector<std::uint64_t> bias_tables[3];
  Buffer correction_bias;
};

// Per-expert bias tables: none, or `local` entries of bf16 [n] each (an entry null sometimes).
inline const std::uint64_t* draw_bias(FuzzedDataProvider& in, MoeState& s, int which,
                                      std::int32_t local, std::size_t n, bool tables) {
  if (!tables || !rarely(in, 4)) return nullptr;
  for (std::int32_t l = 0; l < local; ++l) {
    s.bias_buffers.emplace_back(in, n * 2, !rarely(in, 32), true);
    s.bias_tables[which].push_back(reinterpret_cast<std::uintptr_t>(s.bias_buffers.back().data()));
  }
  return s.bias_tables[which].data();
}

// The layer (E = experts as drawn by the harness, H = hidden, I = intermediate); `fits`: the
// shapes are small enough for real buffers.
inline metrale_moe_layer draw_layer(FuzzedDataProvider& in, MoeState& s, std::int32_t experts,
                                    std::int32_t hidden, std::int32_t intermediate, bool fits) {
  metrale_moe_layer layer = METRALE_MOE_LAYER_INIT;
  layer.struct_size =
      draw_struct_size<metrale_moe_layer>(in, offsetof(metrale_moe_layer, correction_bias));
  layer.num_experts = experts;
  layer.hidden_size = hidden;
  layer.intermediate_size = intermediate;
  layer.top_k = rarely(in, 8) ? draw_small(in, -1, kMoeMaxExperts + 1)
                              : in.ConsumeIntegralInRange<std::int32_t>(1, std::max(experts, 1));
  const bool small_e = small(experts, kMoeMaxExperts);
  if (small_e && rarely(in, 3)) {
    // An expert map: local ids in [-1, L) mostly, any int32 sometimes; L any int32 sometimes
    // (then the tables are null: valid only while every entry is -1).
    layer.num_local_experts = draw_small(in, 0, kMoeMaxExperts);
    s.expert_map.resize(static_cast<std::size_t>(experts));
    for (auto& l : s.expert_map)
      l = draw_small(in, -1, std::clamp(layer.num_local_experts, 0, kMoeMaxExperts) - 1);
    layer.expert_map = s.expert_map.data();
  } else {
    layer.num_local_experts = rarely(in, 16) ? in.ConsumeIntegral<std::int32_t>() : experts;
  }
  const std::int32_t local = layer.num_local_experts;
  const bool tables = small(local, kMoeMaxExperts);
  const std::size_t H = fits ? hidden : 0, I = fits ? intermediate : 0;
  const bool sfb = in.ConsumeBool();
  const metrale_scale_layout bad_layouts[] = {METRALE_SCALE_K16_BY_N, -1, 2, INT32_MIN};
  layer.scale_layout = sfb ? METRALE_SCALE_SFB : bad_layouts[in.ConsumeIntegralInRange<int>(0, 3)];
  const std::int32_t count = tables ? local : 0;
  s.gate = draw_experts(in, fits ? count : 0, I, H, sfb, kMoeOdds);
  s.up = draw_experts(in, fits ? count : 0, I, H, sfb, kMoeOdds);
  s.down = draw_experts(in, fits ? count : 0, H, I, sfb, kMoeOdds);
  // A table is null when the shapes do not fit (no weights to point at) or, sometimes, on purpose.
  auto weights = [&](Experts& x) {
    const bool present = fits && tables && !rarely(in, 32);
    return metrale_expert_weights{present ? x.packed.data() : nullptr,
                                  present ? x.scale.data() : nullptr,
                                  present ? x.scale2.data() : nullptr};
  };
  layer.gate = weights(s.gate);
  layer.up = weights(s.up);
  layer.down = weights(s.down);
  layer.gate_bias_ptrs = draw_bias(in, s, 0, count, I, fits && tables);
  layer.up_bias_ptrs = draw_bias(in, s, 1, count, I, fits && tables);
  layer.down_bias_ptrs = draw_bias(in, s, 2, count, H, fits && tables);
  layer.activation = draw_small(in, 0, 1);
  layer.swiglu_alpha = draw_float(in, 1.702f);
  layer.swiglu_limit = draw_float(in, 7.0f);
  layer.routing = draw_small(in, 0, 2);
  layer.renormalize = in.ConsumeIntegral<std::int32_t>();
  // Groups: 1 and 1 (all that softmax and precomputed accept) or, for the grouped sigmoid, any
  // count of groups up to E and any kept count (E % n_group != 0 and the like are refused).
  const bool grouped = layer.routing == METRALE_MOE_ROUTING_SIGMOID_GROUPED_TOPK;
  if (grouped ? !rarely(in, 4) : rarely(in, 16)) {
    layer.n_group = draw_small(in, 0, kMoeMaxExperts);
    layer.topk_group = draw_small(in, 0, kMoeMaxExperts);
  }
  layer.routed_scaling_factor = draw_float(in, in.ConsumeBool() ? 1.0f : 2.5f);
  if (small_e && (grouped ? in.ConsumeBool() : rarely(in, 16))) {
    s.correction_bias = Buffer(in, static_cast<std::size_t>(experts) * sizeof(float), true, true);
    layer.correction_bias = static_cast<const float*>(s.correction_bias.data());
  }
  return layer;
}

// A copy of `value` in a heap block of exactly sizeof(T) bytes, or null (1 time in 16).
template <class T>
std::unique_ptr<T> on_heap(FuzzedDataProvider& in, const T& value) {
  if (rarely(in, 32)) return nullptr;
  return std::make_unique<T>(value);
}

inline void moe_call(FuzzedDataProvider& in, std::int32_t experts, std::int32_t n, std::int32_t k) {
  // The grouped call's K (a multiple of 16 half the time) is the layer's H; its N or a multiple
  // of 16 is I.
  const std::int32_t hidden = k,
                     intermediate = rarely(in, 4) ? n : draw_dim(in, kMoeMaxIntermediate, 16);
  const std::int32_t tokens = draw_dim(in, kMoeMaxTokens, 1);
  const bool fits = small(experts, kMoeMaxExperts) && small(hidden, kMoeMaxHidden) &&
                    small(intermediate, kMoeMaxIntermediate) && small(tokens, kMoeMaxTokens);
  MoeState s;
  const metrale_moe_layer layer = draw_layer(in, s, experts, hidden, intermediate, fits);

  if (rarely(in, 4)) {
    std::size_t bytes = 0;
    const metrale_backend backend = in.ConsumeIntegralInRange<std::int32_t>(-1, 5);
    const std::unique_ptr<metrale_moe_layer> l = on_heap(in, layer);
    check_contract(
        "metrale_moe_workspace_size",
        metrale_moe_workspace_size(backend, l.get(), tokens, in.ConsumeBool() ? &bytes : nullptr));
    return;
  }

  // Token buffers: T·E logits, T·k ids and weights when k is in [1, E] (else the library refuses
  // k before reading them), T·H hidden, residual and out.
  const std::size_t T = fits ? tokens : 0, E = fits ? experts : 0, H = fits ? hidden : 0;
  const bool k_ok = layer.top_k >= 1 && layer.top_k <= experts;
  const std::size_t K = fits && k_ok ? layer.top_k : 0;
  metrale_moe_tokens t = METRALE_MOE_TOKENS_INIT;
  t.struct_size =
      draw_struct_size<metrale_moe_tokens>(in, offsetof(metrale_moe_tokens, topk_weights_out));
  t.num_tokens = tokens;
  // Logits for a routing from logits, ids and weights for precomputed ones; the other sometimes.
  const bool precomputed = layer.routing == METRALE_MOE_ROUTING_PRECOMPUTED;
  const bool bf16_logits = in.ConsumeBool();
  t.logits_dtype = bf16_logits ? METRALE_DTYPE_BF16 : draw_small(in, 0, 0);
  const bool with_logits = fits && (precomputed ? rarely(in, 16) : !rarely(in, 32));
  Buffer hidden_buf(in, T * H * 2, fits && !rarely(in, 32), true),
      logits(in, T * E * (bf16_logits ? 2 : 4), with_logits, true),
      residual(in, T * H * 2, fits && in.ConsumeBool(), true), out(in, T * H * 2, fits, true),
      ids_out(in, T * K * 4, fits && K > 0 && in.ConsumeBool(), true),
      weights_out(in, T * K * 4, fits && K > 0 && in.ConsumeBool(), true);
  // Ids: in [0, E) mostly, any int32 sometimes; weights: any float (NaN, ±Inf) sometimes.
  std::vector<std::int32_t> ids(T * K);
  for (auto& id : ids) {
    id = rarely(in, 64) ? in.ConsumeIntegral<std::int32_t>()
                        : in.ConsumeIntegralInRange<std::int32_t>(0, std::max(experts - 1, 0));
  }
  std::vector<float> weights(T * K);
  for (auto& w : weights) w = draw_float(in, 0.25f, 64);
  const bool pass_ids = fits && K > 0 && (precomputed ? !rarely(in, 32) : rarely(in, 16));
  t.hidden = hidden_buf.data();
  t.router_logits = logits.data();
  t.topk_ids = pass_ids && !rarely(in, 32) ? ids.data() : nullptr;
  t.topk_weights = pass_ids && !rarely(in, 32) ? weights.data() : nullptr;
  t.residual = residual.data();
  t.out = rarely(in, 4) && t.residual ? residual.data() : out.data();
  t.topk_ids_out = static_cast<std::int32_t*>(ids_out.data());
  t.topk_weights_out = static_cast<float*>(weights_out.data());

  metrale_exec exec = METRALE_EXEC_INIT;
  exec.backend = rarely(in, 16) ? in.ConsumeIntegral<std::int32_t>() : METRALE_BACKEND_CPU;
  const std::unique_ptr<metrale_moe_layer> l = on_heap(in, layer);
  const std::unique_ptr<metrale_moe_tokens> tk = on_heap(in, t);
  check_contract("metrale_moe_forward",
                 metrale_moe_forward(l.get(), tk.get(), rarely(in, 32) ? nullptr : &exec));
}

}  // namespace metrale::fuzz
