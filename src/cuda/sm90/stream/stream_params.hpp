// The stream family's host/device contract (stream_kernel.cu, stream_family.cpp): a dense bf16
// GEMM of few rows, out[M, N] = act[M, K] · weight[N, K]ᵀ, is a stream of weight bytes, and the
// work is to keep HBM busy and the launch short.
//
// A CTA owns kRowsPerCta weight rows (output channels) over all of K; its kWarps warps cut K into
// contiguous ranges of 32-value groups and each accumulates its range with mma.sync m16n8k16
// (the weights as the n8 operand, straight from global memory into registers: no shared-memory
// staging, no pipeline to fill), then the CTA adds the warps' sums in warp order. So the order of
// a sum depends on K alone, and a second run gives the same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace metrale::cuda::sm90::stream {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = kWarps * 32;
inline constexpr int kRowsPerCta = 8;      // the mma's n8: one weight row a lane quad loads
inline constexpr int kGroupK = 32;         // K a warp's 32 lanes cover with one 16-byte load each
inline constexpr int kTokensPerTile = 16;  // the mma's m16: activation rows

// Configurations: the activation rows a launch holds, in 16-row tiles (each a mma per k16 step).
inline constexpr int kTokenTiles[] = {1, 2, 4};
inline constexpr int kConfigCount = sizeof(kTokenTiles) / sizeof(kTokenTiles[0]);
inline constexpr int kMaxRows = kTokenTiles[kConfigCount - 1] * kTokensPerTile;

// The narrowest configuration holding `rows` activation rows (rows <= kMaxRows).
constexpr int config_for_rows(int rows) {
  for (int i = 0; i < kConfigCount; ++i)
    if (rows <= kTokenTiles[i] * kTokensPerTile) return i;
  return kConfigCount - 1;
}

struct StreamParams {
  const std::uint16_t* a;  // bf16 [m, k]
  const std::uint16_t* w;  // bf16 [n, k]
  std::uint16_t* out;      // bf16 [m, n]
  std::int32_t m, n, k;
};

// Launches configuration `config` over ceil(n / kRowsPerCta) CTAs; returns the launch's error.
cudaError_t launch_stream(int config, const StreamParams& params, cudaStream_t stream);

}  // namespace metrale::cuda::sm90::stream
