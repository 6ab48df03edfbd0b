// The process-wide shared workspace: one buffer per backend family, allocated on first use with
// METRALE_WORKSPACE_MB megabytes and never reallocated (a fixed budget, not sized by any model,
// so it survives a model swap). Host memory for the CPU backend; one cudaMalloc per CUDA device
// for the CUDA, CUTLASS and cuBLASLt backends. Allocation is thread-safe; *using* the buffer from
// two streams at once is the caller's to serialise, as with any caller-owned workspace.
#pragma once

#include <cstddef>
#include <mutex>

#include "metrale/metrale.hpp"

namespace metrale::core {

struct Buffer {
  void* ptr = nullptr;
  std::size_t size = 0;
};

// A buffer allocated once, on the first get(), by whichever thread gets there first; every
// caller then sees the same pointer. An allocation that throws leaves it unallocated, so a later
// call may retry.
class LazyBuffer {
 public:
  using Allocate = void* (*)(std::size_t bytes);  // throws metrale::Error on failure
  using Release = void (*)(void* ptr);
  using Size = std::size_t (*)();  // asked only by the call that allocates

  LazyBuffer(Allocate allocate, Release release) : allocate_(allocate), release_(release) {}
  ~LazyBuffer();
  LazyBuffer(const LazyBuffer&) = delete;
  LazyBuffer& operator=(const LazyBuffer&) = delete;

  Buffer get(Size bytes);
  bool allocated() const;
  int allocation_count() const;

 private:
  Allocate allocate_;
  Release release_;
  mutable std::mutex mutex_;
  Buffer buffer_;
  bool allocated_ = false;
  int allocations_ = 0;
};

// Host allocation used by the CPU workspace (256-byte aligned; pages are touched only when used).
void* allocate_host(std::size_t bytes);
void release_host(void* ptr);

// The shared workspace of `backend` (automatic, cuda, cutlass and cublaslt share the current
// device's buffer). Throws metrale::Error: not_built without the CUDA backend, cuda_error when
// cudaMalloc fails, invalid_argument for a malformed METRALE_WORKSPACE_MB.
Buffer shared_workspace(Backend backend);
// Whether the shared workspace of `backend` (current device) has been allocated yet.
bool shared_workspace_allocated(Backend backend);

}  // namespace metrale::core
