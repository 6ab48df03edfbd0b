// The CUTLASS-free description of one grouped NVFP4 call of the reference arm, built on the host
// by grouped.cu from the expert offsets and handed to the tile that runs it (grouped_tiles.cu):
// one GroupEntry per (projection, active expert), in the order gate experts then up experts.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference/cutlass/common.cuh"
#include "reference/cutlass/dequant.cuh"

namespace metrale::reference::cutlass::detail {

struct GroupEntry {
  int rows;            // M of this group: the expert's rows
  const bf16_bits* a;  // first A row of the group ([rows, K], gathered copy or the caller's `a`)
  bf16_bits* d;        // first output row ([rows, N] inside the caller's out[p])
  float alpha;         // scale_2 of this projection of this expert
  DequantJob job;      // its NVFP4 weight -> bf16 [N, K] in the workspace (job.out is B)
};

struct GroupedCall {
  const char* who = "";
  DeviceInfo device;
  cudaStream_t stream = nullptr;
  int groups = 0, n = 0, k = 0;
  ScaleLayout layout = ScaleLayout::k16_by_n;
  std::vector<GroupEntry> entries;
  // Row gather (token_ids non-null): gathered[r] = a[token_ids[first_row + r]], r < rows_used.
  const bf16_bits* a = nullptr;
  int a_rows = 0;
  const std::int32_t* token_ids = nullptr;
  int first_row = 0, rows_used = 0;
  bf16_bits* gathered = nullptr;
};

// Two kernels: 64x128 ping-pong for decode-sized groups, 128x256 cooperative for prefill.
enum class GroupedTile { m64n128, m128n256 };

// Bytes the tile needs beyond the weights and the gathered rows: the staged per-group arrays and
// CUTLASS's own workspace (tensor maps per SM).
template <GroupedTile kTile>
std::size_t grouped_extra_bytes(int groups, int sm_count);
// Enqueues the whole call on call.stream; takes its regions from `carver`.
template <GroupedTile kTile>
void run_grouped(const GroupedCall& call, Carver& carver);

template <>
std::size_t grouped_extra_bytes<GroupedTile::m64n128>(int groups, int sm_count);
template <>
std::size_t grouped_extra_bytes<GroupedTile::m128n256>(int groups, int sm_count);
template <>
void run_grouped<GroupedTile::m64n128>(const GroupedCall& call, Carver& carver);
template <>
void run_grouped<GroupedTile::m128n256>(const GroupedCall& call, Carver& carver);

}  // namespace metrale::reference::cutlass::detail
