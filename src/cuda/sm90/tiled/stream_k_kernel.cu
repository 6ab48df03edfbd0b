// Instantiations of the stream-K kernel (stream_k_kernel.cuh), one per tile of kStreamKTiles and
// worker size (a CTA, or a cluster of 2 sharing weight rows), and its launch.
#include <type_traits>

#include "cuda/family.hpp"
#include "cuda/per_device.hpp"
#include "cuda/sm90/tiled/cluster_launch.hpp"
#include "cuda/sm90/tiled/stream_k_kernel.cuh"

namespace metrale::cuda::sm90 {
namespace {

template <int kTile, int kCluster>
const void* kernel_of() {
  return reinterpret_cast<const void*>(&stream_k_gemm_kernel<Tile<kTile>, kCluster>);
}

template <int kTile, int kCluster>
cudaError_t launch_tile(const GroupedParams& params, int workers, cudaStream_t stream) {
  using Config = Tile<kTile>;
  using Shape = StreamKShape<Config>;
  static_assert(!Config::specialized && !nvfp4_variant(kTiles[kTile]),
                "stream-K runs the CTA-synchronised bf16 tiles");
  if (const cudaError_t err =
          configure_once_per_device(kernel_of<kTile, kCluster>(), Shape::kSmemBytes);
      err != cudaSuccess)
    return err;
  if constexpr (kCluster == 1) {
    stream_k_gemm_kernel<Config, 1>
        <<<workers, Shape::kThreads, Shape::kSmemBytes, stream>>>(params);
    return cudaGetLastError();
  } else {
    ClusterLaunch<Shape> launch(dim3(workers * kCluster), dim3(kCluster), stream);
    return cudaLaunchKernelEx(&launch.config, stream_k_gemm_kernel<Config, kCluster>, params);
  }
}

// The clusters of 2 the device runs at once (all of the grid must: a worker waits on others);
// 0 when the runtime cannot answer.
template <int kTile>
int resident_pairs() {
  using Shape = StreamKShape<Tile<kTile>>;
  if (configure_once_per_device(kernel_of<kTile, 2>(), Shape::kSmemBytes) != cudaSuccess) return 0;
  return ClusterLaunch<Shape>(dim3(2), dim3(2), nullptr).resident_clusters(kernel_of<kTile, 2>());
}

template <class F>
auto with_stream_k_tile(int tile, F&& f) {
  static_assert(kStreamKTiles[0] == 2 && kStreamKTiles[1] == 3 && kStreamKTiles[2] == 6 &&
                    kStreamKTiles[3] == 7,
                "one case per kStreamKTiles entry");
  switch (tile) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 6: return f(std::integral_constant<int, 6>{});
    default: return f(std::integral_constant<int, 7>{});
  }
}

}  // namespace

cudaError_t launch_stream_k(int tile, int cluster, const GroupedParams& params, int workers,
                            cudaStream_t stream) {
  if (!has_stream_k(tile) || (cluster != 1 && cluster != 2)) return cudaErrorInvalidValue;
  return with_stream_k_tile(tile, [&](auto t) {
    return cluster == 1 ? launch_tile<decltype(t)::value, 1>(params, workers, stream)
                        : launch_tile<decltype(t)::value, 2>(params, workers, stream);
  });
}

int stream_k_resident_pairs(int tile) {
  if (!has_stream_k(tile)) return 0;
  return once_per_device(
      tile,
      [&](int) {
        return with_stream_k_tile(tile,
                                  [](auto t) { return resident_pairs<decltype(t)::value>(); });
      },
      [](cudaError_t) {
        (void)cudaGetLastError();
        return 0;
      });
}

}  // namespace metrale::cuda::sm90
