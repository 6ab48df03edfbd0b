// Instantiations of the tiled family's kernel, one per entry of kTiles and weight format, and the
// launch switch its host side (tiled_family.cpp) calls. In a watchdog build, the watchdog's host
// side too (ws_watchdog.cuh): it must map the device variables of this translation unit.
#include <type_traits>
#include <utility>
#ifdef METRALE_WS_WATCHDOG
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#endif

#include "cuda/family.hpp"
#include "cuda/per_device.hpp"
#include "cuda/sm90/tiled/cluster_launch.hpp"
#include "cuda/sm90/tiled/dws_kernel.cuh"
#include "cuda/sm90/tiled/tiled_kernel.cuh"
#include "cuda/sm90/tiled/ws_kernel.cuh"

namespace metrale::cuda::sm90 {

#ifdef METRALE_WS_WATCHDOG
namespace {
WsStall* ws_stall_host = nullptr;
WsBeat* ws_beats_host = nullptr;

void print_stall(const WsStall& r) {
  std::fprintf(stderr,
               "WS-STALL block %u warp %u where %d parity %u position %d tile %d slot %d waited "
               "%lld cycles; barriers:",
               r.block, r.warp, r.site.where, r.parity, r.site.position, r.site.tile, r.site.slot,
               r.waited);
  for (std::uint64_t b : r.barriers)
    std::fprintf(stderr, " %016llx", static_cast<unsigned long long>(b));
  std::fprintf(stderr, "; decoded (decoder tiles: full, then empty):");
  for (std::uint64_t b : r.decoded)
    std::fprintf(stderr, " %016llx", static_cast<unsigned long long>(b));
  std::fprintf(stderr, "\n");
}

// Prints each stall record once, and the beats of every CTA that has any whenever they have
// stopped changing for a second (a hang, or the host between launches).
void monitor() {
  std::vector<bool> printed(kWsStallBlocks * kWsStallWarps, false);
  std::vector<WsBeat> last(kWsStallBlocks * kWsRoles), now(last.size());
  bool frozen_printed = true;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (int i = 0; i < kWsStallBlocks * kWsStallWarps; ++i) {
      const volatile WsStall& r = ws_stall_host[i];
      if (r.magic == kWsStallMagic && !printed[i]) {
        printed[i] = true;
        print_stall(const_cast<const WsStall&>(ws_stall_host[i]));
      }
    }
    for (std::size_t i = 0; i < now.size(); ++i) {
      const volatile WsBeat& b = ws_beats_host[i];
      now[i] = WsBeat{b.tiles, b.position};
    }
    const bool same = std::memcmp(now.data(), last.data(), now.size() * sizeof(WsBeat)) == 0;
    if (!same) frozen_printed = false;
    if (same && !frozen_printed) {
      frozen_printed = true;
      std::fprintf(stderr,
                   "WS-BEATS (unchanged for 1 s): block: producer tiles/position, consumers, "
                   "decoder");
      for (int c = 0; c < kWsStallBlocks; ++c) {
        const WsBeat* b = &now[c * kWsRoles];
        if (b[0].tiles == 0 && b[0].position == 0 && b[1].tiles == 0 && b[2].tiles == 0 &&
            b[3].tiles == 0)
          continue;
        std::fprintf(stderr, " | %d: %u/%u %u/%u %u/%u %u/%u", c, b[0].tiles, b[0].position,
                     b[1].tiles, b[1].position, b[2].tiles, b[2].position, b[3].tiles,
                     b[3].position);
      }
      std::fprintf(stderr, "\n");
    }
    last.swap(now);
  }
}

template <class T>
T* mapped(std::size_t count, const void* symbol) {
  void* host = nullptr;
  if (cudaHostAlloc(&host, count * sizeof(T), cudaHostAllocMapped) != cudaSuccess) return nullptr;
  std::memset(host, 0, count * sizeof(T));
  void* device = nullptr;
  if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess ||
      cudaMemcpyToSymbol(symbol, &device, sizeof device) != cudaSuccess)
    return nullptr;
  return static_cast<T*>(host);
}
}  // namespace

void install_ws_watchdog(cudaStream_t stream) {
  if (ws_stall_host != nullptr) return;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone)
    return;
  ws_beats_host = mapped<WsBeat>(kWsStallBlocks * kWsRoles, &ws_beats);
  ws_stall_host = mapped<WsStall>(kWsStallBlocks * kWsStallWarps, &ws_stall_log);
  if (ws_beats_host == nullptr || ws_stall_host == nullptr) return;
  std::thread(monitor).detach();
  std::fprintf(stderr, "WS-WATCHDOG: installed\n");
}
#endif

namespace {

template <class Config, bool kNvfp4, bool kPrepacked, bool kFragments = false, bool kTma = false>
cudaError_t launch_config(const GroupedParams& params, dim3 grid, cudaStream_t stream) {
  constexpr bool kDecoder = kNvfp4 && Config::decoded > 0;
  using Shape = std::conditional_t<kDecoder, DwsShape<Config>,
                                   std::conditional_t<Config::specialized, WsShape<Config, kNvfp4>,
                                                      KernelShape<Config, kNvfp4>>>;
  auto* kernel = [] {
    if constexpr (kDecoder)
      return &grouped_gemm_dws_kernel<Config, kPrepacked>;
    else if constexpr (Config::specialized)
      return &grouped_gemm_ws_kernel<Config, kNvfp4, kPrepacked, kFragments, kTma>;
    else
      return &grouped_gemm_kernel<Config, kNvfp4, kPrepacked, kFragments, kTma>;
  }();
  if (const cudaError_t err =
          configure_once_per_device(reinterpret_cast<const void*>(kernel), Shape::kSmemBytes);
      err != cudaSuccess)
    return err;
#ifdef METRALE_WS_WATCHDOG
  if constexpr (Config::specialized) install_ws_watchdog(stream);
#endif
  if (params.splits <= 1 || !Config::cluster_fold) {
    kernel<<<grid, Shape::kThreads, Shape::kSmemBytes, stream>>>(params);
    return cudaGetLastError();
  }
  // A K split: a tile's ranges (consecutive z) are one cluster, folded in it (fold_cluster).
  ClusterLaunch<Shape> launch(grid, dim3(1, 1, params.splits), stream);
  return cudaLaunchKernelEx(&launch.config, kernel, params);
}

// Calls f(Tile<tile>{}) for a runtime index into kTiles.
template <class F>
auto with_tile(int tile, F&& f) {
  static_assert(kTileCount == 15, "one case per kTiles entry");
  switch (tile) {
    case 0: return f(Tile<0>{});
    case 1: return f(Tile<1>{});
    case 2: return f(Tile<2>{});
    case 3: return f(Tile<3>{});
    case 4: return f(Tile<4>{});
    case 5: return f(Tile<5>{});
    case 6: return f(Tile<6>{});
    case 7: return f(Tile<7>{});
    case 8: return f(Tile<8>{});
    case 9: return f(Tile<9>{});
    case 10: return f(Tile<10>{});
    case 11: return f(Tile<11>{});
    case 12: return f(Tile<12>{});
    case 13: return f(Tile<13>{});
    default: return f(Tile<14>{});
  }
}

// kPrepacked: NVFP4 weights in format/prepack.hpp's layout; kFragments: prepacked in the
// fragment order (format/fragment_order.hpp); kTma: a dense bf16 GEMM's operands copied by TMA;
// each their own instantiations. bf16 weights on a forced-only NVFP4 variant run its tile's
// kernel (bf16_twin). The decoder-warpgroup tiles read no fragment order (refused on the host,
// TiledFamily::launch).
template <bool kNvfp4, bool kPrepacked = false, bool kFragments = false, bool kTma = false>
cudaError_t launch_format(int tile, const GroupedParams& params, dim3 grid, cudaStream_t stream) {
  return with_tile(tile, [&](auto config) {
    using Config = decltype(config);
    if constexpr (!kNvfp4 && nvfp4_variant(kTiles[Config::index])) {
      constexpr int kTwin = bf16_twin(Config::index);
      static_assert(!nvfp4_variant(kTiles[kTwin]), "an NVFP4 variant has its tile without it");
      return launch_config<Tile<kTwin>, false, false, false, kTma>(params, grid, stream);
    } else if constexpr (kFragments && Config::decoded > 0) {
      return cudaErrorInvalidValue;
    } else {
      return launch_config<Config, kNvfp4, kPrepacked, kFragments, kTma>(params, grid, stream);
    }
  });
}

// cudaOccupancyMaxActiveClusters for the CTA-synchronised kernel of a tile (bf16 weights: the
// only K split); 0 when the runtime cannot answer.
int max_active_clusters(int tile, int cluster_size) {
  return with_tile(tile, [&](auto config) {
    using Config = decltype(config);
    if constexpr (Config::specialized) {
      return 0;
    } else {
      using Shape = KernelShape<Config, false>;
      const void* kernel =
          reinterpret_cast<const void*>(&grouped_gemm_kernel<Config, false, false>);
      if (configure_once_per_device(kernel, Shape::kSmemBytes) != cudaSuccess) return 0;
      const dim3 cluster(1, 1, static_cast<unsigned>(cluster_size));
      return ClusterLaunch<Shape>(cluster, cluster, nullptr).resident_clusters(kernel);
    }
  });
}

}  // namespace

cudaError_t launch_grouped_gemm(int tile, TiledWeights weights, const GroupedParams& params,
                                dim3 grid, cudaStream_t stream) {
  switch (weights) {
    case TiledWeights::bf16: return launch_format<false>(tile, params, grid, stream);
    case TiledWeights::bf16_tma:
      return launch_format<false, false, false, true>(tile, params, grid, stream);
    case TiledWeights::nvfp4: return launch_format<true>(tile, params, grid, stream);
    case TiledWeights::nvfp4_prepacked:
      return launch_format<true, true>(tile, params, grid, stream);
    default: return launch_format<true, true, true>(tile, params, grid, stream);
  }
}

int bf16_split_clusters(int tile, int splits) {
  return once_per_device(
      std::pair{tile, splits}, [&](int) { return max_active_clusters(tile, splits); },
      [](cudaError_t) {
        (void)cudaGetLastError();
        return 0;
      });
}

}  // namespace metrale::cuda::sm90
