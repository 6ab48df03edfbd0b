// A watchdog for the warp-specialised kernel's mbarrier waits, compiled only into builds
// configured with -DCMAKE_CUDA_FLAGS=-DMETRALE_WS_WATCHDOG. A producer wait that lasts about a
// second writes a record (which wait, its position in the walk, every barrier's raw state) to
// host-mapped memory and traps, so that the launch fails instead of hanging; each role of each
// CTA writes its progress there too; a host thread prints both as they stop moving. It found the
// hang of docs/perf.md, "2026-12-02, sixth session": a producer warp waiting for a tile_empty
// phase the consumers had completed twice over.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace metrale::cuda::sm90 {

// Which wait, and where in the walk: what a stall record names.
enum WsWait : int {
  kProducerTileEmpty,
  kProducerStageEmpty,
  kConsumerTileFull,
  kConsumerStageFull,
  // The decoder warpgroup's waits (dws_kernel.cuh), and its consumers' wait for a decoded tile.
  kDecoderTileFull,
  kDecoderStageFull,
  kDecoderDecodedEmpty,
  kConsumerDecodedFull
};
// The waits the watchdog times: the producer's and the decoder's (see WsWatch).
__host__ __device__ constexpr bool watched_wait(int where) {
  return where != kConsumerTileFull && where != kConsumerStageFull && where != kConsumerDecodedFull;
}
struct WaitSite {
  int where;     // WsWait
  int position;  // the ring position: stages issued (producer) or of this stage (the others)
  int tile;      // tiles handed or taken before this one
  int slot;      // the barrier's index in its array
};

#ifdef METRALE_WS_WATCHDOG
struct WsStall {
  std::uint32_t magic;  // kWsStallMagic once written
  std::uint32_t block, warp, parity;
  WaitSite site;
  long long waited;            // clock64 cycles when recorded
  std::uint64_t barriers[16];  // full[0..s), empty[0..s), tile_full[2], tile_empty[2] (raw)
  std::uint64_t decoded[6];    // decoder tiles: decoded_full[0..r), decoded_empty[0..r) (raw)
};
inline constexpr std::uint32_t kWsStallMagic = 0x57535441u;
inline constexpr int kWsStallWarps = 16;                    // 512 threads (with a decoder)
inline constexpr int kWsStallBlocks = 1024;                 // records kept for blocks below this
inline constexpr long long kWsStallCycles = 2'000'000'000;  // about a second at the H200's clocks

__device__ WsStall* ws_stall_log = nullptr;  // [kWsStallBlocks][kWsStallWarps], host-mapped

__device__ __forceinline__ std::uint64_t raw_barrier(const std::uint64_t* bar) {
  std::uint64_t state;
  asm volatile("ld.volatile.shared.u64 %0, [%1];\n"
               : "=l"(state)
               : "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(bar))));
  return state;
}

// A decoder tile's shared state (dws_kernel.cuh's DwsShared) holds the warp-specialised one
// (`ws`) and the decoded ring's barriers.
template <class Shared>
constexpr bool has_decoded_ring = requires(const Shared& sh) {
  sh.decoded_full;
};

// What holds the stage ring's and the tile hand-over's barriers.
template <class Shared>
__device__ __forceinline__ const auto& stage_barriers_of(const Shared& sh) {
  if constexpr (has_decoded_ring<Shared>)
    return sh.ws;
  else
    return sh;
}

template <class Shared>
__device__ __forceinline__ void record_stall(const Shared& all, std::uint32_t parity, WaitSite site,
                                             long long waited) {
  WsStall* log = ws_stall_log;
  if (log == nullptr || blockIdx.x >= kWsStallBlocks || threadIdx.x % 32 != 0) return;
  WsStall& r = log[blockIdx.x * kWsStallWarps + threadIdx.x / 32];
  const auto& sh = stage_barriers_of(all);
  constexpr int kStages = sizeof(sh.full) / sizeof(sh.full[0]);
  int i = 0;
  for (int s = 0; s < kStages && i < 12; ++s) r.barriers[i++] = raw_barrier(&sh.full[s]);
  for (int s = 0; s < kStages && i < 12; ++s) r.barriers[i++] = raw_barrier(&sh.empty[s]);
  for (int b = 0; b < 2; ++b) r.barriers[12 + b] = raw_barrier(&sh.tile_full[b]);
  for (int b = 0; b < 2; ++b) r.barriers[14 + b] = raw_barrier(&sh.tile_empty[b]);
  if constexpr (has_decoded_ring<Shared>) {
    constexpr int kRing = sizeof(all.decoded_full) / sizeof(all.decoded_full[0]);
    static_assert(2 * kRing <= 6, "the record keeps a ring of at most 3");
    for (int d = 0; d < kRing; ++d) {
      r.decoded[d] = raw_barrier(&all.decoded_full[d]);
      r.decoded[kRing + d] = raw_barrier(&all.decoded_empty[d]);
    }
  }
  r.block = blockIdx.x;
  r.warp = threadIdx.x / 32;
  r.parity = parity;
  r.site = site;
  r.waited = waited;
  __threadfence_system();
  r.magic = kWsStallMagic;
  __threadfence_system();
}

// Times a producer or decoder wait (the clock read every 16 failed polls: a poll may suspend the
// thread): after kWsStallCycles the warp records and traps. The consumers' waits are not watched:
// one more live register in them makes ptxas serialise the 256-token tile's wgmmas (C7512), which
// changes the timing under study.
struct WsWatch {
  std::uint32_t polls = 0;
  long long start = 0;
  template <class Shared>
  __device__ __forceinline__ void tick(const Shared& sh, std::uint32_t parity, WaitSite site) {
    if (!watched_wait(site.where) || (++polls & 15u) != 0) return;
    const long long now = clock64();
    if (start == 0) start = now;
    if (now - start < kWsStallCycles) return;
    record_stall(sh, parity, site, now - start);
    __trap();
  }
};

// Each CTA's progress, written where a role takes up a tile (role 0: the producer, 1 and 2: the
// consumer warpgroups, 3: the decoder warpgroup where there is one): the tiles handed or taken so
// far and the ring position.
struct WsBeat {
  std::uint32_t tiles, position;
};
inline constexpr int kWsRoles = 4;
__device__ WsBeat* ws_beats = nullptr;  // [kWsStallBlocks][kWsRoles], host-mapped

__device__ __forceinline__ void ws_beat(int role, int tiles, std::uint32_t position) {
  WsBeat* beats = ws_beats;
  if (beats == nullptr || blockIdx.x >= kWsStallBlocks) return;
  volatile WsBeat* beat = beats + blockIdx.x * kWsRoles + role;
  beat->tiles = tiles;
  beat->position = position;
}

// Host: maps the records and the beats into the kernel's `ws_stall_log` and `ws_beats` once (not
// while `stream` is being captured) and starts a thread that prints each record as it lands and
// the beats whenever they stop changing for a second.
void install_ws_watchdog(cudaStream_t stream);
#else
__device__ __forceinline__ void ws_beat(int, int, std::uint32_t) {}
#endif

}  // namespace metrale::cuda::sm90
