// The stream family's bf16 kernel: a dense GEMM of at most kMaxRows activation rows, the weights
// loaded straight into mma.sync's B fragments (stream_params.hpp).
//
// The fragments ask for K in a fixed pattern, but a dot product does not care in which order its
// K arrives, so long as both operands agree: lane (g, c) loads 16 bytes, K values 8c .. 8c + 7
// of a 32-value group, of weight row g and of the activation rows it feeds, and hands them to
// two mmas (values 0-3, then 4-7) as the K slots {2c, 2c + 1, 2c + 8, 2c + 9} that every lane
// with that c holds in both operands. One 16-byte load a lane and group brings 8 weight rows x 32
// K, with no shuffle, no shared memory and no pipeline to fill before the first product.
#include <cstddef>
#include <cstdint>

#include "cuda/sm90/stream/stream_mma.cuh"
#include "format/bf16.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

// Activations are read by every CTA: through L1.
__device__ __forceinline__ uint4 load_act(const std::uint16_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// kTokens activation rows in m16 tiles; at 8 the tile's upper half (rows g + 8) is zero and
// never loaded.
template <int kTokens>
struct Bf16Shape {
  static constexpr int kTiles = (kTokens + 15) / 16;
  static constexpr int kHalves = kTokens >= 16 ? 2 : 1;
  // Groups a warp loads before its first mma: enough 16-byte loads in flight to cover HBM's
  // latency (8 a lane with one tile), within the registers (each tile half adds one a group).
  static constexpr int kBatch = kTiles * kHalves <= 2 ? 8 : kTiles == 2 ? 4 : 2;
};

template <int kTokens>
__global__ void __launch_bounds__(kThreads) stream_kernel(const __grid_constant__ StreamParams p) {
  using S = Bf16Shape<kTokens>;
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const WarpRange range = warp_range((p.k + kBf16GroupK - 1) / kBf16GroupK);

  const int row = static_cast<int>(blockIdx.x) * kBf16RowsPerCta + g;
  const bool row_ok = row < p.n;
  const std::uint16_t* w = p.w + static_cast<std::size_t>(row_ok ? row : 0) * p.k + 8 * c;
  // Activation rows of the lane's A fragments: token 16 t + g (h = 0) and 16 t + 8 + g (h = 1).
  const std::uint16_t* a[S::kTiles][S::kHalves];
  bool a_ok[S::kTiles][S::kHalves];
#pragma unroll
  for (int t = 0; t < S::kTiles; ++t)
#pragma unroll
    for (int h = 0; h < S::kHalves; ++h) {
      const int token = 16 * t + 8 * h + g;
      a_ok[t][h] = token < p.m;
      a[t][h] = p.a + static_cast<std::size_t>(a_ok[t][h] ? token : 0) * p.k + 8 * c;
    }

  float acc[S::kTiles][4] = {};
  for (int j0 = range.first; j0 < range.last; j0 += S::kBatch) {
    uint4 wv[S::kBatch], av[S::kBatch][S::kTiles][2];
#pragma unroll
    for (int b = 0; b < S::kBatch; ++b) {
      const int k = (j0 + b) * kBf16GroupK;
      const bool in = j0 + b < range.last && k + 8 * c < p.k;  // K % 8 == 0: all 8 or none
      wv[b] = in && row_ok ? load_weights_16(w + k) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int t = 0; t < S::kTiles; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[b][t][h] = h < S::kHalves && in && a_ok[t][h % S::kHalves]
                            ? load_act(a[t][h % S::kHalves] + k)
                            : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < S::kBatch; ++b) {
      if (j0 + b >= range.last) break;  // warp-uniform: no products past the warp's range
#pragma unroll
      for (int t = 0; t < S::kTiles; ++t) {
        const uint4 lo = av[b][t][0], hi = av[b][t][1];
        mma_16816(acc[t], lo.x, hi.x, lo.y, hi.y, wv[b].x, wv[b].y);  // K values 0-3 of the 8
        mma_16816(acc[t], lo.z, hi.z, lo.w, hi.w, wv[b].z, wv[b].w);  // 4-7
      }
    }
  }

  // Accumulator q of lane l: token 16 t + l / 4 + 8 (q >= 2), weight row 2 (l % 4) + q % 2.
  fold_warps<S::kTiles>(acc, [&](int t, int q, int l, float sum) {
    const int token = 16 * t + (q >= 2 ? 8 : 0) + l / 4;
    const int channel = static_cast<int>(blockIdx.x) * kBf16RowsPerCta + 2 * (l % 4) + q % 2;
    if (token < p.m && channel < p.n)
      p.out[static_cast<std::size_t>(token) * p.n + channel] = format::float_to_bf16(sum);
  });
}

template <int kTokens>
cudaError_t launch_tokens(const StreamParams& params, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>((params.n + kBf16RowsPerCta - 1) / kBf16RowsPerCta);
  stream_kernel<kTokens><<<ctas, kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_stream(int config, const StreamParams& params, cudaStream_t stream) {
  switch (kConfigTokens[config]) {
    case 8: return launch_tokens<8>(params, stream);
    case 16: return launch_tokens<16>(params, stream);
    case 32: return launch_tokens<32>(params, stream);
    case 64: return launch_tokens<64>(params, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace metrale::cuda::sm90::stream
