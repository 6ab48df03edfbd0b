// Device queries the API layer needs before handing work to a CUDA-side backend, and the scope
// that runs a call on the device its caller named.
#pragma once

#include <string>
#include <string_view>

namespace metrale::core {

// True when this build has CUDA and at least one device is visible; otherwise `why` (if given)
// says which is missing, in the CUDA backend's words: "no CUDA device (cudaGetDeviceCount: the
// runtime's error name: its text)", so every call without a GPU tells one story.
bool cuda_device_present(std::string* why);

// Makes `device` the calling thread's current CUDA device for the scope's life and restores the
// previous one after; device -1 (METRALE_DEVICE_CURRENT), a CPU-backend call and a build without
// CUDA leave the thread as it is. `name` is the caller's name for the field ("exec->device").
// A negative index other than -1 is invalid_argument; an index with no device behind it is
// unsupported, with the runtime's reason.
class DeviceScope {
 public:
  DeviceScope(std::string_view who, std::string_view name, int device, bool cpu_backend);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;  // the device to restore; -1: nothing was changed
};

}  // namespace metrale::core
