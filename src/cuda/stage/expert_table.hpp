// Per-expert tables in device memory. The API hands over host arrays (one device pointer or one
// fp32 per expert, the seeds' form); kernels read them from the workspace, never from their
// parameter block, so the expert count is not bounded by the 32 KB a launch can carry. A staging
// kernel copies them there: its parameters carry kTableChunk experts at a time (a graph captures
// them by value, so a replay stages the same tables again), plus the host offsets.
#pragma once

#include <cstdint>

namespace metrale::cuda {

inline constexpr int kTableChunk = 256;   // experts per staging launch
inline constexpr int kMaxExperts = 2048;  // host offsets travel in one launch: 8 KB

struct ExpertEntry {
  const void* weight;           // packed e2m1 [N, K/2] (or bf16 [N, K])
  const std::uint8_t* scale;    // e4m3 block scales in the call's layout (null for bf16)
  float scale_2;                // fp32 per-tensor decode scale (1 for bf16)
  std::int32_t reserved;
};
static_assert(sizeof(ExpertEntry) == 24, "the staged table is read as 24-byte entries");

// Experts [first, first + count) of every projection, kCapacity at most.
template <int kCapacity>
struct TableChunkOf {
  static constexpr int kExperts = kCapacity;
  alignas(16) ExpertEntry entries[2][kCapacity];
  std::int32_t first = 0, count = 0;
};
using TableChunk = TableChunkOf<kTableChunk>;
// A launch that carries no host offsets has room for 512 experts of two projections (24 KB of
// the 32 KB a launch may carry): Qwen3-Next's 512 experts with no staging launch of their own.
inline constexpr int kWideTableChunk = 512;
using WideTableChunk = TableChunkOf<kWideTableChunk>;

struct HostOffsets {
  std::int32_t count = 0;  // num_experts + 1, or 0 when the offsets live on the device
  std::int32_t reserved[3];
  alignas(16) std::int32_t values[kMaxExperts + 4];  // read 16 bytes at a time
};

// Where staged tables land: table[p · num_experts + e]; offsets[e] (host offsets only).
struct StagedTables {
  ExpertEntry* table = nullptr;
  std::int32_t* offsets = nullptr;
  std::int32_t num_experts = 0, proj_count = 1;
  std::uint32_t* counters = nullptr;  // a K-split launch's tile counters, zeroed by the staging
  std::int32_t counter_count = 0;
};

}  // namespace metrale::cuda
