// Launchers of the MoE layer's glue kernels (moe_route.cu, moe_glue.cu) and the shared memory
// the routing kernel needs. Host code calls these; the kernels stay in their .cu files.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/moe/moe_params.hpp"
#include "format/bf16.hpp"

namespace metrale::cuda::moe {

// The most dynamic shared memory a routing block takes (the host picks its warp count to fit).
inline constexpr int kMaxRouteShared = 96 * 1024;
// The fewest threads a single routing block takes (four warps share the grouping's loops).
inline constexpr int kMinRouteThreads = 128;

// One routing warp's scratch: value and extra [E] fp32, the group scores [n_group] fp32, the
// chosen ids [k] int32 and their weights [k] fp32, the states [E] and [n_group] bytes; 16-byte
// multiples so that every warp's block stays aligned.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline constexpr std::size_t
    route_warp_bytes(int experts, int n_group, int top_k) {
  const std::size_t bytes = 4 * (2 * static_cast<std::size_t>(experts) + n_group + 2 * top_k) +
                            static_cast<std::size_t>(experts) + n_group;
  return (bytes + 15) / 16 * 16;
}

// A block's slots (local expert and rank each) stay in shared memory when they take at most this
// much; past it the ranking reads them from global memory.
inline constexpr int kMaxSlotCopyBytes = 32 * 1024;
// Up to this many tokens one block routes them all (no ticket, no memset, no placing launch);
// past it, blocks of about kRouteBlockTokens tokens spread the routing over the SMs: 64 tokens on
// two blocks of 32 routing warps took 21 us, each SM's warps queueing for its issue slots
// (docs/perf.md, 2026-12-02, second session).
inline constexpr int kSingleBlockTokens = 16;
inline constexpr int kRouteBlockTokens = 8;
// Past one block, up to this many slots the last block places them all (a routing block's
// threads, a few slots each) instead of a placing launch of a block per routing block. Measured
// with the placing launch's prefix (docs/perf.md, "2026-12-04, twelfth session"): the layer at
// Qwen3-30B T = 256 (2048 slots) 2.3 % faster with the launch, T = 128 0.9 %; level at 640 slots.
inline constexpr int kLastBlockPlaceSlots = 512;
// Up to this many slots in a single block, its threads group them by counting, each reading every
// slot (moe_route.cu's group_few_slots). Measured on an H100 against the rank, scan and place
// phases (docs/perf.md, thirty-third session): the layer 0.965x at Qwen3-30B T = 6 (48 slots),
// 0.98x at T = 8 and 0.99x on DeepSeek-V3 at T = 8 (64 slots); at 80-128 slots level.
inline constexpr int kFewSlots = 64;

// The routing launch's shape for T tokens: one block up to kSingleBlockTokens, else blocks of
// about kRouteBlockTokens tokens (at most kMaxRouteBlocks), each with a routing warp per token
// where shared memory holds their scratch; the block's threads are what its routing warps and its
// loops over the L experts need (at least four warps, at most 1024: its phases end at barriers
// that every warp must reach, and at T = 1 a block of 1024 threads spent most of its 15 us
// there). The dynamic shared memory is the larger of the routing warps' scratch and the
// grouping's (the last block's per-chunk rows [chunks][L], with chunks * L <= max(L, 1024) when it
// places the slots itself and chunks = place_chunks(blocks) before a placing launch, the offsets
// [L + 1], a scan [33]), then the block's slot copies when they fit.
struct RouteShape {
  int warps, tokens_per_block, blocks, threads;
  bool fills_silu_table;  // the blocks fill the layer's silu table (cuda/silu_table.cuh)
  int slot_copy_at;  // byte offset of the slot copies in shared memory; 0: none
  bool last_block_places;  // past one block: the last places every slot (no placing launch)
  bool few_slots;          // one block of at most kFewSlots slots: grouped by counting
  std::size_t shared_bytes;
};

// The chunks of kPlaceChunk routing blocks that a placing launch's prefix reads.
inline constexpr int place_chunks(int blocks) {
  return (blocks + kPlaceChunk - 1) / kPlaceChunk;
}

// The silu table pays where the activation's elements outnumber its entries several times over
// and the routing blocks are many enough that each fills a small share (1024 entries at 64
// blocks): at Qwen3-30B T = 64 (8 blocks, 8192 entries each) the layer took 1.057x its time
// without it. Its share is filled by threads that do not route, added where every warp routes:
// filled after the routing, it cost the kernel ~2 us at Qwen3-30B T = 512 and 1024 (docs/perf.md,
// "2026-12-04").
inline constexpr long long kSiluTableMinElements = 4LL * format::kBf16Patterns;
inline constexpr int kSiluTableMinBlocks = 64;
inline constexpr int kSiluTableFillThreads = 128;

// `silu_elements`: the layer's activation elements (T·k·I) when it is silu, else 0.
inline RouteShape route_shape(int tokens, int experts, int n_group, int top_k, int local_experts,
                              long long silu_elements = 0) {
  RouteShape r{};
  const std::size_t per_warp = route_warp_bytes(experts, n_group, top_k);  // at least 16
  const int fit = static_cast<int>(std::clamp<std::size_t>(
      static_cast<std::size_t>(kMaxRouteShared) / per_warp, 1, kRouteWarps));
  const int T = std::max(tokens, 1);
  const bool single = T <= kSingleBlockTokens && T <= fit;
  const int spread = (T + kRouteBlockTokens - 1) / kRouteBlockTokens;
  r.blocks = single ? 1 : std::clamp(spread, 1, kMaxRouteBlocks);
  r.tokens_per_block = (T + r.blocks - 1) / r.blocks;
  r.blocks = (T + r.tokens_per_block - 1) / r.tokens_per_block;
  r.warps = std::clamp(r.tokens_per_block, 1, fit);
  const int experts_rounded = (local_experts + 31) / 32 * 32;
  r.threads = std::clamp(std::max(32 * r.warps, experts_rounded), kMinRouteThreads, kRouteThreads);
  r.fills_silu_table = r.blocks >= kSiluTableMinBlocks && silu_elements >= kSiluTableMinElements;
  if (r.fills_silu_table)
    r.threads = std::min(kRouteThreads, std::max(r.threads, 32 * r.warps + kSiluTableFillThreads));
  const std::size_t L = static_cast<std::size_t>(local_experts);
  const std::size_t routing = static_cast<std::size_t>(r.warps) * per_warp;
  r.last_block_places = r.blocks > 1 && std::int64_t{T} * top_k <= kLastBlockPlaceSlots;
  r.few_slots = r.blocks == 1 && std::int64_t{T} * top_k <= kFewSlots;
  const std::size_t per_chunk = r.blocks > 1 && !r.last_block_places
                                    ? static_cast<std::size_t>(place_chunks(r.blocks)) * L
                                    : (L > kRouteThreads ? L : kRouteThreads);
  const std::size_t grouping = 4 * (per_chunk + L + 1 + 33);
  const std::size_t phases = ((routing > grouping ? routing : grouping) + 15) / 16 * 16;
  const std::size_t copies = 2 * 4 * static_cast<std::size_t>(r.tokens_per_block) * top_k;
  r.slot_copy_at = copies <= kMaxSlotCopyBytes ? static_cast<int>(phases) : 0;
  r.shared_bytes = phases + (r.slot_copy_at ? copies : 0);
  return r;
}

// Routes and groups: route_kernel, then place_kernel when the shape has more than one block and
// the last one does not place the slots itself.
// With more than one block, `args.out.ticket` must be zero when route_kernel starts (the caller
// zeroes it on the stream); a single block does not use it.
// `expert_map`: the layer's host array [args.experts], or null without one.
cudaError_t launch_route(const RouteArgs& args, const std::int32_t* expert_map,
                         const RouteShape& shape, cudaStream_t stream);
// `grid` blocks stride over the bound of rows (the true count is read on the device).
// `bias`: the layer's tables, or null without biases (the kernels then take none).
cudaError_t launch_activation(const ActivationArgs& args, const BiasTables<2>* bias, int grid,
                              cudaStream_t stream);
cudaError_t launch_combine(const CombineArgs& args, const BiasTables<1>* bias, cudaStream_t stream);

}  // namespace metrale::cuda::moe
