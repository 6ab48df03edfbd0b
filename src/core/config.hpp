// Run-time configuration from the environment. Read when asked (not cached), so a process can
// change it between calls; the shared workspace reads its size once, at its first use.
//   METRALE_CUTLASS_GEMM  "1": Backend::automatic dispatches to the CUTLASS reference arm.
//                         Unset, "" or "0": our own kernels (the default). Anything else is an
//                         error, so a typo never silently measures the wrong implementation.
//   METRALE_WORKSPACE_MB  megabytes of the shared workspace of each backend (default 512).
//   METRALE_MOE_CHECK_INPUTS "1": the CUDA MoE layer copies its token data (logits, or ids and
//                         weights, and the correction bias) to the host and refuses non-finite
//                         values and ids out of range with the CPU backend's messages, before
//                         anything is enqueued. A debugging aid: it waits for the stream, so a
//                         capturing stream is refused. Unset, "" or "0": off (the device makes a
//                         bad token's row NaN instead).
//   METRALE_CUDA_KERNEL   tuning and tests only: "FAMILY[:CONFIG[:SPLITS]]" runs every expert of
//                         a CUDA-backend call on that kernel family (sm90-decode, sm90-stream,
//                         sm90-tiled), configuration index and K split (the decode and tiled
//                         families' splits; the stream family's warps sharing a work item's K:
//                         1, 2, 4 or 8), instead of the dispatcher's choice. The CUDA backend
//                         checks the names against its families.
//   METRALE_CUDA_QUANTIZER tuning and tests only: the CUDA quantizer's quantize kernel
//                         (pack_bf16_weight_to_nvfp4_t on the CUDA backend): unset, "" or
//                         "lean", the lean kernel (the default since it measured 0.79-0.85x the
//                         earlier kernel's time, docs/perf.md); "proven", the earlier kernel,
//                         kept for A/B runs. Both write the same bits.
//   METRALE_PREPACKED_LAYOUT tuning and tests only: what "prepacked" NVFP4 weights mean in this
//                         process: unset, "" or "fragments", format/fragment_order.hpp's order
//                         (the default since the twenty-fifth session: 0.95x the time at
//                         T = 4096, 1.01x at T <= 64, docs/perf.md); "halves", format/prepack.hpp's
//                         halves alone, kept for A/B runs and for the tiled family's
//                         decoder-warpgroup tiles, which read only it. The prepack conversions
//                         write and read the chosen one, the CPU backend and both kernel families
//                         decode it.
//   METRALE_CUDA_DENSE_COPY tuning and tests only: how the tiled family copies a dense bf16
//                         GEMM's stages: unset, "" or "tma", by TMA (one thread a stage; the
//                         default); "cp.async", every thread's 16-byte copies as before, kept for
//                         A/B runs. Both give the same bits.
//   METRALE_CUDA_DENSE_SCHEDULE tuning and tests only: how the tiled family shares a dense bf16
//                         GEMM (stages copied by TMA) among the multiprocessors: unset, "" or
//                         "auto", the family's rule; "tiles", a grid of output tiles (K cut into
//                         ranges where the family's rule says so); "stream-k", stream-K on every
//                         tile that has it (sm90/tiled/stream_k_kernel.cuh), refused on the others;
//                         "stream-k-pairs", the same with clusters of 2 CTAs sharing their
//                         weight rows (one TMA copy of each for both).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace metrale::core {

inline constexpr std::size_t kDefaultWorkspaceMb = 512;
// Upper bound on METRALE_WORKSPACE_MB (1 TiB): beyond it the value is surely a typo.
inline constexpr std::size_t kMaxWorkspaceMb = std::size_t{1} << 20;

// Throws metrale::Error (invalid_argument) naming the variable and its value when malformed.
bool cutlass_gemm_enabled();
bool moe_check_inputs();
std::size_t workspace_megabytes();
std::size_t workspace_bytes();
struct ForcedKernel {
  std::string family;
  int config = -1;  // -1: the family's own choice
  int splits = 0;   // 0: the family's own choice
};
// METRALE_CUDA_KERNEL parsed (syntax only), or nothing when it is unset or empty.
std::optional<ForcedKernel> forced_cuda_kernel();
// The CUDA quantizer's quantize kernel (METRALE_CUDA_QUANTIZER).
enum class CudaQuantizer { proven, lean };
CudaQuantizer cuda_quantizer();
// What prepacked NVFP4 weights mean (METRALE_PREPACKED_LAYOUT).
enum class PrepackedLayout { halves, fragments };
PrepackedLayout prepacked_layout();
// Whether METRALE_CUDA_DENSE_COPY asks for the dense bf16 GEMM's cp.async copies.
bool dense_copy_by_cp_async();
// METRALE_CUDA_DENSE_SCHEDULE.
enum class DenseSchedule { automatic, tiles, stream_k, stream_k_pairs };
DenseSchedule dense_schedule();

}  // namespace metrale::core
