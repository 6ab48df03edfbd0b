// A dense bf16 GEMM's stage copies by the Tensor Memory Accelerator (sm_90a,
// TiledWeights::bf16_tma), for the tiled family's CTA-synchronised kernel (tiled_kernel.cuh,
// TmaStages) and the warp-specialised one's producer (ws_kernel.cuh). Where cp.async has every
// thread copy 16 bytes at a time and wait for its own copies, one thread here asks for a stage's
// two boxes (the tile's activation rows and weight rows, 64 K each) and the stage's full barrier
// completes when their bytes have landed. The boxes land in the 128-byte swizzle the wgmma
// descriptors read (the maps' CU_TENSOR_MAP_SWIZZLE_128B is stage_loader.cuh's swizzled_offset on
// a 1024-aligned stage), and what lies past the tensor (rows past M or N, K past K) lands as
// zeros, so the stages need no zeroing.
// TmaStages' barriers (parity waits), a pair per slot of the ring:
//   full[s]   thread 0 arrives with the stage's bytes expected; the copies complete it; every
//             thread waits before its wgmmas read the slot.
//   empty[s]  one thread per warpgroup arrives once its wgmmas on the slot are done; thread 0
//             waits before it refills the slot.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include <cuda/ptx>

#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/tiled/stage_loader.cuh"
#include "cuda/sm90/tiled/tiled_params.hpp"

namespace metrale::cuda::sm90 {

// Spins until the phase of parity `parity` of `bar` has completed (acquire, CTA scope).
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Thread 0: arms `full` with a stage's bytes, then copies k-tile kt's two boxes into `stage`
// (shared memory): the activation rows from row0, the weight rows from n0. In a cluster of
// kCluster CTAs sharing the weight rows (stream_k_kernel.cuh), each copies its own activation rows
// and 1 / kCluster of the weight rows (the map's box), rank `rank`'s share, into every CTA of the
// cluster at the same place (multicast): each CTA's full barrier counts the whole stage.
template <class Config, int kCluster = 1>
__device__ __forceinline__ void tma_copy_stage(const GroupedParams& p, uint64_t& full,
                                               std::uint8_t* stage, int kt, int row0, int n0,
                                               int rank = 0) {
  const uint32_t bytes = (Config::tokens + Config::weight_rows) * kSwizzleRowBytes;
  (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                               ::cuda::ptx::space_shared, &full, bytes);
  const std::int32_t act_at[2] = {kt * kBlockK, row0};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage,
                                    &p.act_map, act_at, &full);
  constexpr int kShare = Config::weight_rows / kCluster;  // this CTA's weight rows to copy
  static_assert(kShare % 8 == 0, "whole swizzle atoms a share");
  std::uint8_t* weights =
      stage + KernelShape<Config, false>::kActBytes + rank * kShare * kSwizzleRowBytes;
  const std::int32_t weight_at[2] = {kt * kBlockK, n0 + rank * kShare};
  if constexpr (kCluster == 1)
    ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global,
                                      weights, &p.weight_map, weight_at, &full);
  else
    ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global,
                                      weights, &p.weight_map, weight_at, &full,
                                      static_cast<std::uint16_t>((1u << kCluster) - 1));
}

// kCluster > 1: the ring of one CTA of a cluster whose CTAs share their weight rows
// (tma_copy_stage): a slot is refilled only once every CTA of the cluster has released it, so
// each warpgroup's release arrives on the empty barrier of every CTA.
template <class Config, int kCluster = 1>
struct TmaStages {
  using Shape = KernelShape<Config, false>;
  static constexpr int kStages = Config::stages;

  uint64_t (&full)[kStages];
  uint64_t (&empty)[kStages];
  std::uint8_t* base;  // the ring's first stage (1024-aligned)
  int kt_first;   // the CTA's first k-tile (its K range)
  int row0, n0;   // the tile's first activation row and weight row
  int rank = 0;   // the CTA's rank in its cluster

  // Thread 0, before the CTA's first barrier.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < kStages; ++s) {
      ::cuda::ptx::mbarrier_init(&full[s], 1);
      ::cuda::ptx::mbarrier_init(&empty[s], Shape::kWarpgroups * kCluster);
    }
    // The copies complete the full barriers: the initialisation must be visible to them.
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }

  // Thread 0: stage i of the CTA's range into slot i % kStages, once the wgmmas of stage
  // i - kStages have released the slot.
  __device__ __forceinline__ void load(const GroupedParams& p, int i) {
    load_box(p, i, kt_first + i, row0, n0);
  }

  // Thread 0: stage i of the ring from k-tile kt of the tile at row0 and n0 (a stream-K CTA's
  // stages run on from one tile into the next: stream_k_kernel.cuh).
  __device__ __forceinline__ void load_box(const GroupedParams& p, int i, int kt, int first_row,
                                           int first_n) {
    const int slot = i % kStages;
    if (i >= kStages) mbarrier_wait_parity(&empty[slot], (i / kStages - 1) & 1);
    tma_copy_stage<Config, kCluster>(p, full[slot], base + slot * Shape::kStageBytes, kt, first_row,
                                     first_n, rank);
  }

  // Every thread: stage i has landed.
  __device__ __forceinline__ void wait_full(int i) {
    mbarrier_wait_parity(&full[i % kStages], (i / kStages) & 1);
  }

  // One thread per warpgroup, once its wgmmas on stage i are done.
  __device__ __forceinline__ void release(int i) {
    if (threadIdx.x % 128 != 0) return;
    if constexpr (kCluster == 1) {
      (void)::cuda::ptx::mbarrier_arrive(&empty[i % kStages]);
    } else {
      const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
#pragma unroll
      for (int c = 0; c < kCluster; ++c)
        ::cuda::ptx::mbarrier_arrive(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster,
                                     ::cuda::ptx::space_cluster,
                                     cluster.map_shared_rank(&empty[i % kStages], c));
    }
  }
};

}  // namespace metrale::cuda::sm90
