// Internal pieces of the cuBLASLt reference arm: workspace carving.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/workspace.hpp"
#include "reference/cublaslt/cublaslt_backend.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cublaslt {

// Every region we carve is 256-byte aligned (the alignment cuBLASLt assumes by default for its
// operands).
inline constexpr std::size_t kWorkspaceAlign = 256;

inline std::size_t aligned_bytes(std::size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// The workspace with its start rounded up to kWorkspaceAlign (empty when nothing is left).
core::Buffer align_workspace(core::Buffer ws);

}  // namespace metrale::reference::cublaslt
