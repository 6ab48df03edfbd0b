// Device presence query (device.hpp). cuda_runtime.h only when the CUDA backend is built.
#include "core/device.hpp"

#include <fmt/format.h>

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace metrale::core {

bool cuda_device_present(std::string* why) {
#ifdef METRALE_HAS_CUDA
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return true;
  cudaGetLastError();  // clear the failed probe's error, so the next CUDA call starts clean
  if (why != nullptr) {
    *why = err == cudaSuccess
               ? std::string("no CUDA device is visible")
               : fmt::format("no usable CUDA device: cudaGetDeviceCount failed: {} ({})",
                             cudaGetErrorName(err), cudaGetErrorString(err));
  }
  return false;
#else
  if (why != nullptr) *why = "the CUDA backend was not built";
  return false;
#endif
}

}  // namespace metrale::core
