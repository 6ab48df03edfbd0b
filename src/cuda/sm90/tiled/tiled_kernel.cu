// Instantiations of the tiled family's kernel, one per entry of kTiles and weight format, and the
// launch switch its host side (tiled_family.cpp) calls.
#include <type_traits>

#include "cuda/family.hpp"
#include "cuda/sm90/tiled/tiled_kernel.cuh"
#include "cuda/sm90/tiled/ws_kernel.cuh"

namespace metrale::cuda::sm90 {
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
