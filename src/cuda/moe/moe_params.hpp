// The MoE layer's glue kernels on the CUDA backend (moe_route.cu, moe_glue.cu): their launch
// arguments and the scratch they share. Plain structs, included by host and device code.
//
// The layer runs on the caller's stream (moe_layer.cpp): route + group, the grouped gate/up GEMM,
// the activation, the grouped down GEMM, the combine (at decode sizes without gate/up biases,
// down's staging computes the activation, and its kernel does not run). Nothing goes through the
// host: the grouped GEMMs read the expert offsets the routing kernel wrote (device offsets).
#pragma once

#include <cstdint>

#include "cuda/fast_div.hpp"

namespace metrale::cuda::moe {

inline constexpr int kMaxRoutedExperts = 2048;  // E: the expert map travels as a parameter
inline constexpr int kMaxBiasExperts = 1024;    // L with biases: their pointers travel too
inline constexpr int kRouteThreads = 1024;      // a routing block: every warp groups, some route
inline constexpr int kRouteWarps = kRouteThreads / 32;  // most warps routing at once (a token each)
inline constexpr int kMaxRouteBlocks = 128;             // more tokens: each warp routes several
inline constexpr int kPlaceThreads = 256;               // a placing block (one per routing block)
// Routing blocks whose counts are summed per expert into one chunk (the placing launch's prefix
// over blocks reads the chunks before its own and the blocks before it in its own chunk).
inline constexpr int kPlaceChunk = 16;
inline constexpr int kMaxPlaceChunks = (kMaxRouteBlocks + kPlaceChunk - 1) / kPlaceChunk;

// What routing and grouping write, [T·k] per slot unless said otherwise.
struct Routes {
  float* weights;              // each slot's final weight
  std::int32_t* slot_local;    // its local expert, -1: remote, or a bad token's slot
  std::int32_t* slot_row;      // its row in the grouped GEMMs, -1: none
  std::int32_t* token_bad;     // [T] 1: non-finite logits or weights, or an id out of range
  std::int32_t* offsets;       // [L + 1] rows of local expert l: [offsets[l], offsets[l + 1])
  std::int32_t* row_token;     // [T·k] the token of each row; -1 past the last row
  std::int32_t* row_expert;    // [T·k] the local expert of each row
  std::uint32_t* ticket;       // blocks done routing (zeroed before the launch)
  std::int32_t* block_counts;  // [blocks][L] each routing block's slots per local expert (when
                               // the last block places the slots, then the rows of the blocks
                               // before it)
  std::int32_t* chunk_counts;  // [blocks / kPlaceChunk, rounded up][L] the slots per local expert
                               // of each chunk of routing blocks (with a placing launch)
  float* silu_table;           // [format::kBf16Patterns] cuda/silu_table.cuh, filled when not null
};

enum class RouteKind : std::int32_t { softmax_topk = 0, sigmoid_grouped_topk = 1, precomputed = 2 };

struct RouteArgs {
  Routes out;
  std::int32_t* topk_ids_out;    // optional [T, k]
  float* topk_weights_out;       // optional [T, k]
  const void* logits;            // [T, E] fp32 or bf16 (from logits)
  const std::int32_t* topk_ids;  // [T, k] (precomputed)
  const float* topk_weights;     // [T, k] (precomputed)
  const float* correction_bias;  // optional [E] (sigmoid)
  RouteKind kind;
  std::int32_t logits_bf16;
  std::int32_t renormalize;
  std::int32_t n_group, topk_group;
  float scaling;
  std::int32_t tokens, experts, top_k, local_experts;
  std::int32_t warps;             // routing warps per block (their scratch fits shared memory)
  std::int32_t tokens_per_block;  // block b routes tokens [b, b + 1) x tokens_per_block
  std::int32_t slot_copy_at;      // RouteShape::slot_copy_at
  std::int32_t last_block_places; // RouteShape::last_block_places
  // Set by launch_route from the fields above and the launch's threads: a slot's token
  // (slot / top_k) in one multiply, and each thread's run of experts in write_offsets.
  FastDiv slot_token;
  std::int32_t experts_per_thread;
};

// The expert map, global -> local id (-1: remote), when the layer has one. It travels with the
// routing launch alone (8 KB), so a layer without one launches with ~200 bytes of parameters.
struct ExpertMap {
  std::int32_t local[kMaxRoutedExperts];
};
struct NoMap {};
template <class Map>
struct RouteLaunch {
  RouteArgs args;
  Map map;
};

// Rows [0, offsets[L]) of gate and up: bias, activation, bf16, over gate.
struct ActivationArgs {
  std::uint16_t* gate;             // [rows, I] in; act(gate, up) out
  const std::uint16_t* up;         // [rows, I]
  const std::int32_t* total_rows;  // &offsets[L]
  const std::int32_t* row_expert;
  std::int32_t inter;
  std::int32_t clamped;  // swiglu_clamped, else silu
  float alpha, limit;
  const float* silu_table;  // cuda/silu_table.cuh, or null: computed
};

// out[t] = bf16(Σ_j w_j · bf16(d[row_j] + bias) + residual[t]), j ascending, fp32 without FMA.
struct CombineArgs {
  const std::uint16_t* down;  // [rows, H]
  const std::int32_t* slot_row;
  const float* weights;
  const std::int32_t* token_bad;
  const std::int32_t* row_expert;
  const std::uint16_t* residual;  // optional [T, H]
  std::uint16_t* out;             // [T, H]
  std::int32_t tokens, hidden, top_k;
};

// Per local expert, a bf16 bias pointer (null: none) of each of kTables projections: gate and up
// for the activation, down for the combine. They travel as launch parameters (16 KB and 8 KB),
// so only a layer with biases launches the kernels that take them.
template <int kTables>
struct BiasTables {
  const std::uint16_t* ptr[kTables][kMaxBiasExperts];
};

// A glue kernel's parameters: its arguments, and the bias tables when the layer has biases
// (Bias = BiasTables<N>) or nothing (Bias = NoBias).
struct NoBias {};
template <class Args, class Bias>
struct GlueLaunch {
  Args args;
  Bias bias;
};

}  // namespace metrale::cuda::moe
