// Instantiations of the tiled family's kernel, one per entry of kTiles and weight format, and the
// launch switch its host side (tiled_family.cpp) calls.
#include <type_traits>
#ifdef METRALE_WS_WATCHDOG
#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

#include "cuda/family.hpp"
#include "cuda/sm90/tiled/tiled_kernel.cuh"
#include "cuda/sm90/tiled/ws_kernel.cuh"

namespace metrale::cuda::sm90 {

#ifdef METRALE_WS_WATCHDOG
namespace {
WsStall* ws_stall_host = nullptr;

void print_ws_stalls() {
  int count = 0;
  for (int i = 0; i < kWsStallBlocks * kWsStallWarps; ++i) {
    const WsStall& r = ws_stall_host[i];
    if (r.magic != kWsStallMagic) continue;
    ++count;
    std::fprintf(stderr,
                 "WS-STALL block %u warp %u where %d parity %u position %d tile %d slot %d "
                 "waited %lld cycles; barriers:",
                 r.block, r.warp, r.site.where, r.parity, r.site.position, r.site.tile, r.site.slot,
                 r.waited);
    for (std::uint64_t b : r.barriers) std::fprintf(stderr, " %016llx", static_cast<unsigned long long>(b));
    std::fprintf(stderr, "\n");
  }
  std::fprintf(stderr, "WS-WATCHDOG: %d stall records\n", count);
}
}  // namespace

void install_ws_watchdog(cudaStream_t stream) {
  if (ws_stall_host != nullptr) return;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone)
    return;
  const std::size_t bytes = sizeof(WsStall) * kWsStallBlocks * kWsStallWarps;
  void* host = nullptr;
  if (cudaHostAlloc(&host, bytes, cudaHostAllocMapped) != cudaSuccess) return;
  std::memset(host, 0, bytes);
  void* device = nullptr;
  if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess ||
      cudaMemcpyToSymbol(ws_stall_log, &device, sizeof device) != cudaSuccess)
    return;
  ws_stall_host = static_cast<WsStall*>(host);
  std::atexit(print_ws_stalls);
  std::fprintf(stderr, "WS-WATCHDOG: installed\n");
}
#endif

namespace {

template <class Config, bool kNvfp4>
cudaError_t launch_config(const GroupedParams& params, dim3 grid, cudaStream_t stream) {
  using Shape = std::conditional_t<Config::specialized, WsShape<Config, kNvfp4>,
                                   KernelShape<Config, kNvfp4>>;
  auto* kernel = [] {
    if constexpr (Config::specialized) return &grouped_gemm_ws_kernel<Config, kNvfp4>;
    else return &grouped_gemm_kernel<Config, kNvfp4>;
  }();
  if (const cudaError_t err =
          configure_once_per_device(reinterpret_cast<const void*>(kernel), Shape::kSmemBytes);
      err != cudaSuccess)
    return err;
#ifdef METRALE_WS_WATCHDOG
  if constexpr (Config::specialized) install_ws_watchdog(stream);
#endif
  kernel<<<grid, Shape::kThreads, Shape::kSmemBytes, stream>>>(params);
  return cudaGetLastError();
}

template <bool kNvfp4>
cudaError_t launch_format(int tile, const GroupedParams& params, dim3 grid, cudaStream_t stream) {
  static_assert(kTileCount == 10, "one case per kTiles entry");
  switch (tile) {
    case 0: return launch_config<Tile<0>, kNvfp4>(params, grid, stream);
    case 1: return launch_config<Tile<1>, kNvfp4>(params, grid, stream);
    case 2: return launch_config<Tile<2>, kNvfp4>(params, grid, stream);
    case 3: return launch_config<Tile<3>, kNvfp4>(params, grid, stream);
    case 4: return launch_config<Tile<4>, kNvfp4>(params, grid, stream);
    case 5: return launch_config<Tile<5>, kNvfp4>(params, grid, stream);
    case 6: return launch_config<Tile<6>, kNvfp4>(params, grid, stream);
    case 7: return launch_config<Tile<7>, kNvfp4>(params, grid, stream);
    case 8: return launch_config<Tile<8>, kNvfp4>(params, grid, stream);
    default: return launch_config<Tile<9>, kNvfp4>(params, grid, stream);
  }
}

}  // namespace

cudaError_t launch_grouped_gemm(int tile, bool nvfp4, const GroupedParams& params, dim3 grid,
                                cudaStream_t stream) {
  return nvfp4 ? launch_format<true>(tile, params, grid, stream)
               : launch_format<false>(tile, params, grid, stream);
}

}  // namespace metrale::cuda::sm90
