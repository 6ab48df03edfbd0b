// Steps 1 and 2 of the tiled family's kernels (tiled_kernel.cuh, ws_kernel.cuh): which expert and
// group rows a row tile covers (a scan over the expert offsets, device memory), and the tile's
// source rows (the gather through token ids).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"

namespace metrale::cuda::sm90 {

__device__ __forceinline__ int expert_offset(const GroupedParams& p, int e) {
  const int offset = p.offsets ? __ldg(p.offsets + e) : p.single.offsets[e == 0 ? 0 : 1];
  return min(max(offset, 0), p.m_total);
}

__device__ __forceinline__ ExpertEntry expert_entry(const GroupedParams& p, int projection,
                                                    int expert) {
  if (p.table == nullptr) return p.single.entry[projection == 0 ? 0 : 1];
  return p.table[projection * p.num_experts + expert];
}

// Row tiles of expert e: none when its rows belong to another family's window.
template <int kTokens>
__device__ __forceinline__ int expert_row_tiles(const GroupedParams& p, int e) {
  const int rows = max(expert_offset(p, e + 1) - expert_offset(p, e), 0);
  return rows >= p.min_rows && rows <= p.max_rows ? (rows + kTokens - 1) / kTokens : 0;
}

// The barrier among threads 0 .. kThreads - 1 that take part in a scan: the whole CTA, or (named
// barrier 1) a warp-specialised kernel's producer warpgroup.
template <int kThreads, bool kWholeCta>
struct ScanSync {
  __device__ __forceinline__ static void sync() {
    if constexpr (kWholeCta) __syncthreads();
    else named_barrier_sync<1, kThreads>();
  }
};

// Step 1. Maps row tile `tile` to its expert and group-row range with an exclusive scan of the
// experts' row tiles over threads 0 .. kThreads - 1 (each sums a contiguous run of experts, so
// any expert count works). Returns false (for every thread) when the tile is past the end.
template <int kThreads, int kTokens, bool kWholeCta = true>
__device__ bool locate_row_tile(const GroupedParams& p, int tile, int& expert, int& row_begin,
                                int& row_end) {
  using Sync = ScanSync<kThreads, kWholeCta>;
  constexpr int kWarps = kThreads / 32;
  __shared__ int warp_totals[kWarps];
  __shared__ int found[3];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  if (tid == 0) found[0] = -1;
  const int per_thread = (p.num_experts + kThreads - 1) / kThreads;
  const int first = tid * per_thread, last = min(first + per_thread, p.num_experts);
  int local = 0;
  for (int e = first; e < last; ++e) local += expert_row_tiles<kTokens>(p, e);
  int inclusive = local;
#pragma unroll
  for (int delta = 1; delta < 32; delta *= 2) {
    const int up = __shfl_up_sync(0xFFFFFFFFu, inclusive, delta);
    if (lane >= delta) inclusive += up;
  }
  if (lane == 31) warp_totals[warp] = inclusive;
  Sync::sync();
  int before = inclusive - local;
  for (int w = 0; w < warp; ++w) before += warp_totals[w];
  if (tile >= before && tile < before + local) {
    for (int e = first; e < last; ++e) {
      const int count = expert_row_tiles<kTokens>(p, e);
      if (tile >= before && tile < before + count) {
        const int begin = expert_offset(p, e) + (tile - before) * kTokens;
        found[0] = e;
        found[1] = begin;
        found[2] = min(begin + kTokens, expert_offset(p, e + 1));
      }
      before += count;
    }
  }
  Sync::sync();
  expert = found[0];
  row_begin = found[1];
  row_end = found[2];
  return expert >= 0;
}

// The row tiles of every expert (in the family's row window), summed over threads
// 0 .. kThreads - 1: how many tiles a persistent kernel walks.
template <int kThreads, int kTokens, bool kWholeCta = true>
__device__ int count_row_tiles(const GroupedParams& p) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  ScanSync<kThreads, kWholeCta>::sync();
  int local = 0;
  for (int e = threadIdx.x; e < p.num_experts; e += kThreads) local += expert_row_tiles<kTokens>(p, e);
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2) local += __shfl_down_sync(0xFFFFFFFFu, local, delta);
  if (threadIdx.x % 32 == 0) atomicAdd(&total, local);
  ScanSync<kThreads, kWholeCta>::sync();
  return total;
}

// Step 2. The tile's source rows (token_ids[i], or i) into shared memory; negative ids and, when
// the caller gave a_rows (> 0), ids past it read as zeros.
template <int kTokens, int kThreads>
__device__ __forceinline__ void gather_rows(const GroupedParams& p, int row_begin, int row_end,
                                            int* src_rows) {
  for (int r = threadIdx.x; r < kTokens; r += kThreads) {
    const int i = row_begin + r;
    int row = -1;
    if (i < row_end) {
      row = p.token_ids ? __ldg(p.token_ids + i) : i;
      if (row < 0 || (p.a_rows > 0 && row >= p.a_rows)) row = -1;
    }
    src_rows[r] = row;
  }
}

}  // namespace metrale::cuda::sm90
