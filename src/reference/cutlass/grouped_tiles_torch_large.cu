// torch._grouped_mm's sm90 kernel for large groups (> 128 rows per group on average and N > 128):
// CUTLASS's ptr-array grouped GEMM, 128x256x64 cooperative, cluster 2x1x1. Run by the bench's
// bf16-grouped opponent (bf16_grouped.cu); a file of its own so that the tiles compile in parallel.
#include "reference/cutlass/grouped_kernel.cuh"

namespace metrale::reference::cutlass::detail {

METRALE_CUTLASS_GROUPED_TILE(, m128n256_cluster2)

}  // namespace metrale::reference::cutlass::detail
