// Host staging for the CUTLASS grouped GEMM's per-group arrays (problem sizes, pointers, strides,
// alphas, dequantization jobs): they are written on the host into pinned memory and uploaded with
// one cudaMemcpyAsync into the caller's workspace, on the caller's stream.
//
// Why pinned, and why a ring: a copy from pinned memory is a DMA that reads the host buffer when
// the stream reaches it, possibly after the call has returned, so the buffer must outlive the
// copy. Each device has a ring of kStagingSlots buffers; a slot is reused only after the event
// recorded behind its last upload has completed (cudaEventSynchronize), so back-to-back calls
// never overwrite bytes a pending copy still reads, and the host can run kStagingSlots calls
// ahead of the GPU before it waits. Buffers grow on demand and live for the process.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <utility>

namespace metrale::reference::cutlass::detail {

inline constexpr int kStagingSlots = 4;

struct StagingSlot {
  void* host = nullptr;  // pinned, `capacity` bytes
  std::size_t capacity = 0;
  cudaEvent_t uploaded = nullptr;  // recorded after the slot's last upload
  bool pending = false;            // an upload was recorded and may still be reading
};

// Exclusive use of one slot until destruction (holds the ring's lock: calls that stage are
// serialised, which costs nothing next to the GEMM they launch).
class StagingLease {
 public:
  StagingLease(StagingSlot& slot, std::unique_lock<std::mutex> lock)
      : slot_(&slot), lock_(std::move(lock)) {}
  void* host() const { return slot_->host; }
  // Copies the first `bytes` of the slot to `device_dst` on `stream` and records the event that
  // releases the slot.
  void upload(void* device_dst, std::size_t bytes, cudaStream_t stream);

 private:
  StagingSlot* slot_;
  std::unique_lock<std::mutex> lock_;
};

// A pinned buffer of at least `bytes` on the current device that no pending copy reads.
StagingLease acquire_staging(std::size_t bytes);

}  // namespace metrale::reference::cutlass::detail
