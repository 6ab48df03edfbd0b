// Device memory of the check harness (CUDA builds only): buffers framed by guard bands of known
// bytes on both sides (checked after every run: a kernel writing past either end of an output
// is caught even when it corrupts nothing else), upload, download and poisoning. Every CUDA error
// becomes a HarnessError naming the call and the buffer.
#pragma once

#ifdef METRALE_HAS_CUDA

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "check/guard.hpp"
#include "metrale/metrale.hpp"

namespace metrale::check {

// Throws HarnessError("<what>: <cuda error name>: <string>") unless err is cudaSuccess.
void cuda_require(cudaError_t err, const std::string& what);
// cudaDeviceSynchronize, reporting an asynchronous kernel error as a HarnessError.
void device_synchronize(const std::string& what);

class DeviceBuffer {
 public:
  static constexpr std::size_t kGuardBytes = check::kGuardBytes;

  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, std::string name);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return base_ ? base_ + kGuardBytes : nullptr; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data());
  }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }

  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  template <class T>
  void upload(const std::vector<T>& host) {
    upload(host.data(), host.size() * sizeof(T));
  }
  template <class T>
  std::vector<T> download() const {
    std::vector<T> host(size_ / sizeof(T));
    download(host.data(), host.size() * sizeof(T));
    return host;
  }

  void poison_bytes(std::uint8_t value);  // every byte of the data
  void poison_bf16(bf16_bits value);      // every bf16 of the data
  // "" when both guard bands still hold their pattern, else which bytes changed.
  std::string check_guards() const;

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t size_ = 0;
  std::string name_;
};

// A DeviceBuffer holding a copy of `host`.
template <class T>
DeviceBuffer upload_new(const std::vector<T>& host, std::string name) {
  DeviceBuffer buffer(host.size() * sizeof(T), std::move(name));
  buffer.upload(host);
  return buffer;
}

// Checks the guards of every buffer; "" when all are intact, else the first broken one.
std::string check_all_guards(const std::vector<const DeviceBuffer*>& buffers);

}  // namespace metrale::check

#endif  // METRALE_HAS_CUDA
