// Launchers of the decode family's two kernels (decode_plan.cu, decode_kernel.cu), called by the
// family's host side (decode_family.cpp).
#pragma once

#include <cuda_runtime.h>

#include "cuda/sm90/decode/decode_params.hpp"

namespace metrale::cuda::sm90::decode {

inline constexpr int kPlanThreads = 256;

cudaError_t launch_plan(const PlanArgs& args, int grid, cudaStream_t stream);
cudaError_t launch_plan(const DevicePlanArgs& args, int grid, cudaStream_t stream);
// The counters and activations of a host-planned launch.
cudaError_t launch_staging(const PlanShape& shape, int grid, cudaStream_t stream);

// Resident CTAs per SM of configuration `config` (on prepacked weights or not), device- or
// host-planned, with the unit table for `max_segments` experts; the dynamic shared memory it
// launches with goes to *shared_bytes.
cudaError_t decode_occupancy(int config, bool prepacked, int max_segments, bool host_work,
                             int* ctas_per_sm, int* shared_bytes);
// `work`: the host-planned work list, or null (the plan kernel's, in the workspace).
cudaError_t launch_decode(int config, bool prepacked, const DecodeParams& params,
                          const HostWork* work, int grid, int shared_bytes, cudaStream_t stream);

}  // namespace metrale::cuda::sm90::decode
