// Cuts a workspace into typed arrays, each 256-byte aligned, in the order asked for. With a null
// base it only counts: the same code sizes a family's workspace and lays it out.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metrale::cuda {

class WorkspaceCarve {
 public:
  static constexpr std::size_t kAlignment = 256;

  explicit WorkspaceCarve(void* base) : base_(reinterpret_cast<std::uintptr_t>(base)) {}

  template <class T>
  T* take(std::size_t count) {
    const std::size_t at = used_;
    used_ = (used_ + count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    return base_ == 0 ? nullptr : reinterpret_cast<T*>(base_ + at);
  }

  std::size_t used() const { return used_; }

 private:
  std::uintptr_t base_;
  std::size_t used_ = 0;
};

}  // namespace metrale::cuda
