// METRALE_CUDA_KERNEL set for a scope: how the check harness forces a kernel family for one case
// (Case::cuda_kernel), and how a test forces one around its own calls.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace metrale::check {

// METRALE_CUDA_KERNEL = `kernel` while it lives (nothing when empty); the previous value
// restored after it.
class ScopedCudaKernel {
 public:
  explicit ScopedCudaKernel(const std::string& kernel) : active_(!kernel.empty()) {
    if (!active_) return;
    if (const char* old = std::getenv(kVariable)) previous_ = old;
    setenv(kVariable, kernel.c_str(), 1);
  }
  ~ScopedCudaKernel() {
    if (!active_) return;
    if (previous_) setenv(kVariable, previous_->c_str(), 1); else unsetenv(kVariable);
  }
  ScopedCudaKernel(const ScopedCudaKernel&) = delete;
  ScopedCudaKernel& operator=(const ScopedCudaKernel&) = delete;

 private:
  static constexpr const char* kVariable = "METRALE_CUDA_KERNEL";
  bool active_;
  std::optional<std::string> previous_;
};

}  // namespace metrale::check
