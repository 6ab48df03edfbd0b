// The MoE layer on the CUDA backend: the workspace it carves and its launches, all on the caller's
// stream, none waiting for the host (so a graph captures it, and a replay routes the new logits):
//   1. route + group and, past one routing block, a 4-byte memset before it (the blocks' ticket)
//      and, past 512 slots (moe::kLastBlockPlaceSlots), the placing kernel after it
//      (moe_route.cu): the expert offsets, each row's token and each slot's row; from 64
//      routing blocks on (silu), the silu table too (cuda/silu_table.cuh), which steps 3 and 4
//      read;
//   2. gate/up: the grouped NVFP4 GEMM with device offsets and the rows gathered by token id;
//   3. the activation over gate and up (moe_glue.cu);
//   4. down: the grouped GEMM on the activation rows;
//   5. the combine (moe_glue.cu).
// Without gate/up biases, steps 2 and 3 are one when gate/up runs on the stream family (few
// rows): it applies the activation to its own sums as it stores them (nvfp4_grouped_to_glu);
// else steps 3 and 4 are one when down runs on the decode family (decode sizes): down's plan
// kernel computes the activation from the gate and up rows while it stages its input
// (nvfp4_grouped_on_glu). Either way the same bf16 values, and the activation kernel does not run.
// The grouped GEMMs are the ones nvfp4_grouped runs (the kernel-family dispatcher), bounded by
// max_rows_per_expert = T (T·k when a token may name a local expert twice): the layer equals
// metrale's grouped calls plus the glue, as the CPU oracle computes it.
#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/moe/moe_route.hpp"
#include "cuda/require_device.hpp"
#include "cuda/stage/expert_table.hpp"
#include "cuda/stage/workspace_carve.hpp"
#include "format/bf16.hpp"

namespace metrale::cuda {
namespace {

using moe::kMaxBiasExperts;
using moe::kMaxRoutedExperts;
constexpr int kNvfp4KMultiple = 32;  // both sm90 families' rule for K (their why_not)

std::int64_t slot_count(const MoeLayer& layer, int tokens) {
  return std::int64_t{tokens} * layer.top_k;
}

bool has_gate_up_bias(const MoeLayer& layer) {
  return layer.gate_bias_ptrs || layer.up_bias_ptrs;
}

bool has_bias(const MoeLayer& layer) { return has_gate_up_bias(layer) || layer.down_bias_ptrs; }

// The grouped GEMMs' row bound per expert: a token names an expert once when routing from logits;
// precomputed ids may repeat one, and a map may send two global experts to one local expert.
int max_rows_bound(const MoeLayer& layer, int tokens) {
  const bool repeats = layer.routing == MoeRouting::precomputed || layer.expert_map != nullptr;
  return static_cast<int>(repeats ? slot_count(layer, tokens) : tokens);
}

ExpertGroups device_groups(const MoeLayer& layer, int tokens, const std::int32_t* offsets) {
  return ExpertGroups{offsets, true, layer.num_local_experts,
                      static_cast<std::int32_t>(slot_count(layer, tokens)),
                      max_rows_bound(layer, tokens)};
}

std::size_t gemm_bytes(const MoeLayer& layer, int tokens) {
  const ExpertGroups groups = device_groups(layer, tokens, nullptr);
  return std::max(
      nvfp4_grouped_workspace_size(groups, layer.intermediate_size, layer.hidden_size, 2),
      nvfp4_grouped_workspace_size(groups, layer.hidden_size, layer.intermediate_size, 1));
}

struct Scratch {
  moe::RouteShape route;  // the routing launch, which the routes' block counts are sized for
  moe::Routes routes;
  std::uint16_t *gate, *up, *down;  // [T·k, I], [T·k, I], [T·k, H]
  core::Buffer gemm;
  std::size_t bytes;
};

Scratch carve(const MoeLayer& layer, int tokens, void* base) {
  const std::size_t slots = static_cast<std::size_t>(slot_count(layer, tokens));
  const std::size_t I = static_cast<std::size_t>(layer.intermediate_size),
                    H = static_cast<std::size_t>(layer.hidden_size);
  WorkspaceCarve c(base);
  Scratch s{};
  moe::Routes& r = s.routes;
  r.weights = c.take<float>(slots);
  r.slot_local = c.take<std::int32_t>(slots);
  r.slot_row = c.take<std::int32_t>(slots);
  r.token_bad = c.take<std::int32_t>(static_cast<std::size_t>(tokens));
  r.offsets = c.take<std::int32_t>(static_cast<std::size_t>(layer.num_local_experts) + 1);
  r.row_token = c.take<std::int32_t>(slots);
  r.row_expert = c.take<std::int32_t>(slots);
  r.ticket = c.take<std::uint32_t>(1);
  const bool silu = layer.activation == MoeActivation::silu;
  s.route = moe::route_shape(tokens, layer.num_experts, layer.n_group, layer.top_k,
                             layer.num_local_experts,
                             silu ? slot_count(layer, tokens) * layer.intermediate_size : 0);
  r.block_counts = c.take<std::int32_t>(static_cast<std::size_t>(s.route.blocks) *
                                        static_cast<std::size_t>(layer.num_local_experts));
  r.chunk_counts =
      c.take<std::int32_t>(static_cast<std::size_t>(moe::place_chunks(s.route.blocks)) *
                           static_cast<std::size_t>(layer.num_local_experts));
  r.silu_table = s.route.fills_silu_table ? c.take<float>(format::kBf16Patterns) : nullptr;
  s.gate = c.take<std::uint16_t>(slots * I);
  s.up = c.take<std::uint16_t>(slots * I);
  s.down = c.take<std::uint16_t>(slots * H);
  const std::size_t gemm = gemm_bytes(layer, tokens);
  s.gemm = core::Buffer{c.take<std::uint8_t>(gemm), gemm};
  s.bytes = c.used();
  return s;
}

// "tokens->" in the C ABI, "tokens." in C++ (validate_moe.cpp's convention).
std::string field(std::string_view who, std::string_view prefix, std::string_view name) {
  return fmt::format("{}{}{}", prefix, who.starts_with("metrale_") ? "->" : ".", name);
}

// Each local expert's packed weight (and SFB block scales) must be 16-byte aligned: the grouped
// GEMMs read them 16 bytes at a time. Null entries (local experts the map never reaches) pass, and
// so do null tables (no expert is reachable: validated), each table on its own.
void require_aligned_experts(std::string_view who, const MoeLayer& layer) {
  const bool sfb = layer.scale_layout == ScaleLayout::sfb;
  for (auto [name, w] : {std::pair{"gate", &layer.gate}, std::pair{"up", &layer.up},
                         std::pair{"down", &layer.down}}) {
    for (auto [table, field_name] : {std::pair{w->packed_ptrs, "packed_ptrs"},
                                     std::pair{sfb ? w->scale_ptrs : nullptr, "scale_ptrs"}}) {
      for (int e = 0; table != nullptr && e < layer.num_local_experts; ++e)
        if (table[e] % kPointerAlignment != 0)
          require_aligned_16(who,
                             field(who, "layer", fmt::format("{}.{}[{}]", name, field_name, e)),
                             reinterpret_cast<const void*>(table[e]));
    }
  }
}

// Whether any global expert maps to a local one: with none, the GEMMs have no rows (and the
// tables may be null), so only the routing and the combine run.
bool any_local_expert(const MoeLayer& layer) {
  if (layer.num_local_experts == 0) return false;
  if (layer.expert_map == nullptr) return true;
  return std::any_of(layer.expert_map, layer.expert_map + layer.num_experts,
                     [](std::int32_t l) { return l >= 0; });
}

void launch_route(const MoeForward& args, const Scratch& s, cudaStream_t stream) {
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  moe::RouteArgs a{};
  a.out = s.routes;
  a.topk_ids_out = t.topk_ids_out;
  a.topk_weights_out = t.topk_weights_out;
  a.logits = t.router_logits;
  a.topk_ids = t.topk_ids;
  a.topk_weights = t.topk_weights;
  a.correction_bias = layer.correction_bias;
  a.kind = static_cast<moe::RouteKind>(layer.routing);
  a.logits_bf16 = t.logits_dtype == DType::bf16;
  a.renormalize = layer.renormalize;
  a.n_group = layer.n_group;
  a.topk_group = layer.topk_group;
  a.scaling = layer.routed_scaling_factor;
  a.tokens = t.num_tokens;
  a.experts = layer.num_experts;
  a.top_k = layer.top_k;
  a.local_experts = layer.num_local_experts;
  a.warps = s.route.warps;
  a.tokens_per_block = s.route.tokens_per_block;
  a.slot_copy_at = s.route.slot_copy_at;
  a.last_block_places = s.route.last_block_places;
  if (s.route.blocks > 1)  // the blocks' ticket; a single block needs none
    METRALE_CUDA_CHECK(cudaMemsetAsync(s.routes.ticket, 0, sizeof(std::uint32_t), stream));
  METRALE_CUDA_CHECK(moe::launch_route(a, layer.expert_map, s.route, stream));
}

// One grouped GEMM of the layer on the routing's device offsets: `a` ([a_rows, k], gathered
// through token_ids when given) times each projection's weights into its output ([T·k, n]).
struct GroupedStep {
  const bf16_bits* a;
  std::int32_t a_rows;
  const std::int32_t* token_ids;
  std::initializer_list<std::pair<const ExpertWeights*, bf16_bits*>> projections;
  int n, k;
};

GroupedNvfp4 grouped_args(const MoeForward& args, const Scratch& s, const GroupedStep& step) {
  GroupedNvfp4 g{};
  g.a = step.a;
  g.a_rows = step.a_rows;
  g.token_ids = step.token_ids;
  for (auto [weights, out] : step.projections) {
    g.proj[g.proj_count] = *weights;
    g.out[g.proj_count++] = out;
  }
  g.scale_layout = args.layer.scale_layout;
  g.weight_layout = args.layer.weight_layout;
  g.groups = device_groups(args.layer, args.tokens.num_tokens, s.routes.offsets);
  g.n = step.n;
  g.k = step.k;
  return g;
}

// Gate/up's GEMM: the hidden rows gathered by token, both projections in one call.
GroupedNvfp4 gate_up_args(const MoeForward& args, const Scratch& s) {
  const MoeLayer& layer = args.layer;
  return grouped_args(args, s,
                      {args.tokens.hidden,
                       args.tokens.num_tokens,
                       s.routes.row_token,
                       {{&layer.gate, s.gate}, {&layer.up, s.up}},
                       layer.intermediate_size,
                       layer.hidden_size});
}

// The tables' device pointers per local expert (null where a table is not given); false, and
// nothing written, when none is given: only then may the layer have more local experts than `out`
// holds (kMaxBiasExperts; refuse_moe_layer_beyond_limits refuses more with biases). Filling the
// null entries of a layer without biases ran past `out` at 1025 local experts or more, over the
// arguments beside it.
template <int kTables>
bool fill_bias_tables(const MoeLayer& layer, const std::uint64_t* const (&tables)[kTables],
                      moe::BiasTables<kTables>& out) {
  if (std::none_of(std::begin(tables), std::end(tables), [](auto t) { return t != nullptr; }))
    return false;
  for (int p = 0; p < kTables; ++p)
    for (int e = 0; e < layer.num_local_experts; ++e)
      out.ptr[p][e] = tables[p] ? reinterpret_cast<const std::uint16_t*>(tables[p][e]) : nullptr;
  return true;
}

void run_activation(const MoeForward& args, const Scratch& s, cudaStream_t stream) {
  const MoeLayer& layer = args.layer;
  thread_local moe::ActivationArgs a;
  a.gate = s.gate;
  a.up = s.up;
  a.total_rows = s.routes.offsets + layer.num_local_experts;
  a.row_expert = s.routes.row_expert;
  a.inter = layer.intermediate_size;
  a.clamped = layer.activation == MoeActivation::swiglu_clamped;
  a.alpha = layer.swiglu_alpha;
  a.limit = layer.swiglu_limit;
  a.silu_table = s.routes.silu_table;
  thread_local moe::BiasTables<2> bias;
  const bool biased = fill_bias_tables(layer, {layer.gate_bias_ptrs, layer.up_bias_ptrs}, bias);
  const long long vectors =
      slot_count(layer, args.tokens.num_tokens) * (layer.intermediate_size / 8);
  constexpr int kThreads = 256, kBlocksPerSm = 8;
  const int grid = static_cast<int>(std::clamp<long long>((vectors + kThreads - 1) / kThreads, 1,
                                                          1LL * kBlocksPerSm * device_sm_count()));
  METRALE_CUDA_CHECK(moe::launch_activation(a, biased ? &bias : nullptr, grid, stream));
}

// Down's GEMM: its input is the gate rows, in expert order (no gather); after the activation
// kernel, or gate/up writing the gated output, they hold the activation.
GroupedNvfp4 down_args(const MoeForward& args, const Scratch& s) {
  const MoeLayer& layer = args.layer;
  return grouped_args(args, s,
                      {s.gate,
                       static_cast<std::int32_t>(slot_count(layer, args.tokens.num_tokens)),
                       nullptr,
                       {{&layer.down, s.down}},
                       layer.hidden_size,
                       layer.intermediate_size});
}

// The layer's activation over the gate and up rows, without biases (those only the activation
// kernel adds).
GluInput glu_of(const MoeLayer& layer, const Scratch& s) {
  GluInput glu;
  glu.up = s.up;
  glu.clamped = layer.activation == MoeActivation::swiglu_clamped;
  glu.alpha = layer.swiglu_alpha;
  glu.limit = layer.swiglu_limit;
  glu.silu_table = s.routes.silu_table;
  return glu;
}

// Gate/up, the activation and down: without gate/up biases, gate/up writing the activation
// where its family applies it to its sums, or down computing it as its family stages its input;
// else gate/up, the activation kernel, then down.
void run_gate_up_to_down(const MoeForward& args, const Scratch& s, cudaStream_t stream) {
  const bool biased = has_gate_up_bias(args.layer);
  const GluInput glu = glu_of(args.layer, s);
  if (!biased && nvfp4_grouped_to_glu(gate_up_args(args, s), glu, s.gemm, stream)) {
    nvfp4_grouped(down_args(args, s), s.gemm, stream);
    return;
  }
  nvfp4_grouped(gate_up_args(args, s), s.gemm, stream);
  if (!biased && nvfp4_grouped_on_glu(down_args(args, s), glu, s.gemm, stream)) return;
  run_activation(args, s, stream);
  nvfp4_grouped(down_args(args, s), s.gemm, stream);
}

void run_combine(const MoeForward& args, const Scratch& s, cudaStream_t stream) {
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  thread_local moe::CombineArgs a;
  a.down = s.down;
  a.slot_row = s.routes.slot_row;
  a.weights = s.routes.weights;
  a.token_bad = s.routes.token_bad;
  a.row_expert = s.routes.row_expert;
  a.residual = t.residual;
  a.out = t.out;
  a.tokens = t.num_tokens;
  a.hidden = layer.hidden_size;
  a.top_k = layer.top_k;
  thread_local moe::BiasTables<1> bias;
  const bool biased = fill_bias_tables(layer, {layer.down_bias_ptrs}, bias);
  METRALE_CUDA_CHECK(moe::launch_combine(a, biased ? &bias : nullptr, stream));
}

}  // namespace

void refuse_moe_layer_beyond_limits(std::string_view who, const MoeLayer& layer) {
  if (layer.num_experts > kMaxRoutedExperts)
    fail(Status::unsupported,
         "{}: {} = {} exceeds the CUDA MoE layer's limit of {} (its routing scratch and the "
         "expert map travel with the routing launch)",
         who, field(who, "layer", "num_experts"), layer.num_experts, kMaxRoutedExperts);
  if (layer.num_local_experts > kMaxExperts)
    fail(Status::unsupported, "{}: {} = {} exceeds the CUDA backend's limit of {}", who,
         field(who, "layer", "num_local_experts"), layer.num_local_experts, kMaxExperts);
  if (has_bias(layer) && layer.num_local_experts > kMaxBiasExperts)
    fail(Status::unsupported,
         "{}: {} = {} with biases exceeds the CUDA MoE layer's limit of {} (the bias pointers "
         "travel with the activation and combine launches)",
         who, field(who, "layer", "num_local_experts"), layer.num_local_experts, kMaxBiasExperts);
  for (auto [name, size] : {std::pair{"hidden_size", layer.hidden_size},
                            std::pair{"intermediate_size", layer.intermediate_size}}) {
    if (size % kNvfp4KMultiple != 0)
      fail(Status::unsupported,
           "{}: {} = {} is not a multiple of {} (it is K of a grouped NVFP4 GEMM, whose packed "
           "rows the CUDA kernels load 16 bytes at a time)",
           who, field(who, "layer", name), size, kNvfp4KMultiple);
  }
}

void refuse_moe_beyond_limits(std::string_view who, const MoeForward& args) {
  refuse_moe_layer_beyond_limits(who, args.layer);
  if (args.tokens.num_tokens == 0) return;
  require_aligned_16(who, field(who, "tokens", "hidden"), args.tokens.hidden);
  require_aligned_16(who, field(who, "tokens", "out"), args.tokens.out);
  if (args.tokens.residual)
    require_aligned_16(who, field(who, "tokens", "residual"), args.tokens.residual);
  require_aligned_experts(who, args.layer);
}

std::size_t moe_workspace_size(const MoeLayer& layer, int num_tokens) {
  if (num_tokens <= 0) return 0;
  return carve(layer, num_tokens, nullptr).bytes;
}

void moe_forward(std::string_view who, const MoeForward& args, core::Buffer ws, void* stream) {
  const MoeLayer& layer = args.layer;
  const MoeTokens& t = args.tokens;
  const Scratch s = carve(layer, t.num_tokens, ws.ptr);
  if (ws.size < s.bytes)
    fail(Status::workspace_too_small, "{}: needs {} bytes of workspace, got {}", who, s.bytes,
         ws.size);
  const auto st = static_cast<cudaStream_t>(stream);
  launch_route(args, s, st);
  if (any_local_expert(layer)) {
    run_gate_up_to_down(args, s, st);
  }
  run_combine(args, s, st);
}

}  // namespace metrale::cuda
