// Instantiations of the stream-K kernel (stream_k_kernel.cuh), one per tile of kStreamKTiles, and
// its launch.
#include "cuda/family.hpp"
#include "cuda/sm90/tiled/stream_k_kernel.cuh"

namespace metrale::cuda::sm90 {
namespace {

template <int kTile>
cudaError_t launch_tile(const GroupedParams& params, int ctas, cudaStream_t stream) {
  using Config = Tile<kTile>;
  using Shape = StreamKShape<Config>;
  static_assert(!Config::specialized && !nvfp4_variant(kTiles[kTile]),
                "stream-K runs the CTA-synchronised bf16 tiles");
  const void* kernel = reinterpret_cast<const void*>(&stream_k_gemm_kernel<Config>);
  if (const cudaError_t err = configure_once_per_device(kernel, Shape::kSmemBytes);
      err != cudaSuccess)
    return err;
  stream_k_gemm_kernel<Config><<<ctas, Shape::kThreads, Shape::kSmemBytes, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_stream_k(int tile, const GroupedParams& params, int ctas, cudaStream_t stream) {
  static_assert(kStreamKTiles[0] == 2 && kStreamKTiles[1] == 3 && kStreamKTiles[2] == 6 &&
                    kStreamKTiles[3] == 7,
                "one case per kStreamKTiles entry");
  switch (tile) {
    case 2: return launch_tile<2>(params, ctas, stream);
    case 3: return launch_tile<3>(params, ctas, stream);
    case 6: return launch_tile<6>(params, ctas, stream);
    case 7: return launch_tile<7>(params, ctas, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace metrale::cuda::sm90
