// Instantiations of the decode kernel, one per token width of kTokenWidths, and their launch.
#include "cuda/family.hpp"
#include "cuda/sm90/decode/decode_kernel.cuh"
#include "cuda/sm90/decode/decode_plan.hpp"

namespace metrale::cuda::sm90::decode {
namespace {

template <int kTokens>
int shared_bytes_for(int max_segments) {
  return Shape<kTokens>::kPipelineBytes + (max_segments + 1) * static_cast<int>(sizeof(std::int32_t));
}

template <int kTokens>
cudaError_t occupancy(int max_segments, int* ctas, int* shared) {
  *shared = shared_bytes_for<kTokens>(max_segments);
  // Configured once per device for the largest expert table; a launch asks for what it uses.
  const void* kernel = reinterpret_cast<const void*>(&decode_kernel<kTokens>);
  if (const cudaError_t err = configure_once_per_device(kernel, shared_bytes_for<kTokens>(kMaxExperts));
      err != cudaSuccess)
    return err;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas, &decode_kernel<kTokens>,
                                                       Shape<kTokens>::kThreads, *shared);
}

// A programmatic dependent launch: the CTAs start while the plan kernel finishes, and wait for
// its results at griddepcontrol.wait (it saves a launch latency at decode sizes; graphs keep the
// programmatic edge).
template <int kTokens>
cudaError_t launch(const DecodeParams& params, int grid, int shared, cudaStream_t stream) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(Shape<kTokens>::kThreads);
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, &decode_kernel<kTokens>, params);
}

// One case per kTokenWidths entry.
template <class Fn>
cudaError_t with_width(int config, Fn&& fn) {
  static_assert(kConfigCount == 6, "one case per kTokenWidths entry");
  switch (config) {
    case 0: return fn.template operator()<8>();
    case 1: return fn.template operator()<16>();
    case 2: return fn.template operator()<32>();
    case 3: return fn.template operator()<64>();
    case 4: return fn.template operator()<128>();
    default: return fn.template operator()<256>();
  }
}

}  // namespace

cudaError_t decode_occupancy(int config, int max_segments, int* ctas_per_sm, int* shared_bytes) {
  return with_width(config, [&]<int kTokens>() {
    return occupancy<kTokens>(max_segments, ctas_per_sm, shared_bytes);
  });
}

cudaError_t launch_decode(int config, const DecodeParams& params, int grid, int shared_bytes,
                          cudaStream_t stream) {
  return with_width(config, [&]<int kTokens>() {
    return launch<kTokens>(params, grid, shared_bytes, stream);
  });
}

}  // namespace metrale::cuda::sm90::decode
