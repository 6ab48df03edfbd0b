// Instantiations of the decode kernels (device- and host-planned), one per configuration (token
// width and unit rows: decode_params.hpp's kConfigCount) and weight layout (the seeds' packed
// bytes, format/prepack.hpp's, or prepacked in the fragment order of format/fragment_order.hpp,
// with or without a K % 64 tail), and their launch.
#include <type_traits>

#include "cuda/family.hpp"
#include "cuda/sm90/decode/decode_kernel.cuh"
#include "cuda/sm90/decode/decode_plan.hpp"

namespace metrale::cuda::sm90::decode {
namespace {

template <int kTokens, int kUnitRows>
int shared_bytes_for(int max_segments) {
  return Shape<kTokens, kUnitRows>::kPipelineBytes +
         (max_segments + 1) * static_cast<int>(sizeof(std::int32_t));
}

template <int kTokens, int kUnitRows, bool kPrepacked, bool kFragments, bool kTail>
const void* kernel_of(bool host_work) {
  return host_work ? reinterpret_cast<const void*>(
                         &decode_kernel_host<kTokens, kUnitRows, kPrepacked, kFragments, kTail>)
                   : reinterpret_cast<const void*>(
                         &decode_kernel<kTokens, kUnitRows, kPrepacked, kFragments, kTail>);
}

// A host-planned launch copies the whole prefix block of HostWork.
template <int kTokens, int kUnitRows, bool kPrepacked, bool kFragments, bool kTail>
cudaError_t occupancy(int max_segments, bool host_work, int* ctas, int* shared) {
  using S = Shape<kTokens, kUnitRows>;
  *shared = host_work ? S::kPipelineBytes + kHostPrefixBytes
                      : shared_bytes_for<kTokens, kUnitRows>(max_segments);
  // Configured once per device for the largest expert table; a launch asks for what it uses.
  const void* kernel = kernel_of<kTokens, kUnitRows, kPrepacked, kFragments, kTail>(host_work);
  if (const cudaError_t err =
          configure_once_per_device(kernel, shared_bytes_for<kTokens, kUnitRows>(kMaxExperts));
      err != cudaSuccess)
    return err;
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas, kernel, S::kThreads, *shared);
}

// A programmatic dependent launch: the CTAs start while the plan (or staging) kernel finishes,
// and wait for its results at griddepcontrol.wait (it saves a launch latency at decode sizes;
// graphs keep the programmatic edge).
template <class... Args>
cudaError_t launch(void (*kernel)(Args...), int grid, int shared, cudaStream_t stream,
                   const std::remove_reference_t<Args>&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kDecodeThreads);
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// One case per configuration (decode_params.hpp's kConfigCount).
template <class Fn>
cudaError_t with_config(int config, Fn&& fn) {
  static_assert(kConfigCount == 9, "one case per configuration");
  switch (config) {
    case 0: return fn.template operator()<8, kRows>();
    case 1: return fn.template operator()<16, kRows>();
    case 2: return fn.template operator()<32, kRows>();
    case 3: return fn.template operator()<64, kRows>();
    case 4: return fn.template operator()<128, kRows>();
    case 5: return fn.template operator()<256, kRows>();
    case 6: return fn.template operator()<8, kMaxUnitRows>();
    case 7: return fn.template operator()<16, kMaxUnitRows>();
    default: return fn.template operator()<32, kMaxUnitRows>();
  }
}

// And one per weight layout.
template <class Fn>
cudaError_t with_kernel(int config, DecodeWeights weights, Fn&& fn) {
  return with_config(config, [&]<int kTokens, int kUnitRows>() {
    switch (weights) {
      case DecodeWeights::packed:
        return fn.template operator()<kTokens, kUnitRows, false, false, false>();
      case DecodeWeights::prepacked:
        return fn.template operator()<kTokens, kUnitRows, true, false, false>();
      case DecodeWeights::fragments:
        return fn.template operator()<kTokens, kUnitRows, true, true, false>();
      default: return fn.template operator()<kTokens, kUnitRows, true, true, true>();
    }
  });
}

}  // namespace

cudaError_t decode_occupancy(int config, DecodeWeights weights, int max_segments, bool host_work,
                             int* ctas_per_sm, int* shared_bytes) {
  return with_kernel(
      config, weights,
      [&]<int kTokens, int kUnitRows, bool kPrepacked, bool kFragments, bool kTail>() {
        return occupancy<kTokens, kUnitRows, kPrepacked, kFragments, kTail>(
            max_segments, host_work, ctas_per_sm, shared_bytes);
      });
}

cudaError_t launch_decode(int config, DecodeWeights weights, const DecodeParams& params,
                          const HostWork* work, int grid, int shared_bytes, cudaStream_t stream) {
  return with_kernel(
      config, weights,
      [&]<int kTokens, int kUnitRows, bool kPrepacked, bool kFragments, bool kTail>() {
        if (work)
          return launch(&decode_kernel_host<kTokens, kUnitRows, kPrepacked, kFragments, kTail>,
                        grid, shared_bytes, stream, params, *work);
        return launch(&decode_kernel<kTokens, kUnitRows, kPrepacked, kFragments, kTail>, grid,
                      shared_bytes, stream, params);
      });
}

}  // namespace metrale::cuda::sm90::decode
