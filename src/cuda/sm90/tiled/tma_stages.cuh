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
// (shared memory): the activation rows from row0, the weight rows from n0.
template <class Config>
__device__ __forceinline__ void tma_copy_stage(const GroupedParams& p, uint64_t& full,
                                               std::uint8_t* stage, int kt, int row0, int n0) {
  const uint32_t bytes = (Config::tokens + Config::weight_rows) * kSwizzleRowBytes;
  (void)::cuda::ptx::mbarrier_arrive_expect_tx(::cuda::ptx::sem_release, ::cuda::ptx::scope_cta,
                                               ::cuda::ptx::space_shared, &full, bytes);
  const std::int32_t act_at[2] = {kt * kBlockK, row0}, weight_at[2] = {kt * kBlockK, n0};
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global, stage,
                                    &p.act_map, act_at, &full);
  ::cuda::ptx::cp_async_bulk_tensor(::cuda::ptx::space_cluster, ::cuda::ptx::space_global,
                                    stage + KernelShape<Config, false>::kActBytes, &p.weight_map,
                                    weight_at, &full);
}

template <class Config>
struct TmaStages {
  using Shape = KernelShape<Config, false>;
  static constexpr int kStages = Config::stages;

  uint64_t (&full)[kStages];
  uint64_t (&empty)[kStages];
  std::uint8_t* base;  // the ring's first stage (1024-aligned)
  int kt_first;   // the CTA's first k-tile (its K range)
  int row0, n0;   // the tile's first activation row and weight row

  // Thread 0, before the CTA's first barrier.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < kStages; ++s) {
      ::cuda::ptx::mbarrier_init(&full[s], 1);
      ::cuda::ptx::mbarrier_init(&empty[s], Shape::kWarpgroups);
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
    tma_copy_stage<Config>(p, full[slot], base + slot * Shape::kStageBytes, kt, first_row, first_n);
  }

  // Every thread: stage i has landed.
  __device__ __forceinline__ void wait_full(int i) {
    mbarrier_wait_parity(&full[i % kStages], (i / kStages) & 1);
  }

  // One thread per warpgroup, once its wgmmas on stage i are done.
  __device__ __forceinline__ void release(int i) {
    if (threadIdx.x % 128 == 0) (void)::cuda::ptx::mbarrier_arrive(&empty[i % kStages]);
  }
};

}  // namespace metrale::cuda::sm90
