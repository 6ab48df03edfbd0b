// What both stream kernels share: the bf16 weight load that bypasses L1, mma.sync m16n8k16 on
// bf16 with fp32 sums, teams of warps, their K ranges and their fold.
#pragma once

#include <cstdint>

#include "cuda/sm90/stream/stream_params.hpp"

namespace metrale::cuda::sm90::stream {

// Weights are read once: kept out of L1, and L2 fetches the 256 bytes around each request, where
// the warp's next loads of the same rows will look.
__device__ __forceinline__ uint4 load_weights_16(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// d += A (16 x 16, bf16, row-major fragments) x B (16 x 8, bf16, column fragments), fp32 sums.
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                          uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A team: the `members` warps (1, 2, 4 or 8) of a CTA that share one item's K. The CTA holds
// kWarps / members teams, team t of its warps t members to (t + 1) members - 1.
struct Team {
  int index, member, members;
};
__device__ __forceinline__ Team warp_team(int members) {
  const int warp = static_cast<int>(threadIdx.x / 32);
  return {warp / members, warp % members, members};
}

// The team's warps wait for each other: named barrier 1 + team (barrier 0 is __syncthreads').
__device__ __forceinline__ void team_sync(const Team& team) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(1 + team.index), "r"(32 * team.members) : "memory");
}

// The team's fold of kParts sets of sums (an NVFP4 pair's gate and up: 2), `acc(part, tile,
// accumulator)`: a lone warp's sums are the item's; otherwise every warp leaves its accumulators
// (kTiles mma tiles of 4 a lane, each set's) in shared memory, at most kFoldTiles tiles of all the
// sets at a time, and each of the team's threads adds one accumulator's values of every set in
// warp order and hands the sums to store(tile, accumulator, lane, sum[kParts]). The caller syncs
// the team before its next fold.
inline constexpr int kFoldTiles = 4;  // 16 KB of shared memory
template <int kParts, int kTiles, class Acc, class Store>
__device__ __forceinline__ void fold_team_parts(Acc&& acc, const Team& team, Store&& store) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (team.members == 1) {
#pragma unroll
    for (int t = 0; t < kTiles; ++t)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float sum[kParts];
#pragma unroll
        for (int i = 0; i < kParts; ++i) sum[i] = acc(i, t, q);
        store(t, q, lane, sum);
      }
    return;
  }
  constexpr int kChunk = kTiles * kParts <= kFoldTiles ? kTiles : kFoldTiles / kParts;
  static_assert(kChunk > 0 && kTiles % kChunk == 0, "whole chunks of tiles");
  __shared__ float sums[kWarps][kChunk * kParts][4][32];
  const int first_warp = team.index * team.members;
  const int index = static_cast<int>(threadIdx.x) - 32 * first_warp;
#pragma unroll
  for (int first = 0; first < kTiles; first += kChunk) {
    if (first > 0) team_sync(team);  // the previous chunk's sums are read
#pragma unroll
    for (int i = 0; i < kParts; ++i)
#pragma unroll
      for (int t = 0; t < kChunk; ++t)
#pragma unroll
        for (int q = 0; q < 4; ++q) sums[warp][i * kChunk + t][q][lane] = acc(i, first + t, q);
    team_sync(team);
    for (int at = index; at < kChunk * 4 * 32; at += 32 * team.members) {
      const int t = at / 128, q = at / 32 % 4, l = at % 32;
      float sum[kParts];
#pragma unroll
      for (int i = 0; i < kParts; ++i) {
        sum[i] = sums[first_warp][i * kChunk + t][q][l];
        for (int v = 1; v < team.members; ++v)
          sum[i] = __fadd_rn(sum[i], sums[first_warp + v][i * kChunk + t][q][l]);
      }
      store(first + t, q, l, sum);
    }
  }
}

// The fold of one set of sums, acc[tile][accumulator]: store(tile, accumulator, lane, sum).
template <int kTiles, class Store>
__device__ __forceinline__ void fold_team(const float (&acc)[kTiles][4], const Team& team,
                                          Store&& store) {
  fold_team_parts<1, kTiles>(
      [&](int, int t, int q) { return acc[t][q]; }, team,
      [&](int t, int q, int l, const float(&sum)[1]) { store(t, q, l, sum[0]); });
}

// A warp's contiguous range [first, last) of a K cut into `groups` groups among its team.
struct WarpRange {
  int first, last;
};
__device__ __forceinline__ WarpRange warp_range(int groups, const Team& team) {
  const int per_warp = (groups + team.members - 1) / team.members;
  const int first = min(team.member * per_warp, groups);
  return {first, min(first + per_warp, groups)};
}

}  // namespace metrale::cuda::sm90::stream
