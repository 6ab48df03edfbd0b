// The shared, lazily allocated workspace (see workspace.hpp). CUDA is included only when the
// CUDA backend is built, so a CPU-only build has no CUDA dependency at all.
#include "core/workspace.hpp"

#include <map>
#include <memory>
#include <new>

#include "core/config.hpp"
#include "core/error.hpp"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>
#endif

namespace metrale::core {

LazyBuffer::~LazyBuffer() {
  if (allocated_ && buffer_.ptr != nullptr) release_(buffer_.ptr);
}

Buffer LazyBuffer::get(Size bytes) {
  std::lock_guard lock(mutex_);
  if (!allocated_) {
    const std::size_t size = bytes();
    buffer_.ptr = size > 0 ? allocate_(size) : nullptr;
    buffer_.size = size;
    allocated_ = true;
    ++allocations_;
  }
  return buffer_;
}

bool LazyBuffer::allocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

int LazyBuffer::allocation_count() const {
  std::lock_guard lock(mutex_);
  return allocations_;
}

namespace {

constexpr std::align_val_t kHostAlignment{256};

// Leaked on purpose: the shared buffers live until the process ends, and destroying a device
// buffer during static destruction could run after the CUDA runtime has shut down.
LazyBuffer& host_buffer() {
  static auto* buffer = new LazyBuffer(allocate_host, release_host);
  return *buffer;
}

#ifdef METRALE_HAS_CUDA

int current_device() {
  int device = -1;
  const cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    fail(Status::cuda_error, "shared workspace: cudaGetDevice failed: {} ({})",
         cudaGetErrorName(err), cudaGetErrorString(err));
  }
  return device;
}

void* allocate_device(std::size_t bytes) {
  void* ptr = nullptr;
  const cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err != cudaSuccess) {
    int device = -1;
    cudaGetDevice(&device);
    fail(Status::cuda_error,
         "shared workspace: cudaMalloc({} MiB) failed on device {}: {} ({}); lower "
         "METRALE_WORKSPACE_MB or pass a workspace",
         bytes >> 20, device, cudaGetErrorName(err), cudaGetErrorString(err));
  }
  return ptr;
}

void release_device(void* ptr) {
  cudaFree(ptr);
}

// One buffer per device, created on first use of that device.
LazyBuffer& device_buffer(int device) {
  static auto* mutex = new std::mutex;
  static auto* buffers = new std::map<int, std::unique_ptr<LazyBuffer>>;
  std::lock_guard lock(*mutex);
  auto& slot = (*buffers)[device];
  if (!slot) slot = std::make_unique<LazyBuffer>(allocate_device, release_device);
  return *slot;
}

#endif  // METRALE_HAS_CUDA

}  // namespace

void* allocate_host(std::size_t bytes) {
  void* ptr = ::operator new(bytes, kHostAlignment, std::nothrow);
  if (ptr == nullptr) {
    fail(Status::internal,
         "shared workspace: cannot allocate {} MiB of host memory; lower "
         "METRALE_WORKSPACE_MB",
         bytes >> 20);
  }
  return ptr;
}

void release_host(void* ptr) {
  ::operator delete(ptr, kHostAlignment);
}

Buffer shared_workspace(Backend backend) {
  if (backend == Backend::cpu) return host_buffer().get(workspace_bytes);
#ifdef METRALE_HAS_CUDA
  return device_buffer(current_device()).get(workspace_bytes);
#else
  fail(Status::not_built, "shared workspace: the {} backend was not built, it has no workspace",
       backend_name(backend));
#endif
}

bool shared_workspace_allocated(Backend backend) {
  if (backend == Backend::cpu) return host_buffer().allocated();
#ifdef METRALE_HAS_CUDA
  return device_buffer(current_device()).allocated();
#else
  return false;
#endif
}

}  // namespace metrale::core
