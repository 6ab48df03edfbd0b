// Step 4 of the tiled family's kernels (tiled_kernel.cuh, ws_kernel.cuh): the accumulators x
// scale_2 as bf16 group rows, directly or through shared memory, and, for a tile whose K is cut
// into ranges, the fold of the ranges' sums before that (in a cluster or through the workspace).
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "format/bf16.hpp"

namespace metrale::cuda::sm90 {

// An output value: the fp32 sum x scale_2, rounded to bf16 (no FMA: the CPU oracle's rule).
__device__ __forceinline__ std::uint16_t scaled_bf16(float sum, float scale_2) {
  return format::float_to_bf16(__fmul_rn(sum, scale_2));
}

// Step 4. Accumulator (m64nNk16 fp32 layout) -> bf16 group rows.
template <class Config>
__device__ __forceinline__ void store_tile(const GroupedParams& p, std::uint16_t* out,
                                           float scale_2, int n0, int row_begin, int row_end,
                                           const float (&acc)[Config::tokens / 2],
                                           unsigned thread = threadIdx.x, int skip = 0) {
  const int lane = thread % 32, g = lane / 4, t = lane % 4;
  const int channel = n0 + (thread / 32) * 16 + g;
#pragma unroll
  for (int j = 0; j < Config::tokens / 8; ++j) {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int n = channel + (q >= 2 ? 8 : 0);
      const int row = row_begin + 8 * j + 2 * t + (q & 1);
      if (n < p.n && row < row_end && row >= row_begin + skip)
        out[static_cast<size_t>(row) * p.n + n] = scaled_bf16(acc[4 * j + q], scale_2);
    }
  }
}

// Step 4 through shared memory, for outputs whose token rows can be written 16 bytes at a time
// (N a multiple of 8, `out` 16-byte aligned). store_tile stores 2 bytes at a time, a warp's store
// touching four token rows; with its stores removed, prefill GEMMs ran up to 16 % faster
// (docs/perf.md, "2026-12-02, eighth session"). Here stmatrix transposes the accumulators
// (x scale_2, bf16: the same values) into a [token][channel] tile, and each thread copies whole
// 16-byte pieces of token rows: a warp instruction writes two rows of 128 channels.
template <class Config>
struct StagedTile {
  // A token row, padded so that the 8 rows a stmatrix writes fall in distinct banks.
  static constexpr int kPitch = Config::weight_rows * 2 + 16;
  static constexpr int kBytes = Config::tokens * kPitch;
  static constexpr int kPieces = Config::weight_rows / 8;  // 16-byte pieces of a token row
  static constexpr int kThreads = Config::weight_rows * 2;  // the consumers: 128 per 64 rows
  static constexpr bool kFits = Config::tokens % 16 == 0;  // stmatrix x4: 8-token groups in pairs
};

__device__ __forceinline__ uint32_t scaled_bf16x2(float lo, float hi, float scale_2) {
  return scaled_bf16(lo, scale_2) | static_cast<uint32_t>(scaled_bf16(hi, scale_2)) << 16;
}

// Whether store_tile_staged may write `out` (uniform over the CTA).
__device__ __forceinline__ bool rows_take_16_bytes(const GroupedParams& p,
                                                   const std::uint16_t* out) {
  return p.n % 8 == 0 && reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
}

// `barrier` synchronises the consumer threads; `staging` holds StagedTile::kBytes. Both stores
// leave the tile's first `skip` rows to another CTA (a K split's other ranks: fold_cluster).
template <class Config, class Barrier>
__device__ __forceinline__ void store_tile_staged(const GroupedParams& p, std::uint16_t* out,
                                                  float scale_2, int n0, int row_begin, int row_end,
                                                  const float (&acc)[Config::tokens / 2],
                                                  std::uint8_t* staging, unsigned thread,
                                                  Barrier barrier, int skip = 0) {
  using Staged = StagedTile<Config>;
  static_assert(Staged::kFits, "whole pairs of 8-token groups");
  // Matrix i of a stmatrix holds 8 tokens (group j + i / 2) x 8 channels (half i % 2 of the
  // warp's 16); lane L addresses token L % 8 of matrix L / 8.
  const int lane = thread % 32, matrix = lane / 8;
  const uint32_t first = smem_address(staging) + (8 * (matrix / 2) + lane % 8) * Staged::kPitch +
                         ((thread / 32) * 16 + (matrix % 2) * 8) * 2;
  barrier();  // the previous tile's copies have read the staging tile
#pragma unroll
  for (int j = 0; j < Config::tokens / 8; j += 2)
    stmatrix_x4_trans(first + 8 * j * Staged::kPitch,
                      scaled_bf16x2(acc[4 * j], acc[4 * j + 1], scale_2),
                      scaled_bf16x2(acc[4 * j + 2], acc[4 * j + 3], scale_2),
                      scaled_bf16x2(acc[4 * j + 4], acc[4 * j + 5], scale_2),
                      scaled_bf16x2(acc[4 * j + 6], acc[4 * j + 7], scale_2));
  barrier();
  constexpr int kRounds = Config::tokens * Staged::kPieces / Staged::kThreads;
  static_assert(kRounds * Staged::kThreads == Config::tokens * Staged::kPieces, "whole rounds");
  const int rows = row_end - row_begin;
#pragma unroll
  for (int round = 0; round < kRounds; ++round) {
    const int i = static_cast<int>(thread) + round * Staged::kThreads;
    const int r = i / Staged::kPieces, c = i % Staged::kPieces, n = n0 + 8 * c;
    if (r < rows && r >= skip && n < p.n)
      *reinterpret_cast<uint4*>(out + static_cast<size_t>(row_begin + r) * p.n + n) =
          *reinterpret_cast<const uint4*>(staging + r * Staged::kPitch + c * 16);
  }
}

// The narrow tiles' fold (folds_in_cluster): the ranges are the CTAs of one thread-block cluster,
// rank r holding range r. Each leaves its fp32 sums in its own shared memory (`scratch`, the free
// stages); then each rank takes a slice of the tile's 8-token groups and adds every rank's sums
// of it in rank order, through distributed shared memory, so any run gives the same bits and the
// fold's reads spread over the cluster. Returns the slice, [first, end) in tile rows, for the
// store. No workspace, no counter to zero, no launch in front.
struct TileSlice {
  int first, end;
};
template <int kThreads, int kAcc>
__device__ TileSlice fold_cluster(float (&acc)[kAcc], float* scratch) {
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int ranks = static_cast<int>(cluster.num_blocks());
  constexpr int kGroups = kAcc / 4;  // accumulator i holds tokens of group i / 4
  const int first = rank * kGroups / ranks, end = (rank + 1) * kGroups / ranks;
  __syncthreads();  // the stages are free: every warp's wgmmas are done
#pragma unroll
  for (int i = 0; i < kAcc; ++i) scratch[i * kThreads + threadIdx.x] = acc[i];
  cluster.sync();  // release the sums; acquire the others'
  for (int s = 0; s < ranks; ++s) {
    const float* sums = cluster.map_shared_rank(scratch, s);
#pragma unroll
    for (int i = 0; i < kAcc; ++i)
      if (i / 4 >= first && i / 4 < end) {
        const float v = sums[i * kThreads + threadIdx.x];
        acc[i] = s == 0 ? v : __fadd_rn(acc[i], v);
      }
  }
  cluster.sync();  // a rank's shared memory must outlive the others' reads
  return TileSlice{8 * first, 8 * end};
}

// A CTA's fp32 sums left at `mine` ([accumulator][thread]) for another CTA of the grid to read,
// then one arrival counted on `counter`: the count before it, for thread 0 (0 for the others).
// The workspace folds' half that writes (fold_splits, and stream-K's, stream_k_kernel.cuh).
template <int kThreads, int kAcc>
__device__ __forceinline__ std::uint32_t leave_sums(float* mine, const float (&acc)[kAcc],
                                                    std::uint32_t* counter) {
#pragma unroll
  for (int i = 0; i < kAcc; ++i) __stcg(mine + i * kThreads + threadIdx.x, acc[i]);
  __threadfence();
  __syncthreads();
  return threadIdx.x == 0 ? atomicAdd(counter, 1u) : 0u;
}

// The wide tiles' fold (folds_in_cluster false): every CTA of a split tile leaves its fp32 sums in
// the workspace, and the last to arrive adds all of them in split order (whichever CTA that is,
// so a second run gives the same bits) into `acc` and returns true; the others return false.
template <int kThreads, int kAcc>
__device__ bool fold_splits(const GroupedParams& p, int tile, int split, float (&acc)[kAcc]) {
  __shared__ int last;
  const size_t tile_floats = static_cast<size_t>(kAcc) * kThreads;
  const float* first = p.partials + static_cast<size_t>(tile) * p.splits * tile_floats;
  float* mine = p.partials + (static_cast<size_t>(tile) * p.splits + split) * tile_floats;
  const std::uint32_t before = leave_sums<kThreads>(mine, acc, p.counters + tile);
  if (threadIdx.x == 0) last = before == unsigned(p.splits - 1);
  __syncthreads();
  if (!last) return false;
  __threadfence();
  // Range by range, each range's loads in flight together (a loop over the ranges inside each
  // accumulator's made one L2 round trip per value: 2.5x the unsplit time at 2 ranges).
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = __ldcg(first + i * kThreads + threadIdx.x);
  for (int s = 1; s < p.splits; ++s) {
    float v[kAcc];
#pragma unroll
    for (int i = 0; i < kAcc; ++i)
      v[i] = __ldcg(first + s * tile_floats + i * kThreads + threadIdx.x);
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = __fadd_rn(acc[i], v[i]);
  }
  return true;
}

}  // namespace metrale::cuda::sm90
