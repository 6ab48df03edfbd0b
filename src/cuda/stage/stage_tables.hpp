// Host side of the table staging (stage_tables.cu): fills the launch-parameter chunks from the
// API's host arrays and launches the copies. Device side: copy_table_chunk, shared by the decode
// family's plan kernel, which carries the first chunk itself to save a launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "cuda/family.hpp"
#include "cuda/stage/expert_table.hpp"

namespace metrale::cuda {

// Expert e's entry of projection p, from the API's host arrays (no scales for bf16 weights).
ExpertEntry expert_entry(const Problem& problem, int p, int e);

// Experts [first, first + the chunk's capacity) of `problem`, as launch parameters.
template <int kCapacity>
void fill_table_chunk(const Problem& problem, int first, TableChunkOf<kCapacity>& chunk) {
  const GroupedNvfp4& a = problem.args;
  chunk.first = first;
  chunk.count = std::clamp(a.groups.num_experts - first, 0, kCapacity);
  for (int p = 0; p < a.proj_count; ++p)
    for (int i = 0; i < chunk.count; ++i) chunk.entries[p][i] = expert_entry(problem, p, first + i);
}
void fill_host_offsets(const Problem& problem, HostOffsets& offsets);

// Copies the chunks of experts [first_expert, num_experts) and, when `offsets` is not null and
// holds host offsets, the offsets, into `dst`, and zeroes dst.counters. One launch per chunk (one
// at least when there are offsets to copy).
void stage_tables(const Problem& problem, int first_expert, const HostOffsets* offsets,
                  const StagedTables& dst, cudaStream_t stream);

#ifdef __CUDACC__
// Entries travel as 8-byte words: the parameter block serialises a warp's loads of different
// addresses, so fewer, wider loads per entry (and every CTA of the grid taking a share) matter.
template <int kCapacity>
__device__ inline void copy_table_chunk(const TableChunkOf<kCapacity>& chunk,
                                        const StagedTables& dst, int thread, int threads) {
  constexpr int kWords = sizeof(ExpertEntry) / sizeof(unsigned long long);
  for (int i = thread; i < dst.proj_count * chunk.count * kWords; i += threads) {
    const int word = i % kWords, entry = i / kWords;
    const int p = entry / chunk.count, e = entry % chunk.count;
    reinterpret_cast<unsigned long long*>(dst.table + p * dst.num_experts + chunk.first + e)[word] =
        reinterpret_cast<const unsigned long long*>(&chunk.entries[p][e])[word];
  }
}

__device__ inline void copy_host_offsets(const HostOffsets& offsets, const StagedTables& dst,
                                         int thread, int threads) {
  for (int i = thread; i < offsets.count; i += threads) dst.offsets[i] = offsets.values[i];
}
#endif

}  // namespace metrale::cuda
