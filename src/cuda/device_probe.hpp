// Internals of metrale::cuda::available: the kernel-image probe (device_probe.cu) and the list of
// archs this library was compiled for. Host only.
#pragma once

#include <cuda_runtime.h>

namespace metrale::cuda::detail {

// cudaFuncGetAttributes on an empty kernel of this library: cudaSuccess when the current device
// can load one of the built images, cudaErrorInvalidDeviceFunction (or a JIT error) when not.
cudaError_t probe_kernel_image(cudaFuncAttributes* attributes);

// __CUDA_ARCH_LIST__ of the compilation, e.g. "900" or "800,900"; "" when unknown.
const char* built_arch_list();

}  // namespace metrale::cuda::detail
