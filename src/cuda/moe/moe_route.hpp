// Launchers of the MoE layer's glue kernels (moe_route.cu, moe_glue.cu) and the shared memory
// the routing kernel needs. Host code calls these; the kernels stay in their .cu files.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/moe/moe_params.hpp"

namespace metrale::cuda::moe {

// The most dynamic shared memory a routing block takes (the host picks its warp count to fit).
inline constexpr int kMaxRouteShared = 96 * 1024;

// One routing warp's scratch: value and extra [E] fp32, the group scores [n_group] fp32, the
// states [E] and [n_group] bytes; 16-byte multiples so that every warp's block stays aligned.
#if defined(__CUDACC__)
__host__ __device__
#endif
    inline constexpr std::size_t
    route_warp_bytes(int experts, int n_group) {
  const std::size_t bytes = 4 * (2 * static_cast<std::size_t>(experts) + n_group) +
                            static_cast<std::size_t>(experts) + n_group;
  return (bytes + 15) / 16 * 16;
}

// The last block's grouping warps: as many as have room for their counters ([warps][L] ints
// plus 33 for the scan).
inline int route_group_warps(int warps, int local_experts) {
  const int room = (kMaxRouteShared / 4 - 33) / (local_experts > 0 ? local_experts : 1);
  return room < 1 ? 1 : (room < warps ? room : warps);
}

// The routing block's dynamic shared memory: its warps' scratch, or the last block's grouping
// counters, whichever is larger.
inline std::size_t route_shared_bytes(int warps, int group_warps, int experts, int n_group,
                                      int local_experts) {
  const std::size_t routing = warps * route_warp_bytes(experts, n_group);
  const std::size_t grouping = 4 * (static_cast<std::size_t>(group_warps) * local_experts + 33);
  return routing > grouping ? routing : grouping;
}

// `args.out.ticket` must be zero when the kernel starts (the caller zeroes it on the stream).
cudaError_t launch_route(const RouteArgs& args, int shared_bytes, cudaStream_t stream);
// `grid` blocks stride over the bound of rows (the true count is read on the device).
// `bias`: the layer's tables, or null without biases (the kernels then take none).
cudaError_t launch_activation(const ActivationArgs& args, const BiasTables<2>* bias, int grid,
                              cudaStream_t stream);
cudaError_t launch_combine(const CombineArgs& args, const BiasTables<1>* bias, cudaStream_t stream);

}  // namespace metrale::cuda::moe
