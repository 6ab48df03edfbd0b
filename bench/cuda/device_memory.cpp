// Device arena and stream of the CUDA bench (device_memory.hpp).
#include "bench/cuda/device_memory.hpp"

#include <algorithm>

namespace metrale::bench {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 30;

}  // namespace

DeviceArena::~DeviceArena() {
  // No throwing from a destructor: release what can be released.
  for (Chunk& c : chunks_) cudaFree(c.base);
}

void* DeviceArena::allocate(std::size_t bytes) {
  bytes = footprint(bytes);
  for (Chunk& c : chunks_) {
    if (c.size - c.used >= bytes) {
      void* p = c.base + c.used;
      c.used += bytes;
      return p;
    }
  }
  Chunk chunk;
  chunk.size = std::max(kChunkBytes, bytes);
  void* base = nullptr;
  const cudaError_t err = cudaMalloc(&base, chunk.size);
  if (err != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky; clear it
    fail(Status::cuda_error,
         "bench: cudaMalloc of {} MiB failed ({}); the arena already holds {} MiB, {} MiB free",
         chunk.size >> 20, cudaGetErrorName(err), held_ >> 20, free_device_bytes() >> 20);
  }
  chunk.base = static_cast<std::uint8_t*>(base);
  chunk.used = bytes;
  held_ += chunk.size;
  chunks_.push_back(chunk);
  return chunk.base;
}

void DeviceArena::reset() {
  for (Chunk& c : chunks_) METRALE_CUDA_CHECK(cudaFree(c.base));
  chunks_.clear();
  held_ = 0;
}

Stream::Stream() {
  METRALE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  cudaStreamDestroy(stream_);
}

void Stream::sync() const {
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free;
}

void upload(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  METRALE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace metrale::bench
