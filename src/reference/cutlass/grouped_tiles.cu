// The reference arm's two CUTLASS sm_90a grouped bf16 GEMM kernels, one instantiation each:
// 64x128x64 ping-pong (decode: a few rows per expert) and 128x256x64 cooperative (prefill), both
// without clusters. See grouped_kernel.cuh for what they compute and how the call is staged.
#include "reference/cutlass/grouped_kernel.cuh"

namespace metrale::reference::cutlass::detail {

METRALE_CUTLASS_GROUPED_TILE(, m64n128)
METRALE_CUTLASS_GROUPED_TILE(, m128n256)

}  // namespace metrale::reference::cutlass::detail
