// An environment variable set for a scope: how the check harness forces a kernel family
// (Case::cuda_kernel, METRALE_CUDA_KERNEL), the quantizer's kernel (Case::cuda_quantizer,
// METRALE_CUDA_QUANTIZER) or the prepacked layout (Case::prepacked_layout,
// METRALE_PREPACKED_LAYOUT) for one case, and how a test forces one around its own calls.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace metrale::check {

// `variable` = `value` while it lives (nothing when `value` is empty); the previous value
// restored after it.
class ScopedVariable {
 public:
  ScopedVariable(const char* variable, const std::string& value)
      : variable_(variable), active_(!value.empty()) {
    if (!active_) return;
    if (const char* old = std::getenv(variable_)) previous_ = old;
    setenv(variable_, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (!active_) return;
    if (previous_)
      setenv(variable_, previous_->c_str(), 1);
    else
      unsetenv(variable_);
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* variable_;
  bool active_;
  std::optional<std::string> previous_;
};

// METRALE_CUDA_KERNEL = `kernel` ("sm90-tiled:6") while it lives.
struct ScopedCudaKernel : ScopedVariable {
  explicit ScopedCudaKernel(const std::string& kernel)
      : ScopedVariable("METRALE_CUDA_KERNEL", kernel) {}
};

// METRALE_CUDA_QUANTIZER = `quantizer` ("lean", "proven") while it lives.
struct ScopedCudaQuantizer : ScopedVariable {
  explicit ScopedCudaQuantizer(const std::string& quantizer)
      : ScopedVariable("METRALE_CUDA_QUANTIZER", quantizer) {}
};

}  // namespace metrale::check
