// Stream-K for the dense bf16 GEMM (TiledWeights::bf16_tma): a grid of one CTA a multiprocessor
// that shares out the GEMM's k-tiles instead of its output tiles.
//
// A grid of output tiles runs in waves: 96 tiles of 64 x 128 on 132 multiprocessors (Qwen3-30B's
// dense GEMM at M = 512) leave 36 idle while each of the others runs a whole K of 32 k-tiles, and
// a K split only moves the remainder (192 ranges are two waves). Here the tiles' k-tiles, tile
// after tile (StreamKUnits), are cut into one run a CTA of equal length: 3072 k-tiles over 132
// CTAs is 23 or 24 each. A run that starts or ends inside a tile sums that tile's K range only;
// the CTA holding the tile's last k-tile waits for the others' sums (fp32, in the workspace, one
// tile a CTA at most: below) and adds them to its own in a fixed order, then stores the tile. So
// a second run gives the same bits, whichever CTA finishes first. A worker may also be a cluster
// of 2 CTAs on two row tiles of one channel tile, each copying half of the weight rows for both
// (TMA multicast, tma_copy_stage).
//
// Measured on an H200 against the tile grid (docs/perf.md, forty-fifth session): 1.3-2.9x its
// time on most of the bench's dense rows, the pairs slower still, 0.86x on DeepSeek-V3's weight
// stream at M = 48-64; so it runs only where METRALE_CUDA_DENSE_SCHEDULE asks for it.
//
// The stage ring (TmaStages, tma_stages.cuh) runs on across tiles: the copies of the next
// segment's first k-tiles are in flight while a segment's last wgmmas and its store run. The store
// goes through a staging tile of its own past the ring (store_tile_staged) where that fits in
// shared memory, else straight from the accumulators (store_tile).
//
// Which CTA writes partial sums: a CTA's run is a tail of one tile, whole tiles, then a head of
// another. It writes the head's sums unless it also holds that tile's last k-tile; it writes the
// tail's sums when the run lies inside one tile and does not reach its end. Either way at most one
// tile's sums a CTA, so the workspace holds one accumulator tile per CTA, and the counters one
// arrival count per output tile, zeroed in front of the launch (TiledFamily::launch).
//
// A CTA runs its segments last tile first, so that the head it leaves for the next CTA is its
// first work and the tail it finishes (waiting for the CTAs before it) its last. The wait is safe:
// a CTA waits only on CTAs of lower index (the ones holding the tile's earlier k-tiles), which run
// beside it (the grid is at most what the device holds at once) and leave those sums before they
// wait on anything.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include <cuda/atomic>

#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/stage_loader.cuh"
#include "cuda/sm90/tiled/tiled_epilogue.cuh"
#include "cuda/sm90/tiled/tiled_kernel.cuh"
#include "cuda/sm90/tiled/tiled_locate.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "cuda/sm90/tiled/tma_stages.cuh"

namespace metrale::cuda::sm90 {

// The stream-K kernel's shared memory: the ring, then the staging tile where it fits.
template <class Config>
struct StreamKShape {
  using Ring = KernelShape<Config, false>;
  static constexpr int kThreads = Ring::kThreads;
  static constexpr int kRingBytes = Config::stages * Ring::kStageBytes;
  static constexpr bool kStaged =
      StagedTile<Config>::kFits && Ring::kSmemBytes + StagedTile<Config>::kBytes <= 227 * 1024;
  static constexpr int kSmemBytes = Ring::kSmemBytes + (kStaged ? StagedTile<Config>::kBytes : 0);
};

// Where a CTA's part of stream-K tile `tile` lies: its first activation row, its rows' end and
// the first weight row. A stream-K tile is kCluster row tiles of one channel tile, rank r of the
// cluster taking the r-th (rows past the GEMM's end: none, and nothing stored).
struct StreamKTile {
  int row_begin, row_end, n0;
};
template <class Config, int kCluster>
__device__ __forceinline__ StreamKTile stream_k_tile(const GroupedParams& p, int tile,
                                                     int row_tiles, int rows_begin, int rows_end,
                                                     int rank) {
  const TileCoord at = raster_tile(tile, p.channel_tiles, row_tiles, p.band_rows);
  const int row_begin = rows_begin + (at.row * kCluster + rank) * Config::tokens;
  return StreamKTile{row_begin, min(row_begin + Config::tokens, rows_end),
                     at.channel * Config::weight_rows};
}

// This CTA's sums of a tile it does not finish, to its slot of the workspace; then one arrival on
// the tile.
template <int kThreads, int kAcc>
__device__ __forceinline__ void stream_k_leave(const GroupedParams& p, int tile,
                                               const float (&acc)[kAcc]) {
  (void)leave_sums<kThreads>(p.partials + static_cast<size_t>(blockIdx.x) * kAcc * kThreads, acc,
                             p.counters + tile);
}

// The CTA holding a tile's last k-tile: waits for `arrivals` arrivals on the tile, then adds to
// its own sums those of the `others` CTAs first_cta, first_cta + stride, ... (the tile's earlier K
// ranges, this CTA's rank in each earlier cluster) in that order. The order is fixed, so a second
// run gives the same bits; the sums land kBatch at a time, their loads in flight together (one at
// a time would make a round trip to L2 per value).
template <int kThreads, int kAcc>
__device__ __forceinline__ void stream_k_gather(const GroupedParams& p, int tile,
                                                std::uint32_t arrivals, int first_cta, int stride,
                                                int others, float (&acc)[kAcc]) {
  constexpr int kBatch = kAcc < 32 ? kAcc : 32;
  static_assert(kAcc % kBatch == 0, "whole batches");
  if (threadIdx.x == 0) {
    ::cuda::atomic_ref<std::uint32_t, ::cuda::thread_scope_device> arrived(p.counters[tile]);
    while (arrived.load(::cuda::memory_order_acquire) < arrivals) __nanosleep(64);
  }
  __syncthreads();
  __threadfence();
  const size_t tile_floats = static_cast<size_t>(kAcc) * kThreads;
  const float* sums = p.partials + static_cast<size_t>(first_cta) * tile_floats + threadIdx.x;
  for (int c = 0; c < others; ++c) {
#pragma unroll
    for (int b = 0; b < kAcc; b += kBatch) {
      float v[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i)
        v[i] = __ldcg(sums + c * stride * tile_floats + (b + i) * kThreads);
#pragma unroll
      for (int i = 0; i < kBatch; ++i) acc[b + i] = __fadd_rn(acc[b + i], v[i]);
    }
  }
}

// A finished tile's sums as bf16 rows (scale_2 is 1: bf16 weights).
template <class Config>
__device__ __forceinline__ void stream_k_store(const GroupedParams& p, const StreamKTile& at,
                                               const float (&acc)[Config::tokens / 2],
                                               std::uint8_t* staging) {
  std::uint16_t* out = p.out[0];
  if constexpr (StreamKShape<Config>::kStaged) {
    if (rows_take_16_bytes(p, out)) {
      store_tile_staged<Config>(p, out, 1.0f, at.n0, at.row_begin, at.row_end, acc, staging,
                                threadIdx.x, [] { __syncthreads(); });
      return;
    }
  }
  store_tile<Config>(p, out, 1.0f, at.n0, at.row_begin, at.row_end, acc, threadIdx.x);
}

// One dense bf16 GEMM (GroupedParams::single, one projection, its operands as TMA maps) on a
// grid of StreamKUnits::ctas workers: CTAs, or clusters of kCluster CTAs that share the weight
// rows of a stream-K tile (tma_copy_stage), each CTA summing its own row tile of it.
template <class Config, int kCluster>
__global__ void __launch_bounds__(StreamKShape<Config>::kThreads)
    stream_k_gemm_kernel(const __grid_constant__ GroupedParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = KernelShape<Config, false>;
  using Smem = StreamKShape<Config>;
  constexpr int kStages = Config::stages, kThreads = Shape::kThreads, kAcc = Config::tokens / 2;
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ uint64_t tma_bars[2][kStages];

  const int rows_begin = expert_offset(p, 0), rows_end = expert_offset(p, 1);
  constexpr int kTileRows = Config::tokens * kCluster;
  const int row_tiles = (rows_end - rows_begin + kTileRows - 1) / kTileRows;
  const int k_tiles = (p.k + kBlockK - 1) / kBlockK;
  const int worker = static_cast<int>(blockIdx.x) / kCluster;
  const int rank = static_cast<int>(blockIdx.x) % kCluster;  // a 1-D cluster's block rank
  const StreamKUnits units{static_cast<long long>(row_tiles) * p.channel_tiles * k_tiles,
                           static_cast<int>(gridDim.x) / kCluster};
  const long long u0 = units.first(worker);
  const int count = static_cast<int>(units.first(worker + 1) - u0);
  if (count <= 0) return;  // (the whole cluster)

  const uint32_t base = (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~(kSwizzleAtomBytes - 1);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  std::uint8_t* staging = base_ptr + Smem::kRingBytes;
  TmaStages<Config, kCluster> ring{tma_bars[0], tma_bars[1], base_ptr, 0, 0, 0, rank};
  if (threadIdx.x == 0) ring.init();
  // The other CTAs' copies and releases reach this CTA's barriers: initialised first.
  if constexpr (kCluster > 1)
    cooperative_groups::this_cluster().sync();
  else
    __syncthreads();
  auto part = [&](int tile) {
    return stream_k_tile<Config, kCluster>(p, tile, row_tiles, rows_begin, rows_end, rank);
  };
  // The run's segments, a tile's k-tiles of the run each, run last tile first (each segment's
  // k-tiles in ascending order): the head of the last tile, whose sums another worker waits for,
  // goes first, and the tail of the first tile, which waits for the worker before, goes last.
  // Run first to last, each worker's first segment would wait for the whole run of the one before
  // (which leaves its sums last), a chain through the grid: measured 2.7-120x the tile grid's
  // time (docs/perf.md, forty-fifth session). The ring's stage index i runs on across segments;
  // stage i is unit first_unit(i).
  const long long u1 = u0 + count;
  auto first_unit = [&](int i) {
    const long long tile = (u1 - 1 - i) / k_tiles;  // its segment's tile
    const long long begin = max(u0, tile * k_tiles), placed = u1 - min(u1, (tile + 1) * k_tiles);
    return begin + (i - placed);
  };
  // Thread 0: stage i of the run.
  auto load = [&](int i) {
    const long long u = first_unit(i);
    const StreamKTile at = part(static_cast<int>(u / k_tiles));
    ring.load_box(p, i, static_cast<int>(u % k_tiles), at.row_begin, at.n0);
  };
  if (threadIdx.x == 0)
    for (int s = 0; s < kStages - 1 && s < count; ++s) load(s);
  float acc[kAcc];
  uint32_t unused_frag[4][4];  // bf16 weights: both wgmma operands from shared memory
  const int first_tile = static_cast<int>(u0 / k_tiles);
  for (int tile = static_cast<int>((u1 - 1) / k_tiles), i = 0; tile >= first_tile; --tile) {
    const long long tile_first = static_cast<long long>(tile) * k_tiles;
    const int kt_begin = static_cast<int>(max(u0, tile_first) - tile_first);
    const int kt_end = static_cast<int>(min(u1, tile_first + k_tiles) - tile_first);
    const StreamKTile at = part(tile);
    const int chunks = row_chunks(max(at.row_end - at.row_begin, 0), Config::chunk);
    zero_accumulators(acc);
    for (int kt = kt_begin; kt < kt_end; ++kt, ++i) {
      ring.wait_full(i);
      issue_stage<Config, false>(base + i % kStages * Shape::kStageBytes, unused_frag, acc,
                                 stage_weights_at<Config, false>(threadIdx.x), chunks);
      wgmma_wait<1>();  // stage i - 1 is done: its slot is free
      if (i > 0) ring.release(i - 1);
      if (threadIdx.x == 0 && i + kStages - 1 < count) load(i + kStages - 1);
    }
    wgmma_wait<0>();
#pragma unroll
    for (int j = 0; j < kAcc; ++j) fence_operand(acc[j]);
    if (kt_end < k_tiles) {  // the tile's last k-tile is another worker's
      stream_k_leave<kThreads>(p, tile, acc);
    } else {
      if (kt_begin > 0) {
        const int first = units.owner(tile_first);
        const int others = worker - first;
        stream_k_gather<kThreads>(p, tile, static_cast<std::uint32_t>(others * kCluster),
                                  first * kCluster + rank, kCluster, others, acc);
      }
      stream_k_store<Config>(p, at, acc, staging);
    }
  }
  // The other CTAs' last releases reach this CTA's barriers: it stays until they have.
  if constexpr (kCluster > 1) cooperative_groups::this_cluster().sync();
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90
