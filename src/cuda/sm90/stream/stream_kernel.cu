// The stream family's bf16 kernel: a dense GEMM of at most kMaxRows activation rows, the weights
// loaded straight into mma.sync's B fragments (stream_params.hpp).
//
// The fragments ask for K in a fixed pattern, but a dot product does not care in which order its
// K arrives, so long as both operands agree: lane (g, c) loads 16 bytes, K values 8c .. 8c + 7
// of a 32-value group, of weight row g (of each of the CTA's n8 tiles) and of the activation rows
// it feeds, and hands them to two mmas (values 0-3, then 4-7) as the K slots
// {2c, 2c + 1, 2c + 8, 2c + 9} that every lane with that c holds in both operands. One 16-byte
// load a lane and group brings 8 weight rows x 32 K, with no shuffle, no shared memory and no
// pipeline to fill before the first product.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda/sm90/stream/stream_mma.cuh"
#include "format/bf16.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

// Activations are read by every CTA: through L1.
__device__ __forceinline__ uint4 load_act(const std::uint16_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// kTokens activation rows in m16 tiles (at 8 the tile's upper half, rows g + 8, is zero and
// never loaded) against kRows weight rows in n8 tiles.
template <int kTokens, int kRows>
struct Bf16Shape {
  static constexpr int kTiles = (kTokens + 15) / 16;
  static constexpr int kHalves = kTokens >= 16 ? 2 : 1;
  static constexpr int kRowTiles = kRows / 8;
  // Groups a warp loads before its first mma: enough 16-byte loads in flight to cover HBM's
  // latency (8 a lane with one tile of each), within the registers (each activation tile half
  // and each weight row tile adds one a group).
  static constexpr int kLoadsPerGroup = kTiles * kHalves + kRowTiles;
  static constexpr int kBatch = kLoadsPerGroup <= 3    ? 8
                                : kLoadsPerGroup <= 5  ? 4
                                : kLoadsPerGroup <= 10 ? 2
                                                       : 1;
};

template <int kTokens, int kRows>
__global__ void __launch_bounds__(kThreads) stream_kernel(const __grid_constant__ StreamParams p) {
  using S = Bf16Shape<kTokens, kRows>;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const Team cta = warp_team(kWarps);  // the CTA's warps share its weight rows' K
  const WarpRange range = warp_range((p.k + kBf16GroupK - 1) / kBf16GroupK, cta);

  // Weight row g of each n8 tile r: CTA row 8 r + g.
  const std::uint16_t* w[S::kRowTiles];
  bool w_ok[S::kRowTiles];
#pragma unroll
  for (int r = 0; r < S::kRowTiles; ++r) {
    const int row = static_cast<int>(blockIdx.x) * kRows + 8 * r + g;
    w_ok[r] = row < p.n;
    w[r] = p.w + static_cast<std::size_t>(w_ok[r] ? row : 0) * p.k + 8 * c;
  }
  // Activation rows of the lane's A fragments: token 16 t + g (h = 0) and 16 t + 8 + g (h = 1,
  // none at 8 tokens).
  const std::uint16_t* a[S::kTiles][2];
  bool a_ok[S::kTiles][2];
#pragma unroll
  for (int t = 0; t < S::kTiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int token = 16 * t + 8 * h + g;
      a_ok[t][h] = h < S::kHalves && token < p.m;
      a[t][h] = p.a + static_cast<std::size_t>(a_ok[t][h] ? token : 0) * p.k + 8 * c;
    }

  float acc[S::kRowTiles * S::kTiles][4] = {};
  for (int j0 = range.first; j0 < range.last; j0 += S::kBatch) {
    uint4 wv[S::kBatch][S::kRowTiles], av[S::kBatch][S::kTiles][2];
#pragma unroll
    for (int b = 0; b < S::kBatch; ++b) {
      const int k = (j0 + b) * kBf16GroupK;
      const bool in = j0 + b < range.last && k + 8 * c < p.k;  // K % 8 == 0: all 8 or none
#pragma unroll
      for (int r = 0; r < S::kRowTiles; ++r)
        wv[b][r] = in && w_ok[r] ? load_weights_16(w[r] + k) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int t = 0; t < S::kTiles; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[b][t][h] = in && a_ok[t][h] ? load_act(a[t][h] + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < S::kBatch; ++b) {
      if (j0 + b >= range.last) break;  // warp-uniform: no products past the warp's range
#pragma unroll
      for (int r = 0; r < S::kRowTiles; ++r)
#pragma unroll
        for (int t = 0; t < S::kTiles; ++t) {
          const uint4 lo = av[b][t][0], hi = av[b][t][1], wr = wv[b][r];
          float(&d)[4] = acc[r * S::kTiles + t];
          mma_16816(d, lo.x, hi.x, lo.y, hi.y, wr.x, wr.y);  // K values 0-3 of the 8
          mma_16816(d, lo.z, hi.z, lo.w, hi.w, wr.z, wr.w);  // 4-7
        }
    }
  }

  // Accumulator q of lane l in tile (r, t): token 16 t + l / 4 + 8 (q >= 2), weight row
  // 8 r + 2 (l % 4) + q % 2 of the CTA's.
  fold_team<S::kRowTiles * S::kTiles>(acc, cta, [&](int tile, int q, int l, float sum) {
    const int r = tile / S::kTiles, t = tile % S::kTiles;
    const int token = 16 * t + (q >= 2 ? 8 : 0) + l / 4;
    const int channel = static_cast<int>(blockIdx.x) * kRows + 8 * r + 2 * (l % 4) + q % 2;
    if (token < p.m && channel < p.n)
      p.out[static_cast<std::size_t>(token) * p.n + channel] = format::float_to_bf16(sum);
  });
}

template <int kTokens, int kRows>
cudaError_t launch_shape(const StreamParams& params, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>((params.n + kRows - 1) / kRows);
  stream_kernel<kTokens, kRows><<<ctas, kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

// The instantiation of configuration `i` of kConfigs.
template <int i>
cudaError_t launch_config(const StreamParams& params, cudaStream_t stream) {
  return launch_shape<kConfigs[i].tokens, kConfigs[i].bf16_rows>(params, stream);
}

template <int... kIndex>
cudaError_t launch_indexed(int config, const StreamParams& params, cudaStream_t stream,
                           std::integer_sequence<int, kIndex...>) {
  cudaError_t result = cudaErrorInvalidValue;
  ((config == kIndex ? (result = launch_config<kIndex>(params, stream), 0) : 0), ...);
  return result;
}

}  // namespace

cudaError_t launch_stream(int config, const StreamParams& params, cudaStream_t stream) {
  return launch_indexed(config, params, stream, std::make_integer_sequence<int, kConfigCount>{});
}

}  // namespace metrale::cuda::sm90::stream
