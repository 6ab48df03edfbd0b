// Run-time configuration from the environment. Read when asked (not cached), so a process can
// change it between calls; the shared workspace reads its size once, at its first use.
//   METRALE_CUTLASS_GEMM  "1": Backend::automatic dispatches to the CUTLASS reference arm.
//                         Unset, "" or "0": our own kernels (the default). Anything else is an
//                         error, so a typo never silently measures the wrong implementation.
//   METRALE_WORKSPACE_MB  megabytes of the shared workspace of each backend (default 512).
#pragma once

#include <cstddef>

namespace metrale::core {

inline constexpr std::size_t kDefaultWorkspaceMb = 512;
// Upper bound on METRALE_WORKSPACE_MB (1 TiB): beyond it the value is surely a typo.
inline constexpr std::size_t kMaxWorkspaceMb = std::size_t{1} << 20;

// Throws metrale::Error (invalid_argument) naming the variable and its value when malformed.
bool cutlass_gemm_enabled();
std::size_t workspace_megabytes();
std::size_t workspace_bytes();

}  // namespace metrale::core
