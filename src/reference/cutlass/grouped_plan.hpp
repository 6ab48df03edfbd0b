// The CUTLASS-free description of one grouped call of CUTLASS's sm90 grouped GEMM, handed to the
// tile that runs it (grouped_tiles*.cu). Two callers build it on the host: the reference arm's
// NVFP4 call (grouped.cu: one GroupEntry per (projection, active expert), gate experts then up
// experts, weights dequantized into the workspace) and the bench's bf16-grouped opponent
// (bf16_grouped.cu: one GroupEntry per group given, over bf16 weights made once by the caller).
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
  DequantJob job;      // its NVFP4 weight -> bf16 [N, K] in the workspace (job.out is B); the
                       // bf16 opponent sets only job.out, to its bf16 weight
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

// The kernels of CUTLASS's sm90 ptr-array grouped GEMM that we compile. The reference arm runs the
// first two (64x128 ping-pong for decode-sized groups, 128x256 cooperative for prefill); the
// bf16-grouped bench opponent (bf16_grouped.hpp) runs the last two, the configurations
// torch._grouped_mm runs on sm90 (aten/src/ATen/native/cuda/GroupMM.cu: 64x128x128 ping-pong when
// the average group has <= 128 rows or N <= 128, else 128x256x64 cooperative, both with a 2x1x1
// cluster that multicasts each weight tile to two CTAs).
enum class GroupedTile { m64n128, m128n256, m64n128k128_cluster2, m128n256_cluster2 };

// One row per GroupedTile: the single definition of each kernel's shape (GroupedKernel instantiates
// from it; the planners print its name). Ping-pong below 128 rows per tile, cooperative from 128.
struct GroupedTileInfo {
  GroupedTile tile;
  int m, n, k;    // CTA tile
  int cluster_m;  // CTAs per cluster along M (they share, by TMA multicast, the weight tile)
  const char* name;
};

inline constexpr GroupedTileInfo kGroupedTiles[] = {
    {GroupedTile::m64n128, 64, 128, 64, 1, "64x128x64 ping-pong, cluster 1x1"},
    {GroupedTile::m128n256, 128, 256, 64, 1, "128x256x64 cooperative, cluster 1x1"},
    {GroupedTile::m64n128k128_cluster2, 64, 128, 128, 2, "64x128x128 ping-pong, cluster 2x1"},
    {GroupedTile::m128n256_cluster2, 128, 256, 64, 2, "128x256x64 cooperative, cluster 2x1"},
};

constexpr const GroupedTileInfo& grouped_tile_info(GroupedTile tile) {
  for (const GroupedTileInfo& info : kGroupedTiles) {
    if (info.tile == tile) return info;
  }
  return kGroupedTiles[0];
}

// Where a staged call lies in the device workspace: its per-group arrays and, after them,
// CUTLASS's own workspace (tensor maps per SM).
struct StagedRegions {
  char* arrays = nullptr;
  void* cutlass_workspace = nullptr;
};

// The functions of one tile, defined in grouped_kernel.cuh and instantiated once per tile by the
// grouped_tiles*.cu files (METRALE_CUTLASS_GROUPED_TILE), so each kernel is compiled exactly once.
//   grouped_extra_bytes  bytes the tile needs beyond the weights and the gathered rows: the staged
//                        per-group arrays and CUTLASS's workspace
//   stage_grouped        writes the per-group arrays and uploads them on call.stream, after
//                        checking that CUTLASS can run the call; takes its regions from `carver`
//   launch_staged        enqueues the GEMM alone on `stream` over arrays staged by stage_grouped
//                        (the B pointers must then hold bf16 weights); no host-to-device copy, so
//                        a CUDA graph can capture it
//   run_grouped          the reference arm's whole call on call.stream: stage, gather the A rows,
//                        dequantize the weights, launch
template <GroupedTile kTile>
std::size_t grouped_extra_bytes(int groups, int sm_count);
template <GroupedTile kTile>
StagedRegions stage_grouped(const GroupedCall& call, Carver& carver);
template <GroupedTile kTile>
void launch_staged(const GroupedCall& call, const StagedRegions& regions, cudaStream_t stream);
template <GroupedTile kTile>
void run_grouped(const GroupedCall& call, Carver& carver);

#define METRALE_CUTLASS_GROUPED_TILE(EXTERN, TILE)                                                \
  EXTERN template std::size_t grouped_extra_bytes<GroupedTile::TILE>(int, int);                   \
  EXTERN template StagedRegions stage_grouped<GroupedTile::TILE>(const GroupedCall&, Carver&);    \
  EXTERN template void launch_staged<GroupedTile::TILE>(const GroupedCall&, const StagedRegions&, \
                                                        cudaStream_t);                            \
  EXTERN template void run_grouped<GroupedTile::TILE>(const GroupedCall&, Carver&);
METRALE_CUTLASS_GROUPED_TILE(extern, m64n128)
METRALE_CUTLASS_GROUPED_TILE(extern, m128n256)
METRALE_CUTLASS_GROUPED_TILE(extern, m64n128k128_cluster2)
METRALE_CUTLASS_GROUPED_TILE(extern, m128n256_cluster2)

}  // namespace metrale::reference::cutlass::detail
