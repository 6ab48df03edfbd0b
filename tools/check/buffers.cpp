// Guard-banded device buffers of the check harness (buffers.hpp). Compiled to nothing without CUDA.
#ifdef METRALE_HAS_CUDA

#include "check/buffers.hpp"

#include <utility>

#include <fmt/format.h>

#include "check/weights.hpp"

namespace metrale::check {
namespace {

std::vector<std::uint8_t> guard_pattern() {
  std::vector<std::uint8_t> bytes(DeviceBuffer::kGuardBytes);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = guard_byte(i);
  return bytes;
}

}  // namespace

void cuda_require(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw HarnessError(
        fmt::format("{}: {}: {}", what, cudaGetErrorName(err), cudaGetErrorString(err)));
  }
}

void device_synchronize(const std::string& what) {
  cuda_require(cudaDeviceSynchronize(), fmt::format("cudaDeviceSynchronize after {}", what));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes, std::string name)
    : size_(bytes), name_(std::move(name)) {
  void* base = nullptr;
  cuda_require(cudaMalloc(&base, bytes + 2 * kGuardBytes),
               fmt::format("cudaMalloc of {} bytes for {}", bytes, name_));
  base_ = static_cast<std::uint8_t*>(base);
  const std::vector<std::uint8_t> guard = guard_pattern();
  cuda_require(cudaMemcpy(base_, guard.data(), kGuardBytes, cudaMemcpyHostToDevice),
               "guard band upload for " + name_);
  cuda_require(
      cudaMemcpy(base_ + kGuardBytes + size_, guard.data(), kGuardBytes, cudaMemcpyHostToDevice),
      "guard band upload for " + name_);
}

DeviceBuffer::~DeviceBuffer() {
  if (base_) cudaFree(base_);  // nothing to report from a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      name_(std::move(other.name_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (base_) cudaFree(base_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > size_)
    throw HarnessError(fmt::format("upload of {} bytes into {} ({} bytes)", bytes, name_, size_));
  if (bytes == 0) return;
  cuda_require(cudaMemcpy(data(), host, bytes, cudaMemcpyHostToDevice), "upload to " + name_);
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > size_)
    throw HarnessError(fmt::format("download of {} bytes from {} ({} bytes)", bytes, name_, size_));
  if (bytes == 0) return;
  cuda_require(cudaMemcpy(host, data(), bytes, cudaMemcpyDeviceToHost), "download from " + name_);
}

void DeviceBuffer::poison_bytes(std::uint8_t value) {
  if (size_ == 0) return;
  cuda_require(cudaMemset(data(), value, size_), "poisoning " + name_);
}

void DeviceBuffer::poison_bf16(bf16_bits value) {
  const std::vector<bf16_bits> pattern(size_ / sizeof(bf16_bits), value);
  upload(pattern);
}

std::string DeviceBuffer::check_guards() const {
  if (!base_) return {};
  std::vector<std::uint8_t> before(kGuardBytes), after(kGuardBytes);
  cuda_require(cudaMemcpy(before.data(), base_, kGuardBytes, cudaMemcpyDeviceToHost),
               "guard band download for " + name_);
  cuda_require(
      cudaMemcpy(after.data(), base_ + kGuardBytes + size_, kGuardBytes, cudaMemcpyDeviceToHost),
      "guard band download for " + name_);
  return guard_problem(name_, before, after);
}

std::string check_all_guards(const std::vector<const DeviceBuffer*>& buffers) {
  for (const DeviceBuffer* b : buffers) {
    std::string broken = b->check_guards();
    if (!broken.empty()) return broken;
  }
  return {};
}

}  // namespace metrale::check

#endif  // METRALE_HAS_CUDA
