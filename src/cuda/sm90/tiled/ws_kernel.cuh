// The tiled family's warp-specialised variant (sm_90a): the same tile, stages, decode and
// epilogue as tiled_kernel.cuh, with the roles split. Measured on the tiled kernel at prefill
// (ncu, docs/perf.md, "2026-12-02, third session"): the tensor pipe 51-62 % busy, issue slots
// 40-43 %, and in 56-59 % of cycles no warp of a scheduler eligible: each k-tile every thread
// copies, waits for the CTA at a barrier, then decodes, so the two warps a scheduler holds stall
// together. Here:
//   - a producer warpgroup copies the stages (cp.async) into a ring; each stage's full barrier
//     completes when its copies have landed (cp.async.mbarrier.arrive.noinc); it keeps its
//     gathered rows as 32-bit ids (StageLoader's lean rows) and, for the 256-token tile, hands
//     the registers it does not need to the consumers (setmaxnreg);
//   - each consumer warpgroup (64 weight rows) waits for a stage's full barrier, decodes its
//     fragments, issues its wgmmas and, once the previous stage's wgmmas are done, releases that
//     stage on its empty barrier; no CTA-wide barrier inside the main loop.
// The sums run in the same order as the tiled kernel's (k16 steps ascending), so the bits match.
#pragma once

#include <cuda/ptx>

#include "cuda/sm90/tiled/tiled_kernel.cuh"

namespace metrale::cuda::sm90 {

template <class Config, bool kNvfp4>
struct WsShape {
  using Base = KernelShape<Config, kNvfp4>;
  static constexpr int kProducerThreads = 128;
  static constexpr int kConsumerThreads = Base::kThreads;  // 128 per 64 weight rows
  static constexpr int kThreads = kProducerThreads + kConsumerThreads;
  static constexpr int kSmemBytes = Base::kSmemBytes;
  static_assert(kThreads == 384, "one producer and two consumer warpgroups");
  // 384 threads leave 168 registers a thread: enough for the 128-token tile's consumers (64
  // accumulators). The 256-token NVFP4 tile's consumers hold 128 accumulators and two fragment
  // buffers, so the producer warpgroup gives them part of its share (setmaxnreg; ptxas allocates
  // each role to its count, and the counts must add up to the 168 x 384 the kernel launches
  // with). The producer keeps 120: its 16 row ids and the copies' addresses, hoisted ahead of
  // the copies, spill below about 100.
  static constexpr bool kRegisterSplit = kNvfp4 && Config::tokens > 128;
  static constexpr int kProducerRegisters = 120;
  static constexpr int kConsumerRegisters = 192;
  static_assert(kProducerThreads * kProducerRegisters + kConsumerThreads * kConsumerRegisters ==
                    168 * kThreads,
                "the split hands the producer's registers to the consumers, no more");
};

// Waits until the phase of parity `parity` of `bar` has completed (CCCL's cuda::ptx wrappers;
// arrive and wait have release and acquire semantics at CTA scope).
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

template <class Config, bool kNvfp4>
__global__ void __launch_bounds__(WsShape<Config, kNvfp4>::kThreads, 1)
    grouped_gemm_ws_kernel(const __grid_constant__ GroupedParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = KernelShape<Config, kNvfp4>;
  using Ws = WsShape<Config, kNvfp4>;
  constexpr int kStages = Config::stages;
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ int src_rows[Config::tokens];
  __shared__ uint64_t full[kStages], empty[kStages];

  // 1. locate (every thread takes part in the scan)
  TileSite site;
  if (!locate_tile<Ws::kThreads, Config>(p, site)) return;
  const int row_begin = site.row_begin, row_end = site.row_end, n0 = site.n0;
  const ExpertEntry& entry = site.entry;

  // 2. gather, zeroed stages, barriers
  gather_rows<Config::tokens, Ws::kThreads>(p, row_begin, row_end, src_rows);
  const uint32_t base = (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~(kSwizzleAtomBytes - 1);
  std::uint8_t* base_ptr = smem_raw + (base - smem_address(smem_raw));
  zero_stages<Ws::kThreads>(base_ptr, kStages * Shape::kStageBytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      ::cuda::ptx::mbarrier_init(&full[s], Ws::kProducerThreads);
      ::cuda::ptx::mbarrier_init(&empty[s], Shape::kWarpgroups);
    }
  }
  __syncthreads();
  const int k_tiles = (p.k + kBlockK - 1) / kBlockK;

  if (threadIdx.x < Ws::kProducerThreads) {
    // 3p. producer: stage kt into slot kt % kStages once the consumers released its last use.
    // (The toolkit's CCCL has no cuda::ptx wrapper for setmaxnreg yet: the instruction itself.)
    if constexpr (Ws::kRegisterSplit)
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Ws::kProducerRegisters));
    const StageLoader<Config, kNvfp4, Ws::kProducerThreads, true> loader(p, entry, src_rows, n0);
    // Each thread signals a stage once: cp.async.mbarrier.arrive.noinc arrives for the thread
    // when its copies so far have landed, so a stage is ready as soon as its bytes are, whatever
    // the producer is doing by then (the consumers fence for the async proxy after their wait).
    // The bytewise scale path also stores to the stage with plain stores, which that arrival
    // does not order: there the thread waits for its copies and arrives itself (release).
    const bool plain_stores = kNvfp4 && !p.scale_sfb && !p.scale_vec16;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int slot = kt % kStages, round = kt / kStages;
      if (round > 0) mbarrier_wait(&empty[slot], (round - 1) & 1);
      loader.load(p, kt, base + slot * Shape::kStageBytes, base_ptr + slot * Shape::kStageBytes);
      if (plain_stores) {
        cp_async_commit();
        cp_async_wait<0>();
        (void)::cuda::ptx::mbarrier_arrive(&full[slot]);
      } else {
        ::cuda::ptx::cp_async_mbarrier_arrive_noinc(&full[slot]);
      }
    }
    cp_async_commit();
    cp_async_wait<0>();
    return;
  }

  // 3c. consumers: warpgroup w owns weight rows n0 + 64 w .. + 63.
  if constexpr (Ws::kRegisterSplit)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Ws::kConsumerRegisters));
  const unsigned thread = threadIdx.x - Ws::kProducerThreads;
  float acc[Config::tokens / 2];
#pragma unroll
  for (int i = 0; i < Config::tokens / 2; ++i) {
    acc[i] = 0.f;
    fence_operand(acc[i]);
  }
  uint32_t frag[2][4][4];
  // Stage kt's full barrier, then its fragments (the stage's weights, this warpgroup's rows).
  auto receive = [&](int kt, uint32_t(&into)[4][4]) {
    const int slot = kt % kStages;
    mbarrier_wait(&full[slot], (kt / kStages) & 1);
    // The copies wrote through the generic proxy; wgmma reads the stage through the async one.
    ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
    if constexpr (kNvfp4)
      decode_stage<Config>(p, base_ptr + slot * Shape::kStageBytes, n0, into, thread);
  };
  // Software pipeline, as in tiled_kernel.cuh: while the wgmmas of stage kt run, the warpgroup
  // releases stage kt - 1 and receives stage kt + 1 into the other fragment buffer. The buffers
  // alternate (run_stages).
  auto step = [&](int kt, uint32_t(&current)[4][4], uint32_t(&other)[4][4]) {
    issue_stage<Config, kNvfp4>(base + kt % kStages * Shape::kStageBytes, current, acc, thread);
    wgmma_wait<1>();  // stage kt - 1 is done: its slot and `other` are free
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
      for (int j = 0; j < 4; ++j) fence_operand(other[s][j]);
    if (kt > 0 && thread % 128 == 0) (void)::cuda::ptx::mbarrier_arrive(&empty[(kt - 1) % kStages]);
    if (kt + 1 < k_tiles) receive(kt + 1, other);
  };
  receive(0, frag[0]);
  run_stages(k_tiles, frag, acc, step);

  // 4. epilogue
  const float scale_2 = kNvfp4 ? entry.scale_2 : 1.0f;
  store_tile<Config>(p, p.out[blockIdx.z], scale_2, n0, row_begin, row_end, acc, thread);
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90
