// The stream family's kernel: a dense bf16 GEMM of at most kMaxRows activation rows on the
// tensor cores' mma.sync, with weights loaded straight into the B fragments (stream_params.hpp).
//
// The fragments ask for K in a fixed pattern, but a dot product does not care in which order its
// K arrives, so long as both operands agree: lane (g, c) of a warp loads 16 bytes, K values
// 8c .. 8c + 7 of a 32-value group, of weight row g and of the activation rows it feeds, and
// hands them to two mmas (values 0-3, then 4-7) as the K slots {2c, 2c + 1, 2c + 8, 2c + 9}
// that every lane with that c holds in both operands. One 16-byte load a lane and group brings
// 8 weight rows x 32 K (512 contiguous bytes a row quad at a time), with no shuffles, no
// shared memory and no pipeline to fill before the first product.
#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "cuda/sm90/stream/stream_params.hpp"
#include "format/bf16.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

// Weights are read once: keep them out of L1 and let L2 fetch a row's next groups with the
// first (a lane quad reads 64 bytes of a row a load; the warp's next loads read the rest).
__device__ __forceinline__ uint4 load_weights(const std::uint16_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// Activations are read by every CTA: through L1.
__device__ __forceinline__ uint4 load_act(const std::uint16_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// d += A (16 tokens x 16 K, bf16) x B (16 K x 8 weight rows, bf16), fp32 sums.
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                          uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Groups a warp loads before its first mma: enough 16-byte loads in flight to cover HBM's
// latency (8 a lane on one token tile), within the registers (each tile adds two a group).
template <int kTiles>
constexpr int kBatch = kTiles == 1   ? 8
                       : kTiles == 2 ? 4
                                     : 2;

template <int kTiles>
__global__ void __launch_bounds__(kThreads) stream_kernel(const __grid_constant__ StreamParams p) {
  constexpr int batch = kBatch<kTiles>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  // The warp's contiguous range of K groups.
  const int groups = (p.k + kGroupK - 1) / kGroupK;
  const int per_warp = (groups + kWarps - 1) / kWarps;
  const int first = min(warp * per_warp, groups), last = min(first + per_warp, groups);

  const int row = static_cast<int>(blockIdx.x) * kRowsPerCta + g;
  const bool row_ok = row < p.n;
  const std::uint16_t* w = p.w + static_cast<std::size_t>(row_ok ? row : 0) * p.k + 8 * c;
  // Activation rows of the lane's A fragments: token 16 t + g (h = 0) and 16 t + 8 + g (h = 1).
  const std::uint16_t* a[kTiles][2];
  bool a_ok[kTiles][2];
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int token = kTokensPerTile * t + 8 * h + g;
      a_ok[t][h] = token < p.m;
      a[t][h] = p.a + static_cast<std::size_t>(a_ok[t][h] ? token : 0) * p.k + 8 * c;
    }

  float acc[kTiles][4] = {};
  for (int j0 = first; j0 < last; j0 += batch) {
    uint4 wv[batch], av[batch][kTiles][2];
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      const int k = (j0 + b) * kGroupK;
      const bool in = j0 + b < last && k + 8 * c < p.k;  // K % 8 == 0: all 8 values or none
      wv[b] = in && row_ok ? load_weights(w + k) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          av[b][t][h] = in && a_ok[t][h] ? load_act(a[t][h] + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      if (j0 + b >= last) break;  // warp-uniform: no products past the warp's range
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {
        const uint4 lo = av[b][t][0], hi = av[b][t][1];
        mma_16816(acc[t], lo.x, hi.x, lo.y, hi.y, wv[b].x, wv[b].y);  // K values 0-3 of the 8
        mma_16816(acc[t], lo.z, hi.z, lo.w, hi.w, wv[b].z, wv[b].w);  // 4-7
      }
    }
  }

  // The warps' sums added in warp order. Accumulator q of lane l holds token
  // 16 t + l / 4 + 8 (q >= 2), weight row 2 (l % 4) + q % 2 of the CTA's kRowsPerCta.
  __shared__ float sums[kWarps][kTiles][4][32];
#pragma unroll
  for (int t = 0; t < kTiles; ++t)
#pragma unroll
    for (int q = 0; q < 4; ++q) sums[warp][t][q][lane] = acc[t][q];
  __syncthreads();
  for (int i = threadIdx.x; i < kTiles * 4 * 32; i += kThreads) {
    const int t = i / 128, q = i / 32 % 4, l = i % 32;
    float sum = sums[0][t][q][l];
#pragma unroll
    for (int v = 1; v < kWarps; ++v) sum = __fadd_rn(sum, sums[v][t][q][l]);
    const int token = kTokensPerTile * t + (q >= 2 ? 8 : 0) + l / 4;
    const int channel = static_cast<int>(blockIdx.x) * kRowsPerCta + 2 * (l % 4) + q % 2;
    if (token < p.m && channel < p.n)
      p.out[static_cast<std::size_t>(token) * p.n + channel] = format::float_to_bf16(sum);
  }
}

template <int kTiles>
cudaError_t launch_tiles(const StreamParams& params, cudaStream_t stream) {
  const unsigned ctas = static_cast<unsigned>((params.n + kRowsPerCta - 1) / kRowsPerCta);
  stream_kernel<kTiles><<<ctas, kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_stream(int config, const StreamParams& params, cudaStream_t stream) {
  switch (kTokenTiles[config]) {
    case 1: return launch_tiles<1>(params, stream);
    case 2: return launch_tiles<2>(params, stream);
    case 4: return launch_tiles<4>(params, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace metrale::cuda::sm90::stream
