// Device memory and stream helpers of the CUDA bench. Every CUDA call is checked and a failure
// becomes metrale::Error (Status::cuda_error) naming the call and the device.
//   DeviceArena  bump allocator over 1 GiB chunks: the bench allocates many weight slots and
//                frees them all at once (per model and operation), never one by one
//   Stream       a non-blocking stream (CUDA graphs cannot capture the legacy default stream)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.hpp"

namespace metrale::bench {

class DeviceArena {
 public:
  DeviceArena() = default;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  ~DeviceArena();

  // Every allocation starts on, and takes a multiple of, this many bytes.
  static constexpr std::size_t kAlign = 256;
  // The bytes allocate(bytes) takes from a chunk (for callers that plan their memory).
  static std::size_t footprint(std::size_t bytes) {
    return bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  }

  // 256-byte aligned, uninitialised; lives until reset().
  void* allocate(std::size_t bytes);
  template <class T>
  T* allocate_n(std::size_t count) {
    return static_cast<T*>(allocate(count * sizeof(T)));
  }
  // Frees every chunk (synchronises the device, as cudaFree does).
  void reset();
  std::size_t bytes_held() const { return held_; }

 private:
  struct Chunk {
    std::uint8_t* base = nullptr;
    std::size_t size = 0, used = 0;
  };
  std::vector<Chunk> chunks_;
  std::size_t held_ = 0;
};

class Stream {
 public:
  Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();
  cudaStream_t get() const { return stream_; }
  void sync() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// Free device memory now, in bytes.
std::size_t free_device_bytes();

// Host -> device copy on `stream`, then a stream sync: the host vector may go away afterwards.
void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace metrale::bench
