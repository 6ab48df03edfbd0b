// The tiled family's warp-specialised variant (sm_90a): the same tile, stages, decode and
// epilogue as tiled_kernel.cuh, with the roles split. Measured on the tiled kernel at prefill
// (ncu, docs/perf.md, "2026-12-02, third session"): the tensor pipe 51-62 % busy, issue slots
// 40-43 %, and in 56-59 % of cycles no warp of a scheduler eligible: each k-tile every thread
// copies, waits for the CTA at a barrier, then decodes, so the two warps a scheduler holds stall
// together. Here:
//   - a producer warpgroup copies the stages (cp.async) into a ring; each stage's full barrier
//     completes when its copies have landed (cp.async.mbarrier.arrive.noinc); it keeps one
//     source pointer per gathered piece (StageLoader's lean pieces) and, for the 256-token tile,
//     hands the registers it does not need to the consumers (setmaxnreg);
//   - each consumer warpgroup (64 weight rows) waits for a stage's full barrier, decodes its
//     fragments, issues its wgmmas and, once the previous stage's wgmmas are done, releases that
//     stage on its empty barrier; no CTA-wide barrier inside the main loop.
// Barriers (parity waits). A parity wait is sound only while its waiter cannot fall two phases
// behind, so each barrier's next phase needs something from every thread that waits on it:
//   full[s]      producer threads arrive, consumer threads wait; the next phase needs the slot
//                released, which needs every consumer warp's wgmmas on it.
//   empty[s]     one thread per consumer warpgroup arrives, producer threads wait; the next phase
//                needs the slot refilled, which needs every producer thread's copies.
//   tile_full[b] producer thread 0 arrives, consumer threads wait; the next phase needs
//                tile_empty[b]'s, which needs every consumer thread.
//   tile_empty[b] consumer threads arrive, producer thread 0 alone waits: it alone writes the
//                slot. (Every producer thread waiting here hung the GPU: docs/perf.md,
//                "2026-12-02, sixth session".)
// The sums run in the same order as the tiled kernel's (k16 steps ascending), so the bits match.
#pragma once

#include <cuda/ptx>

#include "cuda/sm90/tiled/tiled_kernel.cuh"
#include "cuda/sm90/tiled/tma_stages.cuh"
#include "cuda/sm90/tiled/ws_watchdog.cuh"

namespace metrale::cuda::sm90 {

template <class Config, bool kNvfp4>
struct WsShape {
  using Base = KernelShape<Config, kNvfp4>;
  static constexpr int kProducerThreads = 128;
  static constexpr int kConsumerThreads = Base::kThreads;  // 128 per 64 weight rows
  static constexpr int kThreads = kProducerThreads + kConsumerThreads;
  // The epilogue's staging tile (store_tile_staged) after the stage ring, where it fits beside
  // the ring and the static shared memory (WsShared and the scans' scratch, about 1.2 KB; not for
  // the 256-token bf16 tile, reached only when forced).
  static constexpr int kStaticSmemReserve = 4096;
  static constexpr bool kStaged =
      StagedTile<Config>::kFits &&
      Base::kSmemBytes + StagedTile<Config>::kBytes + kStaticSmemReserve <= 227 * 1024;
  static constexpr int kSmemBytes = Base::kSmemBytes + (kStaged ? StagedTile<Config>::kBytes : 0);
  static_assert(kThreads == 384, "one producer and two consumer warpgroups");
  // 384 threads leave 168 registers a thread: enough for the 128-token tile's consumers (64
  // accumulators). The 256-token NVFP4 tile's consumers hold 128 accumulators and two fragment
  // buffers, so the producer warpgroup gives them part of its share (setmaxnreg; ptxas allocates
  // each role to its count, and the counts must add up to the 168 x 384 the kernel launches
  // with). The producer keeps 120, without spills: its 16 piece pointers take 32 of them.
  static constexpr bool kRegisterSplit = kNvfp4 && Config::tokens > 128;
  static constexpr int kProducerRegisters = 120;
  static constexpr int kConsumerRegisters = 192;
  static_assert(kProducerThreads * kProducerRegisters + kConsumerThreads * kConsumerRegisters ==
                    168 * kThreads,
                "the split hands the producer's registers to the consumers, no more");
};

// A tile as the producer hands it to the consumers (two in flight: the consumers store one
// while the producer fills the ring with the next).
struct WsTile {
  int live;  // 0: no tiles left
  int n0, row_begin, row_end, projection;
  float scale_2;
};

// The shared state of a persistent warp-specialised CTA.
template <class Config>
struct WsShared {
  int src_rows[Config::tokens];
  WsTile tile[2];
  uint64_t full[Config::stages], empty[Config::stages];  // the stage ring
  uint64_t tile_full[2], tile_empty[2];                   // the tile hand-over
};

// Waits until the phase of parity `parity` of `bar` has completed (CCCL's cuda::ptx wrappers;
// arrive and wait have release and acquire semantics at CTA scope). A watchdog build records a
// wait that lasts seconds, then traps (ws_watchdog.cuh); `sh` (WsShared, or dws_kernel.cuh's
// DwsShared) holds the barriers it records.
template <class Shared>
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity, const Shared& sh,
                                              WaitSite site) {
#ifdef METRALE_WS_WATCHDOG
  WsWatch watch;
  while (!::cuda::ptx::mbarrier_try_wait_parity(bar, parity)) watch.tick(sh, parity, site);
#else
  (void)sh;
  (void)site;
  mbarrier_wait_parity(bar, parity);
#endif
}

// The dynamic shared memory from its first 1024-aligned byte, where the stage ring starts (a
// shared address and a pointer), its stages zeroed: rows past N read as zeros on the first tile.
// Not where TMA fills the stages (kTma), zeros included: plain stores there could land after
// the copies (another proxy).
struct StageRing {
  uint32_t base;
  std::uint8_t* ptr;
};
template <class Config, bool kNvfp4, int kThreads, bool kTma = false>
__device__ __forceinline__ StageRing open_stage_ring(std::uint8_t* smem_raw) {
  const uint32_t base = (smem_address(smem_raw) + kSwizzleAtomBytes - 1) & ~(kSwizzleAtomBytes - 1);
  std::uint8_t* ptr = smem_raw + (base - smem_address(smem_raw));
  if constexpr (!kTma)
    zero_stages<kThreads>(ptr, Config::stages * KernelShape<Config, kNvfp4>::kStageBytes);
  return StageRing{base, ptr};
}

// Takes hand-over `taken` (the tiles taken before it), `first` its first stage's ring position:
// waits for its tile_full phase, reads the tile and frees the slot (tile_empty). The consumers'
// walk, and the decoder's (dws_kernel.cuh); `where` names the wait for the watchdog.
template <class Config>
__device__ __forceinline__ WsTile take_tile(WsShared<Config>& sh, int taken, uint32_t first,
                                            WsWait where) {
  const int b = taken & 1;
  mbarrier_wait(&sh.tile_full[b], (taken >> 1) & 1, sh, WaitSite{where, int(first), taken, b});
  const WsTile tile = sh.tile[b];
  (void)::cuda::ptx::mbarrier_arrive(&sh.tile_empty[b]);
  return tile;
}

// Thread 0: the stage ring's and the tile hand-over's barriers; `tile_takers` threads arrive on
// tile_empty (the consumers, and a decoder warpgroup where there is one).
// A stage's full barrier takes one arrival from each producer thread, or from thread 0 alone
// where TMA copies the stages (kTma: its arrival expects the stage's bytes).
template <class Config, bool kNvfp4, bool kTma = false>
__device__ __forceinline__ void init_barriers(WsShared<Config>& sh, int tile_takers) {
  for (int s = 0; s < Config::stages; ++s) {
    ::cuda::ptx::mbarrier_init(&sh.full[s], kTma ? 1 : WsShape<Config, kNvfp4>::kProducerThreads);
    ::cuda::ptx::mbarrier_init(&sh.empty[s], KernelShape<Config, kNvfp4>::kWarpgroups);
  }
  for (int b = 0; b < 2; ++b) {
    ::cuda::ptx::mbarrier_init(&sh.tile_full[b], 1);
    ::cuda::ptx::mbarrier_init(&sh.tile_empty[b], tile_takers);
  }
}

// 3p. The producer warpgroup walks the CTA's tiles: locates each, hands it to the consumers,
// gathers its rows and fills the stage ring with its k-tiles. `stage` counts the stages issued
// over all tiles (its slot and ring round).
template <class Config, bool kNvfp4, bool kPrepacked, bool kTma>
__device__ __forceinline__ void produce(const GroupedParams& p, WsShared<Config>& sh, uint32_t base,
                                        std::uint8_t* base_ptr, int k_tiles) {
  using Shape = KernelShape<Config, kNvfp4>;
  constexpr int kThreads = WsShape<Config, kNvfp4>::kProducerThreads, kStages = Config::stages;
  const int row_tiles = count_row_tiles<kThreads, Config::tokens, false>(p);
  const int tiles = p.channel_tiles * row_tiles * p.projections;
  // Each thread signals a stage once: cp.async.mbarrier.arrive.noinc arrives for the thread
  // when its copies so far have landed, so a stage is ready as soon as its bytes are, whatever
  // the producer is doing by then (the consumers fence for the async proxy after their wait).
  // The bytewise scale path also stores to the stage with plain stores, which that arrival
  // does not order: there the thread waits for its copies and arrives itself (release).
  const bool plain_stores = kNvfp4 && !p.scale_sfb && !p.scale_vec16;
  uint32_t stage = 0;
  for (int t = blockIdx.x, handed = 0;; t += gridDim.x, ++handed) {
    // The order of the tiles: raster_tile.
    const int projection_tiles = p.channel_tiles * max(row_tiles, 1);
    const TileCoord at = raster_tile(t % projection_tiles, p.channel_tiles, max(row_tiles, 1),
                                      p.band_rows);
    int expert = -1, row_begin = 0, row_end = 0;
    const bool live = t < tiles && locate_row_tile<kThreads, Config::tokens, false>(
                                       p, at.row, expert, row_begin, row_end);
    const int projection = t / projection_tiles;
    const int n0 = at.channel * Config::weight_rows;
    const ExpertEntry entry = live ? expert_entry(p, projection, expert) : ExpertEntry{};
    // Only the thread that writes the hand-over slot waits for it to be free: had every producer
    // thread waited, the consumers could take the tile thread 0 hands over (completing
    // tile_empty[b]'s next phase) before a lagging producer warp first polled, which would then
    // wait for ever (the barrier table at the top).
    const int b = handed & 1;
    if (threadIdx.x == 0) {
      if (handed >= 2)
        mbarrier_wait(&sh.tile_empty[b], ((handed - 2) >> 1) & 1, sh,
                      WaitSite{kProducerTileEmpty, int(stage), handed, b});
      sh.tile[b] = WsTile{live,    n0,         row_begin,
                          row_end, projection, kNvfp4 ? weight_scale_2<kPrepacked>(entry) : 1.f};
      (void)::cuda::ptx::mbarrier_arrive(&sh.tile_full[b]);
      ws_beat(0, handed, stage);
    }
    if (!live) break;
    if constexpr (kTma) {  // thread 0 copies the dense rows as they lie (tma_stages.cuh)
      if (threadIdx.x == 0)
        for (int kt = 0; kt < k_tiles; ++kt, ++stage) {
          const uint32_t slot = stage % kStages, round = stage / kStages;
          if (round > 0)
            mbarrier_wait(&sh.empty[slot], (round - 1) & 1, sh,
                          WaitSite{kProducerStageEmpty, int(stage), handed, int(slot)});
          tma_copy_stage<Config>(p, sh.full[slot], base_ptr + slot * Shape::kStageBytes, kt,
                                 row_begin, n0);
        }
      // Every producer thread has read this tile's place before the next locate rewrites it.
      ScanSync<kThreads, false>::sync();
      continue;
    }
    gather_rows<Config::tokens, kThreads>(p, row_begin, row_end, sh.src_rows);
    ScanSync<kThreads, false>::sync();
    StageLoader<Config, kNvfp4, kThreads, true> loader(p, entry, sh.src_rows, n0);
    for (int kt = 0; kt < k_tiles; ++kt, ++stage) {
      const uint32_t slot = stage % kStages, round = stage / kStages;
      if (round > 0)
        mbarrier_wait(&sh.empty[slot], (round - 1) & 1, sh,
                      WaitSite{kProducerStageEmpty, int(stage), handed, int(slot)});
      loader.load(p, kt, base + slot * Shape::kStageBytes, base_ptr + slot * Shape::kStageBytes);
      if (plain_stores) {
        cp_async_commit();
        cp_async_wait<0>();
        (void)::cuda::ptx::mbarrier_arrive(&sh.full[slot]);
      } else {
        ::cuda::ptx::cp_async_mbarrier_arrive_noinc(&sh.full[slot]);
      }
    }
  }
  cp_async_commit();
  cp_async_wait<0>();
}

// 3c. Each consumer warpgroup (weight rows n0 + 64 w .. + 63 of each tile) takes the tiles the
// producer hands over until it hands over none: per stage it waits for the full barrier,
// decodes its fragments, issues its wgmmas and, once the previous stage's wgmmas are done,
// releases that stage; then it stores the tile while the producer loads the next.
template <class Config, bool kNvfp4, bool kPrepacked, bool kFragments>
__device__ __forceinline__ void consume(const GroupedParams& p, WsShared<Config>& sh, uint32_t base,
                                        std::uint8_t* base_ptr, int k_tiles) {
  using Shape = KernelShape<Config, kNvfp4>;
  constexpr int kStages = Config::stages;
  const unsigned thread = threadIdx.x - WsShape<Config, kNvfp4>::kProducerThreads;
  uint32_t first = 0;  // the ring position of the tile's first stage
  for (int taken = 0;; ++taken) {
    const WsTile tile = take_tile(sh, taken, first, kConsumerTileFull);
    if (thread % 128 == 0) ws_beat(1 + thread / 128, taken, first);
    if (!tile.live) return;
    float acc[Config::tokens / 2];
    zero_accumulators(acc);
    uint32_t frag[2][4][4];
    const int chunks = row_chunks(tile.row_end - tile.row_begin, Config::chunk);
    const ScaleRows scale_at = scale_rows<Config>(p, tile.n0, thread);
    // Stage kt's full barrier, then its fragments (the stage's weights, this warpgroup's rows).
    auto receive = [&](int kt, uint32_t(&into)[4][4]) {
      const uint32_t slot = (first + kt) % kStages;
      mbarrier_wait(&sh.full[slot], ((first + kt) / kStages) & 1, sh,
                    WaitSite{kConsumerStageFull, int(first + kt), taken, int(slot)});
      // The copies wrote through the generic proxy; wgmma reads the stage through the async one.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
      if constexpr (kNvfp4)
        decode_stage<Config, kPrepacked, kFragments>(p, base_ptr + slot * Shape::kStageBytes,
                                                     scale_at, into, thread,
                                                     halves_tail_stage<kFragments>(p, kt));
    };
    auto release = [&](int kt) {
      if (thread % 128 == 0) (void)::cuda::ptx::mbarrier_arrive(&sh.empty[(first + kt) % kStages]);
    };
    // Software pipeline, as in tiled_kernel.cuh: while the wgmmas of stage kt run, the
    // warpgroup releases stage kt - 1 and receives stage kt + 1 into the other fragment buffer.
    // The buffers alternate (run_stages).
    auto step = [&](int kt, uint32_t(&current)[4][4], uint32_t(&other)[4][4]) {
      issue_stage<Config, kNvfp4>(base + (first + kt) % kStages * Shape::kStageBytes, current, acc,
                                  stage_weights_at<Config, kNvfp4>(thread), chunks);
      wgmma_wait<1>();  // stage kt - 1 is done: its slot and `other` are free
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int j = 0; j < 4; ++j) fence_operand(other[s][j]);
      if (kt > 0) release(kt - 1);
      if (kt + 1 < k_tiles) receive(kt + 1, other);
    };
    receive(0, frag[0]);
    run_stages(k_tiles, frag, acc, step);
    release(k_tiles - 1);
    std::uint16_t* out = p.out[tile.projection];
    if (WsShape<Config, kNvfp4>::kStaged && rows_take_16_bytes(p, out))
      store_tile_staged<Config>(  // named barrier 2: the consumer warpgroups
          p, out, tile.scale_2, tile.n0, tile.row_begin, tile.row_end, acc,
          base_ptr + kStages * Shape::kStageBytes, thread,
          named_barrier_sync<2, WsShape<Config, kNvfp4>::kConsumerThreads>);
    else
      store_tile<Config>(p, out, tile.scale_2, tile.n0, tile.row_begin, tile.row_end, acc,
                         thread);
    first += k_tiles;
  }
}

// Persistent: a grid of at most one CTA per multiprocessor walks the tiles (in raster_tile's
// order, projection by projection), so a tile's epilogue overlaps the next one's loads.
// kTma: a dense bf16 GEMM (one expert, no gather) whose stages thread 0 copies by TMA.
template <class Config, bool kNvfp4, bool kPrepacked, bool kFragments = false, bool kTma = false>
__global__ void __launch_bounds__(WsShape<Config, kNvfp4>::kThreads, 1)
    grouped_gemm_ws_kernel(const __grid_constant__ GroupedParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Ws = WsShape<Config, kNvfp4>;
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ WsShared<Config> sh;

  // Zeroed stages, the barriers.
  const StageRing ring = open_stage_ring<Config, kNvfp4, Ws::kThreads, kTma>(smem_raw);
  if (threadIdx.x == 0) {
    init_barriers<Config, kNvfp4, kTma>(sh, Ws::kConsumerThreads);
    // The stages' full barriers are also arrived on by the copies (cp.async.mbarrier.arrive):
    // the initialisations must be visible to those arrivals, not only to this CTA's threads.
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }
  __syncthreads();
  const int k_tiles = (p.k + kBlockK - 1) / kBlockK;
  // (The toolkit's CCCL has no cuda::ptx wrapper for setmaxnreg yet: the instruction itself.)
  if (threadIdx.x < Ws::kProducerThreads) {
    if constexpr (Ws::kRegisterSplit)
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Ws::kProducerRegisters));
    produce<Config, kNvfp4, kPrepacked, kTma>(p, sh, ring.base, ring.ptr, k_tiles);
  } else {
    if constexpr (Ws::kRegisterSplit)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Ws::kConsumerRegisters));
    consume<Config, kNvfp4, kPrepacked, kFragments>(p, sh, ring.base, ring.ptr, k_tiles);
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90
