// metrale::cuda::available: can the current CUDA device run this library's kernels? Called first
// by every CUDA entry point, so the answer is cached: the device count once per process, the
// kernel-image probe once per device; a call after that costs a cudaGetDevice and an atomic load.
// The reason for a "no" names the situation: no device (and the runtime's error), or the device,
// its compute capability and the archs this library was built for. Also the checks of
// require_device.hpp, here because their messages need fmt.
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_probe.hpp"
#include "cuda/require_device.hpp"

namespace metrale::cuda {
namespace {

constexpr int kMaxCachedDevices = 64;

enum : std::uint8_t { kUnknown = 0, kUsable = 1, kUnusable = 2 };

// One device's cached answer; `why` is written before `state` is published (release) and never
// changed after, so readers that saw the state (acquire) read it without a lock.
struct DeviceSlot {
  std::atomic<std::uint8_t> state{kUnknown};
  std::string why;
};

std::array<DeviceSlot, kMaxCachedDevices> g_slots;
std::mutex g_probe_mutex;

struct DeviceCount {
  int count = 0;
  std::string why;  // set when count == 0
};

// "900" -> "sm_90", "800,900" -> "sm_80, sm_90".
std::string describe_arch_list(const char* list) {
  std::string result;
  std::string number;
  auto flush = [&] {
    if (number.empty()) return;
    const int value = std::stoi(number);
    if (!result.empty()) result += ", ";
    result += fmt::format("sm_{}", value / 10);
    number.clear();
  };
  for (const char* c = list; *c; ++c) {
    if (*c >= '0' && *c <= '9') {
      number += *c;
    } else {
      flush();
    }
  }
  flush();
  return result.empty() ? std::string("no arch recorded") : result;
}

// The device count never changes within a process (CUDA_VISIBLE_DEVICES is read at init).
const DeviceCount& device_count() {
  static const DeviceCount cached = [] {
    DeviceCount result;
    const cudaError_t err = cudaGetDeviceCount(&result.count);
    if (err != cudaSuccess) {
      cudaGetLastError();  // leave no error behind for a later launch check to misreport
      result.count = 0;
      result.why = fmt::format("no CUDA device (cudaGetDeviceCount: {}: {})", cudaGetErrorName(err),
                               cudaGetErrorString(err));
    } else if (result.count == 0) {
      result.why = "no CUDA device (cudaGetDeviceCount found none)";
    }
    return result;
  }();
  return cached;
}

// Name and compute capability of `device`, for messages.
std::string describe_device(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("CUDA device {} (properties unavailable)", device);
  }
  return fmt::format("CUDA device {} ({}, compute capability {}.{})", device, prop.name, prop.major,
                     prop.minor);
}

// Loads this library's image for `device` (the current device); empty string when it runs.
std::string probe_device(int device) {
  cudaFuncAttributes attributes{};
  const cudaError_t err = detail::probe_kernel_image(&attributes);
  if (err == cudaSuccess) return {};
  cudaGetLastError();
  const bool no_image = err == cudaErrorInvalidDeviceFunction ||
                        err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidPtx ||
                        err == cudaErrorUnsupportedPtxVersion;
  if (no_image) {
    return fmt::format(
        "{} cannot run metrale's kernels: this build has code for {} only (__CUDA_ARCH_LIST__ "
        "{}; an arch-specific target such as sm_90a runs only on its exact compute capability; "
        "rebuild with CMAKE_CUDA_ARCHITECTURES naming this device's arch) ({})",
        describe_device(device), describe_arch_list(detail::built_arch_list()),
        detail::built_arch_list(), cudaGetErrorName(err));
  }
  return fmt::format("{} is not usable: loading metrale's kernels failed with {}: {}",
                     describe_device(device), cudaGetErrorName(err), cudaGetErrorString(err));
}

}  // namespace

bool available(std::string* why) {
  const DeviceCount& count = device_count();
  if (count.count <= 0) {
    if (why) *why = count.why;
    return false;
  }
  int device = -1;
  const cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (why)
      *why = fmt::format("no usable CUDA device (cudaGetDevice: {}: {})", cudaGetErrorName(err),
                         cudaGetErrorString(err));
    return false;
  }
  if (device < 0 || device >= kMaxCachedDevices) {
    // Beyond the cache (more than 64 devices): probe every time, still correct.
    const std::string reason = probe_device(device);
    if (why) *why = reason;
    return reason.empty();
  }
  DeviceSlot& slot = g_slots[static_cast<std::size_t>(device)];
  std::uint8_t state = slot.state.load(std::memory_order_acquire);
  if (state == kUnknown) {
    std::lock_guard<std::mutex> lock(g_probe_mutex);
    state = slot.state.load(std::memory_order_relaxed);
    if (state == kUnknown) {
      slot.why = probe_device(device);
      state = slot.why.empty() ? kUsable : kUnusable;
      slot.state.store(state, std::memory_order_release);
    }
  }
  if (state == kUsable) return true;
  if (why) *why = slot.why;
  return false;
}

void require_device(std::string_view who) {
  std::string why;
  if (!available(&why))
    fail(Status::unsupported, "{}: the cuda backend cannot run here: {}", who, why);
}

void refuse_capture(std::string_view who, void* stream, std::string_view reason) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  METRALE_CUDA_CHECK(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture));
  if (capture != cudaStreamCaptureStatusNone)
    fail(Status::unsupported, "{}: cannot be captured in a CUDA graph ({})", who, reason);
}

void download(const void* device, std::size_t bytes, void* host, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  METRALE_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s));
  METRALE_CUDA_CHECK(cudaStreamSynchronize(s));
}

void require_aligned_16(std::string_view who, std::string_view name, const void* ptr) {
  if (reinterpret_cast<std::uintptr_t>(ptr) % kPointerAlignment != 0) {
    fail(Status::unsupported,
         "{}: {} = {} is not {}-byte aligned, expected a {}-byte aligned device pointer (the cuda "
         "backend moves 16 bytes at a time)",
         who, name, ptr, kPointerAlignment, kPointerAlignment);
  }
}

}  // namespace metrale::cuda
