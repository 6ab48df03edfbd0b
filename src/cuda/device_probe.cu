// The probe behind metrale::cuda::available (device.cpp): an empty kernel compiled, like every
// kernel of the library, for the archs of CMAKE_CUDA_ARCHITECTURES. Asking the runtime for its
// attributes loads this library's image for the current device, so it fails exactly when none
// of the built archs (SASS, or PTX the driver can JIT) runs there. Any arch.
#include "cuda/device_probe.hpp"

#define METRALE_STRINGIFY_LIST(...) #__VA_ARGS__
#define METRALE_STRINGIFY(x) METRALE_STRINGIFY_LIST(x)

namespace metrale::cuda::detail {
namespace {

__global__ void metrale_probe_kernel() {}

}  // namespace

cudaError_t probe_kernel_image(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, metrale_probe_kernel);
}

const char* built_arch_list() {
  // nvcc defines __CUDA_ARCH_LIST__ in the host pass too, e.g. "900" for sm_90a or "800,900".
#if defined(__CUDA_ARCH_LIST__)
  return METRALE_STRINGIFY(__CUDA_ARCH_LIST__);
#else
  return "";
#endif
}

}  // namespace metrale::cuda::detail
