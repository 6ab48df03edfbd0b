// Table staging: the API's host arrays -> launch parameters -> the workspace (expert_table.hpp).
#include <cstring>

#include "cuda/cuda_check.hpp"
#include "cuda/stage/stage_tables.hpp"

namespace metrale::cuda {
namespace {

struct TableCopyArgs {
  TableChunk chunk;
  HostOffsets offsets;
  StagedTables dst;
};

constexpr int kCopyThreads = 256;

__global__ void __launch_bounds__(kCopyThreads) stage_tables_kernel(const __grid_constant__ TableCopyArgs args) {
  copy_table_chunk(args.chunk, args.dst, threadIdx.x, blockDim.x);
  copy_host_offsets(args.offsets, args.dst, threadIdx.x, blockDim.x);
  for (int i = threadIdx.x; i < args.dst.counter_count; i += blockDim.x) args.dst.counters[i] = 0;
}

}  // namespace

ExpertEntry expert_entry(const Problem& problem, int p, int e) {
  const ExpertWeights& w = problem.args.proj[p];
  return ExpertEntry{reinterpret_cast<const void*>(w.packed_ptrs[e]),
                     problem.nvfp4 ? reinterpret_cast<const std::uint8_t*>(w.scale_ptrs[e]) : nullptr,
                     problem.nvfp4 ? w.scale2_vals[e] : 1.0f, 0};
}

void fill_host_offsets(const Problem& problem, HostOffsets& offsets) {
  const ExpertGroups& g = problem.args.groups;
  offsets.count = g.offsets_on_device ? 0 : g.num_experts + 1;
  if (offsets.count > 0)
    std::memcpy(offsets.values, g.offsets, sizeof(std::int32_t) * static_cast<std::size_t>(offsets.count));
}

void stage_tables(const Problem& problem, int first_expert, const HostOffsets* offsets,
                  const StagedTables& dst, cudaStream_t stream) {
  thread_local TableCopyArgs args;  // ~20 KB: per-thread scratch (a launch copies it)
  for (int first = first_expert;
       first < problem.args.groups.num_experts || (offsets && offsets->count > 0 && first == first_expert);
       first += kTableChunk) {
    fill_table_chunk(problem, first, args.chunk);
    args.offsets.count = 0;  // the chunks after the first carry no offsets
    if (offsets && first == first_expert) args.offsets = *offsets;
    args.dst = dst;
    if (first != first_expert) args.dst.counter_count = 0;  // the first launch zeroes them
    stage_tables_kernel<<<1, kCopyThreads, 0, stream>>>(args);
    METRALE_CUDA_CHECK_LAUNCH(stage_tables_kernel);
  }
}

}  // namespace metrale::cuda
