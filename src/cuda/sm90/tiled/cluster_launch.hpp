// A kernel launch in thread-block clusters, and how many such clusters a device runs at once: the
// tiled family's K splits (clusters along z, tiled_kernel.cu) and stream-K's weight-sharing CTA
// pairs (along x, stream_k_kernel.cu). Host only.
#pragma once

#include <cuda_runtime.h>

namespace metrale::cuda::sm90 {

// `grid` of CTAs of `Shape` (kThreads, kSmemBytes) in clusters of `cluster`.
template <class Shape>
struct ClusterLaunch {
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config{};
  ClusterLaunch(dim3 grid, dim3 cluster, cudaStream_t stream) {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim = {cluster.x, cluster.y, cluster.z};
    config.gridDim = grid;
    config.blockDim = dim3(Shape::kThreads);
    config.dynamicSmemBytes = Shape::kSmemBytes;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;  // config points at attribute

  // cudaOccupancyMaxActiveClusters of `kernel` launched so (its attributes set); 0 when the
  // runtime cannot answer.
  int resident_clusters(const void* kernel) {
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return clusters;
  }
};

}  // namespace metrale::cuda::sm90
