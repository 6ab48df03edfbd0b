// Run-time configuration from the environment. Read when asked (not cached), so a process can
// change it between calls; the shared workspace reads its size once, at its first use.
//   METRALE_CUTLASS_GEMM  "1": Backend::automatic dispatches to the CUTLASS reference arm.
//                         Unset, "" or "0": our own kernels (the default). Anything else is an
//                         error, so a typo never silently measures the wrong implementation.
//   METRALE_WORKSPACE_MB  megabytes of the shared workspace of each backend (default 512).
//   METRALE_SM90_TILE     tuning only: force entry i of the sm90 GEMM's tile table
//                         (src/cuda/sm90/grouped_gemm_params.hpp) instead of the rows-per-expert
//                         choice. Unset or "": the table's own choice.
#pragma once

#include <cstddef>
#include <optional>

namespace metrale::core {

inline constexpr std::size_t kDefaultWorkspaceMb = 512;
// Upper bound on METRALE_WORKSPACE_MB (1 TiB): beyond it the value is surely a typo.
inline constexpr std::size_t kMaxWorkspaceMb = std::size_t{1} << 20;

// Throws metrale::Error (invalid_argument) naming the variable and its value when malformed.
bool cutlass_gemm_enabled();
std::size_t workspace_megabytes();
std::size_t workspace_bytes();
// The forced tile index in [0, tile_count), or nothing when METRALE_SM90_TILE is unset.
std::optional<int> forced_sm90_tile(int tile_count);

}  // namespace metrale::core
