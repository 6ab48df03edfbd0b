// Launchers of the decode family's two kernels (decode_plan.cu, decode_kernel.cu), called by the
// family's host side (decode_family.cpp).
#pragma once

#include <cuda_runtime.h>

#include "cuda/sm90/decode/decode_params.hpp"

namespace metrale::cuda::sm90::decode {

inline constexpr int kPlanThreads = 256;

// `natural_k`: the activations staged in natural K order (weights in the fragment order,
// DecodeWeights::fragments), not the decode order (format::decode_k_source).
cudaError_t launch_plan(const PlanArgs& args, bool natural_k, int grid, cudaStream_t stream);
cudaError_t launch_plan(const DevicePlanArgs& args, bool natural_k, int grid, cudaStream_t stream);
// The counters and activations of a host-planned launch.
cudaError_t launch_staging(const PlanShape& shape, bool natural_k, int grid, cudaStream_t stream);

// The weights' codes: the seeds' packed bytes, format/prepack.hpp's prepacked halves, or
// prepacked in the fragment order (format/fragment_order.hpp; the default), whose rows' K % 64
// tail, if any (fragments_tail), keeps the halves' layout.
enum class DecodeWeights { packed, prepacked, fragments, fragments_tail };
// Whether the main kernel on `weights` reads the activations in natural K order (launch_plan's
// and launch_staging's `natural_k`).
constexpr bool stages_natural_k(DecodeWeights weights) {
  return weights == DecodeWeights::fragments || weights == DecodeWeights::fragments_tail;
}

// Resident CTAs per SM of configuration `config` on `weights`, device- or host-planned, with the
// unit table for `max_segments` experts; the dynamic shared memory it launches with goes to
// *shared_bytes.
cudaError_t decode_occupancy(int config, DecodeWeights weights, int max_segments, bool host_work,
                             int* ctas_per_sm, int* shared_bytes);
// `work`: the host-planned work list, or null (the plan kernel's, in the workspace).
cudaError_t launch_decode(int config, DecodeWeights weights, const DecodeParams& params,
                          const HostWork* work, int grid, int shared_bytes, cudaStream_t stream);

}  // namespace metrale::cuda::sm90::decode
