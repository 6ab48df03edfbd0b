// The warp-specialised NVFP4 tiles with a decoder warpgroup (sm_90a; tiles 10 and 11 of kTiles,
// reached only when forced). Measured slower than the tiles whose consumers decode (1.05-1.40x the
// time of 4 and 8, an H100, docs/perf.md, twenty-second session): kept, forced, as that record.
// ws_kernel.cuh's consumers decode their own A fragments each stage:
// measured on tile 8 (ncu, docs/perf.md, fifteenth session), ~130 of a consumer warp's ~210-233
// instructions a stage are that decode, the two threads of a quad that share a word each decode
// all of it, and the tensor pipe waits for the consumers' instruction stream. Here the weights are
// decoded once, by a fourth warpgroup, into shared memory, and the consumers issue wgmma with
// both operands there (issue_stage's bf16 path), 512 threads:
//   - the producer warpgroup: ws_kernel.cuh's produce(), unchanged;
//   - the consumer warpgroups (64 weight rows each): per stage they wait for its activations
//     (full[s]) and its decoded tile (decoded_full[d]), issue the wgmmas and, once the previous
//     stage's wgmmas are done, release both (empty[s], decoded_empty[d]);
//   - the decoder warpgroup, one weight row a thread: per stage it waits for full[s], decodes the
//     row's 64 codes by bit moves (fp4_bits.cuh, both weight layouts) times the block scales
//     (e2m1 x s x 2^-7 in bf16, exact, as the prepacked RS decode gives), re-pairs them by k,
//     waits for decoded_empty[d], stores them (16 bytes a chunk) into the decoded tile, laid out
//     as a bf16 weight tile (decoded_tile.hpp), fences for the async proxy and arrives on
//     decoded_full[d].
// Exact: a decoded weight is e2m1 x s x 2^-7, the bf16 the RS path puts in its fragments (for the
// seeds' layout the RS path's table gives e2m1 x s; the power of two moves to the epilogue's
// factor, scale_2 x 2^7, and fp32 sums and products scale by it exactly while no partial sum
// leaves fp32's normal range: the prepacked RS path's condition). The wgmmas (the same
// m64n128k16 shape as tiles 4 and 8) add the same products in the same order (k16 steps
// ascending), so the bits match every other tile.
//
// Barriers (parity waits). A parity wait is sound only while its waiter cannot fall two phases
// behind, so each barrier's next phase needs something from every thread that waits on it
// (ws_kernel.cuh's table, with the decoder):
//   full[s]          producer threads arrive; consumer and decoder threads wait. The next phase
//                    needs the slot released (empty[s]), which needs the consumers' wgmmas on it,
//                    issued only after every consumer thread's wait and after decoded_full of the
//                    same stage, which needs every decoder thread past its wait.
//   empty[s]         one thread per consumer warpgroup arrives, producer threads wait (as in
//                    ws_kernel.cuh). The decoder's reads of the slot come before its arrival on
//                    decoded_full, which the consumers waited for: no separate release.
//   decoded_full[d]  decoder threads arrive (128), consumer threads wait. The next phase needs
//                    decoded_empty[d]'s, which needs both consumer warpgroups' wgmmas on the
//                    tile, issued after every consumer thread's wait (wgmma is warpgroup-wide).
//   decoded_empty[d] one thread per consumer warpgroup arrives, decoder threads wait. The next
//                    phase needs decoded_full[d]'s, which needs every decoder thread's arrival.
//   tile_full[b]     producer thread 0 arrives; consumer and decoder threads wait. The next phase
//                    needs tile_empty[b]'s, which needs every consumer and decoder thread.
//   tile_empty[b]    consumer and decoder threads arrive, producer thread 0 alone waits.
// Nor does a waiter wait a phase ahead (a parity one phase early reads as complete): each waits
// for phase n of a barrier only after passing phase n - 1 itself, at the same slot one round
// earlier. Decoded tile d of ring position i (stages taken over all tiles, the same count in the
// consumers and the decoder) is i % kRing, filled for the (i / kRing)-th time: consumers wait
// decoded_full[d] at parity (i / kRing) & 1, the decoder decoded_empty[d] at (i / kRing - 1) & 1
// from the ring's second round on.
#pragma once

#include "cuda/sm90/tiled/decoded_tile.hpp"
#include "cuda/sm90/tiled/ws_kernel.cuh"

namespace metrale::cuda::sm90 {

template <class Config>
struct DwsShape {
  using Base = KernelShape<Config, true>;
  using Ws = WsShape<Config, true>;
  static constexpr int kProducerThreads = Ws::kProducerThreads;
  static constexpr int kConsumerThreads = Ws::kConsumerThreads;
  static constexpr int kDecoderThreads = Config::weight_rows;  // one weight row a thread
  static constexpr int kThreads = kProducerThreads + kConsumerThreads + kDecoderThreads;
  static constexpr int kRing = Config::decoded;
  static constexpr int kDecodedBytes = Config::weight_rows * kDecodedRowBytes;
  // The decoded ring after the stage ring (whole swizzle atoms: each tile stays 1024-aligned),
  // then the epilogue's staging tile where it fits (the decoder fills the ring with the next
  // tile's weights while the consumers store one).
  static constexpr int kRingAt = Config::stages * Base::kStageBytes;
  static constexpr int kStagingAt = kRingAt + kRing * kDecodedBytes;
  static constexpr bool kStaged =
      StagedTile<Config>::kFits && Base::kSmemBytes + kRing * kDecodedBytes +
                                           StagedTile<Config>::kBytes + Ws::kStaticSmemReserve <=
                                       227 * 1024;
  static constexpr int kSmemBytes =
      Base::kSmemBytes + kRing * kDecodedBytes + (kStaged ? StagedTile<Config>::kBytes : 0);
  static_assert(kRing >= 2, "the decoder fills one decoded tile while the wgmmas read another");
  static_assert(kRingAt % kSwizzleAtomBytes == 0, "decoded tiles 1024-aligned (the swizzle)");
  static_assert(kSmemBytes + Ws::kStaticSmemReserve <= 227 * 1024,
                "shared memory per CTA exceeds sm_90's 227 KB");
  static_assert(kThreads == 512, "producer, two consumer and a decoder warpgroup");
  // 512 threads leave 128 registers a thread. The 256-token tile's consumers hold 128
  // accumulators: the producer (16 piece pointers) and the decoder (a row's 8 code words and
  // 32 decoded ones) give part of theirs (setmaxnreg: per warpgroup, multiples of 8, adding up
  // to the 128 x 512 the kernel launches with).
  static constexpr bool kRegisterSplit = Config::tokens > 128;
  static constexpr int kProducerRegisters = 120;
  static constexpr int kDecoderRegisters = 72;
  static constexpr int kConsumerRegisters = 160;
  static_assert(kProducerThreads * kProducerRegisters + kDecoderThreads * kDecoderRegisters +
                        kConsumerThreads * kConsumerRegisters ==
                    128 * kThreads,
                "the split moves registers between the roles, no more");
};

template <class Config>
struct DwsShared {
  WsShared<Config> ws;  // the producer's: stage ring, tile hand-over, gathered rows
  uint64_t decoded_full[Config::decoded], decoded_empty[Config::decoded];
};

// The decoder warpgroup: takes the tiles as the consumers do; for each stage of each, decodes its
// weight row (`row`) into the ring.
template <class Config, bool kPrepacked>
__device__ __forceinline__ void decode_rows(const GroupedParams& p, DwsShared<Config>& sh,
                                            std::uint8_t* base_ptr, int k_tiles, int row) {
  using Shape = KernelShape<Config, true>;
  using Dws = DwsShape<Config>;
  constexpr int kStages = Config::stages, kRing = Dws::kRing;
  std::uint8_t* ring = base_ptr + Dws::kRingAt;
  uint32_t first = 0;  // the ring position of the tile's first stage
  for (int taken = 0;; ++taken) {
    const WsTile tile = take_tile(sh.ws, taken, first, kDecoderTileFull);
    if (row == 0) ws_beat(3, taken, first);
    if (!tile.live) return;
    // Where the stage's scale slot keeps this row's block scales (as scale_rows).
    const int scale_at =
        p.scale_sfb ? static_cast<int>(format::sfb_row_in_tile(tile.n0 % 128 + row)) : row;
    for (int kt = 0; kt < k_tiles; ++kt) {
      const uint32_t at = first + kt, slot = at % kStages, d = at % kRing;
      mbarrier_wait(&sh.ws.full[slot], (at / kStages) & 1, sh,
                    WaitSite{kDecoderStageFull, int(at), taken, int(slot)});
      const std::uint8_t* weights = base_ptr + slot * Shape::kStageBytes + Shape::kActBytes;
      uint32_t words[8];
      *reinterpret_cast<uint4*>(&words[0]) = *reinterpret_cast<const uint4*>(weights + row * 32);
      *reinterpret_cast<uint4*>(&words[4]) =
          *reinterpret_cast<const uint4*>(weights + row * 32 + 16);
      const uint32_t scales = stage_scales<Config>(p, weights + Shape::kWeightBytes, scale_at);
      // Steps 0, 1 and 2, 3 (s x 2^119 in bf16; e4m3x2_to_scaled_bf16x2 reads the low 16 bits).
      const uint32_t steps[2] = {decode::e4m3x2_to_scaled_bf16x2(scales),
                                 decode::e4m3x2_to_scaled_bf16x2(scales >> 16)};
      uint32_t decoded[8][4];
#pragma unroll
      for (int w = 0; w < 8; ++w) {  // word w: k16 step w / 2
        const uint32_t scale =
            w % 4 < 2 ? decode::broadcast_low(steps[w / 4]) : decode::broadcast_high(steps[w / 4]);
        uint32_t pairs[4];
        decode::e2m1_pairs_of<kPrepacked>(words[w], pairs);
#pragma unroll
        for (int j = 0; j < 4; ++j) pairs[j] = bf16x2_mul(pairs[j], scale);
        pairs_by_k(pairs, decoded[w]);
      }
      if (at >= kRing)
        mbarrier_wait(&sh.decoded_empty[d], (at / kRing - 1) & 1, sh,
                      WaitSite{kDecoderDecodedEmpty, int(at), taken, int(d)});
      std::uint8_t* tile_ptr = ring + d * Dws::kDecodedBytes;
#pragma unroll
      for (int w = 0; w < 8; ++w)
        *reinterpret_cast<uint4*>(tile_ptr + decoded_chunk_offset(row, w)) =
            make_uint4(decoded[w][0], decoded[w][1], decoded[w][2], decoded[w][3]);
      // The stores went through the generic proxy; the wgmmas read the tile through the async one.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
      (void)::cuda::ptx::mbarrier_arrive(&sh.decoded_full[d]);
    }
    first += k_tiles;
  }
}

// The consumer warpgroups (weight rows n0 + 64 w .. + 63 of each tile): ws_kernel.cuh's consume()
// with the decoded tiles in shared memory for A, so no fragments and no decode. Per stage kt:
// issue, then (stage kt - 1's wgmmas done) release kt - 1's slot and decoded tile, then wait for
// stage kt + 1's activations and decoded tile.
template <class Config, bool kPrepacked>
__device__ __forceinline__ void consume_decoded(const GroupedParams& p, DwsShared<Config>& sh,
                                                uint32_t base, std::uint8_t* base_ptr,
                                                int k_tiles) {
  using Shape = KernelShape<Config, true>;
  using Dws = DwsShape<Config>;
  constexpr int kStages = Config::stages, kRing = Dws::kRing;
  const unsigned thread = threadIdx.x - Dws::kProducerThreads;
  // This warpgroup's 64 rows of a decoded tile, as bytes from the tile's start; the warpgroup
  // index through a shuffle, so that ptxas keeps it (and the descriptors) in uniform registers.
  const uint32_t rows_at = __shfl_sync(0xFFFFFFFFu, thread / 128, 0) * 64 * kSwizzleRowBytes;
  const uint32_t ring = base + Dws::kRingAt + rows_at;
  const uint32_t none[4][4] = {};  // issue_stage's A fragments: unused on the bf16 path
  uint32_t first = 0;              // the ring position of the tile's first stage
  for (int taken = 0;; ++taken) {
    const WsTile tile = take_tile(sh.ws, taken, first, kConsumerTileFull);
    if (thread % 128 == 0) ws_beat(1 + thread / 128, taken, first);
    if (!tile.live) return;
    float acc[Config::tokens / 2];
    zero_accumulators(acc);
    const int chunks = row_chunks(tile.row_end - tile.row_begin, Config::chunk);
    auto receive = [&](int kt) {
      const uint32_t at = first + kt;
      mbarrier_wait(&sh.ws.full[at % kStages], (at / kStages) & 1, sh,
                    WaitSite{kConsumerStageFull, int(at), taken, int(at % kStages)});
      // The copies wrote through the generic proxy; wgmma reads the stage through the async one.
      ::cuda::ptx::fence_proxy_async(::cuda::ptx::space_shared);
      mbarrier_wait(&sh.decoded_full[at % kRing], (at / kRing) & 1, sh,
                    WaitSite{kConsumerDecodedFull, int(at), taken, int(at % kRing)});
    };
    auto release = [&](int kt) {
      const uint32_t at = first + kt;
      if (thread % 128 == 0) {
        (void)::cuda::ptx::mbarrier_arrive(&sh.ws.empty[at % kStages]);
        (void)::cuda::ptx::mbarrier_arrive(&sh.decoded_empty[at % kRing]);
      }
    };
    receive(0);
    for (int kt = 0; kt < k_tiles; ++kt) {
      const uint32_t at = first + kt;
      const uint32_t act = base + at % kStages * Shape::kStageBytes;
      issue_stage<Config, false>(act, none, acc, ring + at % kRing * Dws::kDecodedBytes - act,
                                 chunks);
      wgmma_wait<1>();  // stage kt - 1 is done: its slot and decoded tile are free
      if (kt > 0) release(kt - 1);
      if (kt + 1 < k_tiles) receive(kt + 1);
    }
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < Config::tokens / 2; ++i) fence_operand(acc[i]);
    release(k_tiles - 1);
    // The decoded weights are 2^-7 small in both layouts (bit moves: fp4_bits.cuh); the producer
    // hands over the RS path's factor, which for the seeds' layout lacks the 2^7 (exact in fp32).
    const float scale_2 = kPrepacked ? tile.scale_2 : tile.scale_2 * decode::kEpilogueFactor;
    std::uint16_t* out = p.out[tile.projection];
    if (Dws::kStaged && rows_take_16_bytes(p, out))
      store_tile_staged<Config>(  // named barrier 2: the consumer warpgroups
          p, out, scale_2, tile.n0, tile.row_begin, tile.row_end, acc, base_ptr + Dws::kStagingAt,
          thread, named_barrier_sync<2, Dws::kConsumerThreads>);
    else
      store_tile<Config>(p, out, scale_2, tile.n0, tile.row_begin, tile.row_end, acc, thread);
    first += k_tiles;
  }
}

// Persistent, as ws_kernel.cuh: at most one CTA per multiprocessor walks the tiles.
template <class Config, bool kPrepacked>
__global__ void __launch_bounds__(DwsShape<Config>::kThreads, 1)
    grouped_gemm_dws_kernel(const __grid_constant__ GroupedParams p) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Shape = KernelShape<Config, true>;
  using Dws = DwsShape<Config>;
  extern __shared__ std::uint8_t smem_raw[];
  __shared__ DwsShared<Config> sh;

  // Zeroed stages, the barriers (the decoded ring is written whole before it is read).
  const StageRing ring = open_stage_ring<Config, true, Dws::kThreads>(smem_raw);
  if (threadIdx.x == 0) {
    init_barriers<Config, true>(sh.ws, Dws::kConsumerThreads + Dws::kDecoderThreads);
    for (int d = 0; d < Dws::kRing; ++d) {
      ::cuda::ptx::mbarrier_init(&sh.decoded_full[d], Dws::kDecoderThreads);
      ::cuda::ptx::mbarrier_init(&sh.decoded_empty[d], Shape::kWarpgroups);
    }
    // The stages' full barriers are also arrived on by the copies (cp.async.mbarrier.arrive):
    // the initialisations must be visible to those arrivals, not only to this CTA's threads.
    ::cuda::ptx::fence_mbarrier_init(::cuda::ptx::sem_release, ::cuda::ptx::scope_cluster);
  }
  __syncthreads();
  const int k_tiles = (p.k + kBlockK - 1) / kBlockK;
  constexpr int kDecoderFirst = Dws::kProducerThreads + Dws::kConsumerThreads;
  // (The toolkit's CCCL has no cuda::ptx wrapper for setmaxnreg yet: the instruction itself.)
  if (threadIdx.x < Dws::kProducerThreads) {
    if constexpr (Dws::kRegisterSplit)
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Dws::kProducerRegisters));
    produce<Config, true, kPrepacked, false>(p, sh.ws, ring.base, ring.ptr, k_tiles);
  } else if (threadIdx.x < kDecoderFirst) {
    if constexpr (Dws::kRegisterSplit)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Dws::kConsumerRegisters));
    consume_decoded<Config, kPrepacked>(p, sh, ring.base, ring.ptr, k_tiles);
  } else {
    if constexpr (Dws::kRegisterSplit)
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Dws::kDecoderRegisters));
    decode_rows<Config, kPrepacked>(p, sh, ring.ptr, k_tiles,
                                    static_cast<int>(threadIdx.x) - kDecoderFirst);
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly instead of leaving `out` unwritten
#endif
}

}  // namespace metrale::cuda::sm90
