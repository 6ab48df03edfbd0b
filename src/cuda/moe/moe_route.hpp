// Launchers of the MoE layer's glue kernels (moe_route.cu, moe_glue.cu) and the shared memory
// the routing kernel needs. Host code calls these; the kernels stay in their .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/moe/moe_params.hpp"

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

// The routing launch's shape for T tokens: as many routing warps per block as shared memory
// holds (but no more than T), at most kMaxRouteBlocks blocks of contiguous tokens, and the dynamic
// shared memory of either phase: the routing warps' scratch, or the last block's grouping (the
// per-chunk rows [chunks][L] with chunks * L <= max(L, threads), the offsets [L + 1], a scan [33]).
// A single block (T within one block's warps) takes only the threads its routing warps and its
// loops over the L experts need: its phases end at barriers that every warp must reach, and at
// T = 1 a block of 1024 threads spent most of its 15 us there (docs/perf.md, 2026-12-02).
struct RouteShape {
  int warps, tokens_per_block, blocks, threads;
  std::size_t shared_bytes;
};

inline RouteShape route_shape(int tokens, int experts, int n_group, int top_k, int local_experts) {
  RouteShape r{};
  const int per_warp = static_cast<int>(route_warp_bytes(experts, n_group, top_k));
  const int fit = kMaxRouteShared / per_warp;
  r.warps = fit < tokens ? fit : tokens;
  r.warps = r.warps < 1 ? 1 : (r.warps > kRouteWarps ? kRouteWarps : r.warps);
  int blocks = (tokens + r.warps - 1) / r.warps;
  blocks = blocks > kMaxRouteBlocks ? kMaxRouteBlocks : (blocks < 1 ? 1 : blocks);
  r.tokens_per_block = (tokens + blocks - 1) / blocks;
  if (r.tokens_per_block < 1) r.tokens_per_block = 1;
  r.blocks = (tokens + r.tokens_per_block - 1) / r.tokens_per_block;
  if (r.blocks < 1) r.blocks = 1;
  r.threads = kRouteThreads;
  if (r.blocks == 1) {
    const int experts_rounded = (local_experts + 31) / 32 * 32;
    int threads = 32 * r.warps > experts_rounded ? 32 * r.warps : experts_rounded;
    threads = threads < kMinRouteThreads ? kMinRouteThreads : threads;
    r.threads = threads > kRouteThreads ? kRouteThreads : threads;
  }
  const std::size_t L = static_cast<std::size_t>(local_experts);
  const std::size_t routing = static_cast<std::size_t>(r.warps) * per_warp;
  const std::size_t grouping = 4 * ((L > kRouteThreads ? L : kRouteThreads) + L + 1 + 33);
  r.shared_bytes = routing > grouping ? routing : grouping;
  return r;
}

// Routes and groups: route_kernel, then place_kernel when the shape has more than one block.
// With more than one block, `args.out.ticket` must be zero when route_kernel starts (the caller
// zeroes it on the stream); a single block does not use it.
cudaError_t launch_route(const RouteArgs& args, const RouteShape& shape, cudaStream_t stream);
// `grid` blocks stride over the bound of rows (the true count is read on the device).
// `bias`: the layer's tables, or null without biases (the kernels then take none).
cudaError_t launch_activation(const ActivationArgs& args, const BiasTables<2>* bias, int grid,
                              cudaStream_t stream);
cudaError_t launch_combine(const CombineArgs& args, const BiasTables<1>* bias, cudaStream_t stream);

}  // namespace metrale::cuda::moe
