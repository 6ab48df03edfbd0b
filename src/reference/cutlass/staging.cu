// The per-device ring of pinned staging buffers of the CUTLASS grouped path (see staging.cuh).
// Host code only.
#include <array>
#include <map>

#include "cuda/cuda_check.hpp"
#include "reference/cutlass/staging.cuh"

namespace metrale::reference::cutlass::detail {
namespace {

struct Ring {
  std::array<StagingSlot, kStagingSlots> slots;
  int next = 0;
};

struct Rings {
  std::mutex mutex;
  std::map<int, Ring> by_device;
};

// Leaked on purpose: pinned memory and events must not be released by a static destructor that
// may run after the CUDA runtime has shut down.
Rings& rings() {
  static Rings* instance = new Rings();
  return *instance;
}

constexpr std::size_t kMinCapacity = 64 * 1024;

std::size_t grown_capacity(std::size_t bytes) {
  std::size_t capacity = kMinCapacity;
  while (capacity < bytes) capacity *= 2;
  return capacity;
}

}  // namespace

void StagingLease::upload(void* device_dst, std::size_t bytes, cudaStream_t stream) {
  METRALE_CUDA_CHECK(
      cudaMemcpyAsync(device_dst, slot_->host, bytes, cudaMemcpyHostToDevice, stream));
  METRALE_CUDA_CHECK(cudaEventRecord(slot_->uploaded, stream));
  slot_->pending = true;
}

StagingLease acquire_staging(std::size_t bytes) {
  int device = 0;
  METRALE_CUDA_CHECK(cudaGetDevice(&device));
  Rings& all = rings();
  std::unique_lock<std::mutex> lock(all.mutex);
  Ring& ring = all.by_device[device];
  StagingSlot& slot = ring.slots[ring.next];
  ring.next = (ring.next + 1) % kStagingSlots;

  if (slot.uploaded == nullptr) {
    METRALE_CUDA_CHECK(cudaEventCreateWithFlags(&slot.uploaded, cudaEventDisableTiming));
  }
  if (slot.pending) {
    // The copy kStagingSlots calls ago may still be queued behind that call's stream work.
    METRALE_CUDA_CHECK(cudaEventSynchronize(slot.uploaded));
    slot.pending = false;
  }
  if (slot.capacity < bytes) {
    if (slot.host != nullptr) METRALE_CUDA_CHECK(cudaFreeHost(slot.host));
    slot.host = nullptr;
    slot.capacity = 0;
    const std::size_t capacity = grown_capacity(bytes);
    METRALE_CUDA_CHECK(cudaMallocHost(&slot.host, capacity));
    slot.capacity = capacity;
  }
  return StagingLease(slot, std::move(lock));
}

}  // namespace metrale::reference::cutlass::detail
