// The bench's `bf16-grouped (CUTLASS)` opponent: CUTLASS's sm90 ptr-array grouped GEMM (TMA +
// wgmma, warp-specialized) on bf16 weights made once by the caller, with the kernel choice of
// torch._grouped_mm on sm90. It is the bf16 baseline an NVFP4 MoE kernel must beat at prefill
// (issue 8): the weights are already bf16, so nothing is dequantized inside the timing.
//   for each group g:  d_g[rows_g, N] = a_g[rows_g, K] · b_g[N, K]ᵀ
//   a_g  [rows_g, K] bf16 row-major (the expert's rows, already gathered)
//   b_g  [N, K] bf16 row-major (the expert's weight, K contiguous)
//   d_g  [rows_g, N] bf16 row-major; fp32 accumulation, alpha = 1, no C operand
// The per-group arrays (sizes, pointers, strides) are staged once, when the plan is made; run()
// then enqueues the GEMM alone, which a CUDA graph can capture. Compiled only in a CUTLASS build
// (METRALE_HAS_CUTLASS); sm_90a only. This header is CUTLASS-free (the bench includes it).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/workspace.hpp"
#include "metrale/metrale.hpp"

namespace metrale::reference::cutlass {

struct Bf16Group {
  int rows = 0;                  // M of the group; 0: the group is left out
  const bf16_bits* a = nullptr;  // [rows, K], 16-byte aligned
  const bf16_bits* b = nullptr;  // [N, K], 16-byte aligned
  bf16_bits* d = nullptr;        // [rows, N], 16-byte aligned
};

// automatic: torch._grouped_mm's rule on sm90 (aten/src/ATen/native/cuda/GroupMM.cu): ping-pong
// 64x128x128 when the groups average <= 128 rows or N <= 128, else cooperative 128x256x64; both
// with a 2x1x1 cluster. The others force one kernel (tests).
enum class Bf16GroupedKernel { automatic, pingpong_64x128x128, cooperative_128x256x64 };

struct Bf16Grouped {
  std::vector<Bf16Group> groups;
  int n = 0, k = 0;  // N % 8 == 0 and K % 8 == 0 (16-byte TMA rows)
  Bf16GroupedKernel kernel = Bf16GroupedKernel::automatic;
};

// The kernel `automatic` resolves to for these groups.
Bf16GroupedKernel bf16_grouped_kernel(const Bf16Grouped& args);
// "CUTLASS sm90 ptr-array grouped, 128x256x64 cooperative, cluster 2x1": what a bench row prints.
const char* bf16_grouped_kernel_name(Bf16GroupedKernel kernel);
// Bytes of workspace a plan of these groups takes (its staged arrays and CUTLASS's workspace).
std::size_t bf16_grouped_workspace_size(const Bf16Grouped& args);

class Bf16GroupedPlan {
 public:
  // Validates (Status::unsupported naming the value, for a shape or pointer CUTLASS cannot take;
  // Status::workspace_too_small), stages the per-group arrays into `ws` on `stream` and waits for
  // the upload. The pointers in `args` must stay valid for the plan's life; `ws` too.
  Bf16GroupedPlan(const Bf16Grouped& args, core::Buffer ws, void* stream);
  ~Bf16GroupedPlan();
  Bf16GroupedPlan(Bf16GroupedPlan&&) noexcept;
  Bf16GroupedPlan& operator=(Bf16GroupedPlan&&) noexcept;

  // Enqueues the grouped GEMM on `stream` (any stream; capturable). Nothing when no group has rows.
  void run(void* stream) const;
  Bf16GroupedKernel kernel() const;

 private:
  struct Staged;
  std::unique_ptr<Staged> staged_;
};

}  // namespace metrale::reference::cutlass
