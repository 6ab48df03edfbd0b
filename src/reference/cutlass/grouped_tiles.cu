// The two CUTLASS sm_90a grouped bf16 GEMM kernels of the reference arm, one instantiation each:
// 64x128x64 ping-pong (decode: a few rows per expert) and 128x256x64 cooperative (prefill).
// See grouped_kernel.cuh for what they compute and how the call is staged.
#include "reference/cutlass/grouped_kernel.cuh"

namespace metrale::reference::cutlass::detail {

template <>
std::size_t grouped_extra_bytes<GroupedTile::m64n128>(int groups, int sm_count) {
  return grouped_kernel_extra_bytes<64, 128>(groups, sm_count);
}
template <>
std::size_t grouped_extra_bytes<GroupedTile::m128n256>(int groups, int sm_count) {
  return grouped_kernel_extra_bytes<128, 256>(groups, sm_count);
}
template <>
void run_grouped<GroupedTile::m64n128>(const GroupedCall& call, Carver& carver) {
  run_grouped_kernel<64, 128>(call, carver);
}
template <>
void run_grouped<GroupedTile::m128n256>(const GroupedCall& call, Carver& carver) {
  run_grouped_kernel<128, 256>(call, carver);
}

}  // namespace metrale::reference::cutlass::detail
