// Device presence query and the device scope (device.hpp). cuda_runtime.h only when the CUDA
// backend is built.
#include "core/device.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

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
               ? std::string("no CUDA device (cudaGetDeviceCount found none)")
               : fmt::format("no CUDA device (cudaGetDeviceCount: {}: {})", cudaGetErrorName(err),
                             cudaGetErrorString(err));
  }
  return false;
#else
  if (why != nullptr) *why = "the CUDA backend was not built";
  return false;
#endif
}

DeviceScope::DeviceScope(std::string_view who, std::string_view name, int device,
                         bool cpu_backend) {
  METRALE_REQUIRE(device >= -1,
                  "{}: {} = {}, expected a CUDA device index >= 0 or -1 (METRALE_DEVICE_CURRENT)",
                  who, name, device);
#ifdef METRALE_HAS_CUDA
  if (device < 0 || cpu_backend) return;
  std::string why;
  if (!cuda_device_present(&why))
    fail(Status::unsupported, "{}: {} = {} cannot be used: {}", who, name, device, why);
  int count = 0;
  cudaGetDeviceCount(&count);
  if (device >= count)
    fail(Status::unsupported, "{}: {} = {}, but {} CUDA device(s) are visible", who, name, device,
         count);
  int previous = -1;
  cudaError_t err = cudaGetDevice(&previous);
  if (err == cudaSuccess && previous == device) return;  // already there: nothing to restore
  if (err == cudaSuccess) err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(Status::cuda_error, "{}: making {} = {} current failed: {}: {}", who, name, device,
         cudaGetErrorName(err), cudaGetErrorString(err));
  }
  previous_ = previous;
#else
  (void)cpu_backend;  // no CUDA: the backend selection refuses every device call
#endif
}

DeviceScope::~DeviceScope() {
#ifdef METRALE_HAS_CUDA
  if (previous_ >= 0) cudaSetDevice(previous_);
#endif
}

}  // namespace metrale::core
