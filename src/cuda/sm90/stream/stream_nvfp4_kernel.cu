// The stream family's NVFP4 kernel: the grouped (or single) GEMM of experts with few rows each,
// on host offsets, the weights prepacked in the fragment order (stream_params.hpp).
//
// A CTA owns 16 weight rows of one listed expert and projection over all of K; lane (g, c) of a
// warp loads, for each 64-value group of its warp's K range, the 8 bytes of rows g and g + 8 that
// the fragment order puts where its mma A fragments need them, and the block scales of block c
// of both rows, which the quad shares (the decode both sm90 families run: fragment_order_frags,
// exact). The expert's rows are the n8 operand: lane (g, c) loads its B fragments, the values
// {2c, 2c + 1} and {2c + 8, 2c + 9} of each k16 step, from activation row 8 j + g of the expert
// (gathered through token_ids), in natural K order as the fragment order keeps it.
#include <cstddef>
#include <cstdint>

#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/stream/stream_mma.cuh"
#include "format/bf16.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

using decode::e4m3x2_to_scaled_bf16x2;
using decode::fragment_order_frags;
using decode::kEpilogueFactor;
using decode::quad_shared;

constexpr int kGroupBytes = kNvfp4GroupK / 2;  // a row's codes of one group

__device__ __forceinline__ std::uint32_t load_act_pair(const std::uint16_t* p) {
  return __ldg(reinterpret_cast<const unsigned int*>(p));
}

// The CTA's work: listed expert `slot`, projection `proj`, weight rows [n0, n0 + 16).
struct Nvfp4Unit {
  int slot, proj, n0;
};
__device__ __forceinline__ Nvfp4Unit nvfp4_unit(const Nvfp4StreamParams& p) {
  const int per_expert = p.proj_count * p.row_blocks;
  const int slot = static_cast<int>(blockIdx.x) / per_expert;
  const int rest = static_cast<int>(blockIdx.x) - slot * per_expert;
  const int proj = rest / p.row_blocks;
  return {slot, proj, (rest - proj * p.row_blocks) * kNvfp4RowsPerCta};
}

// Where a row's block scale of block `c` of group 0 sits, and how far one group moves it.
struct ScaleWalk {
  std::size_t at, step;
};
__device__ __forceinline__ ScaleWalk scale_walk(const Nvfp4StreamParams& p, int row, int c) {
  if (p.scale_sfb) return {format::sfb_offset(row, c, p.k), format::kSfbTileBytes};
  return {format::k16_by_n_offset(row, c, p.n), 4 * static_cast<std::size_t>(p.n)};
}

template <int kTokens>
__global__ void __launch_bounds__(kThreads, 2)
    stream_nvfp4_kernel(const __grid_constant__ Nvfp4StreamParams p,
                        const __grid_constant__ StreamExperts x) {
  constexpr int kTiles = kTokens / 8;                            // n8 tiles of the expert's rows
  constexpr int kBatch = kTiles == 1 ? 4 : kTiles == 2 ? 2 : 1;  // groups loaded before the mmas
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const Nvfp4Unit u = nvfp4_unit(p);
  const ExpertEntry entry = x.entries[u.proj][u.slot];
  const int row_begin = x.row_begin[u.slot], rows = x.rows[u.slot];
  const WarpRange range = warp_range(p.k / kNvfp4GroupK);

  // Weight rows r0 = n0 + g and r1 = r0 + 8: 8 bytes a group each, and block c's scales. The
  // pointers start at the warp's first group and step a batch at a time, so that every load of a
  // batch is a constant offset from them.
  const int r0 = u.n0 + g, r1 = r0 + 8;
  const bool ok0 = r0 < p.n, ok1 = r1 < p.n;
  const std::size_t row_bytes = static_cast<std::size_t>(p.k) / 2;
  const std::size_t first_code_byte = static_cast<std::size_t>(range.first) * kGroupBytes + 8 * c;
  const auto* weights = static_cast<const std::uint8_t*>(entry.weight);
  const std::uint8_t* w0 = weights + (ok0 ? r0 : 0) * row_bytes + first_code_byte;
  const std::uint8_t* w1 = weights + (ok1 ? r1 : 0) * row_bytes + first_code_byte;
  const ScaleWalk walk0 = scale_walk(p, ok0 ? r0 : 0, c), walk1 = scale_walk(p, ok1 ? r1 : 0, c);
  const int scale_step = static_cast<int>(walk0.step);
  const std::uint8_t* sc0 = entry.scale + walk0.at + range.first * walk0.step;
  const std::uint8_t* sc1 = entry.scale + walk1.at + range.first * walk1.step;
  // Activation row of the lane's B fragments in tile j: the expert's row 8 j + g.
  const std::uint16_t* act[kTiles];
  bool act_ok[kTiles];
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    const int t = 8 * j + g;
    int source = row_begin + t;
    bool ok = t < rows;
    if (ok && p.token_ids != nullptr) source = p.token_ids[source];
    ok = ok && source >= 0 && (p.a_rows == 0 || source < p.a_rows);
    act_ok[j] = ok;
    act[j] =
        p.a + static_cast<std::size_t>(ok ? source : 0) * p.k + range.first * kNvfp4GroupK + 2 * c;
  }

  float acc[kTiles][4] = {};
  for (int g0 = range.first; g0 < range.last; g0 += kBatch) {
    uint2 codes0[kBatch], codes1[kBatch];
    std::uint32_t scales[kBatch], b[kBatch][kTiles][8];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const bool in = g0 + i < range.last;
      codes0[i] = in && ok0 ? load_weights_8(w0 + i * kGroupBytes) : make_uint2(0, 0);
      codes1[i] = in && ok1 ? load_weights_8(w1 + i * kGroupBytes) : make_uint2(0, 0);
      const std::uint32_t scale0 = in && ok0 ? __ldg(sc0 + i * scale_step) : 0;
      const std::uint32_t scale1 = in && ok1 ? __ldg(sc1 + i * scale_step) : 0;
      scales[i] = scale0 | scale1 << 8;
#pragma unroll
      for (int j = 0; j < kTiles; ++j)
#pragma unroll
        for (int v = 0; v < 8; ++v)  // step v / 2's values {2c, 2c + 1} + 8 (v % 2)
          b[i][j][v] = in && act_ok[j] ? load_act_pair(act[j] + i * kNvfp4GroupK + 8 * v) : 0;
    }
    w0 += kBatch * kGroupBytes;
    w1 += kBatch * kGroupBytes;
    sc0 += kBatch * scale_step;
    sc1 += kBatch * scale_step;
#pragma unroll
    for (int j = 0; j < kTiles; ++j) act[j] += kBatch * kNvfp4GroupK;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (g0 + i >= range.last) break;  // warp-uniform (the quad's shuffles need every lane)
      std::uint32_t step_scales[4], frag[4][4];
      quad_shared(e4m3x2_to_scaled_bf16x2(scales[i]), step_scales);
      fragment_order_frags(codes0[i], codes1[i], step_scales, frag);
#pragma unroll
      for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int j = 0; j < kTiles; ++j)
          mma_16816(acc[j], frag[s][0], frag[s][1], frag[s][2], frag[s][3], b[i][j][2 * s],
                    b[i][j][2 * s + 1]);
    }
  }

  // Accumulator q of lane l in tile j: weight row n0 + l / 4 + 8 (q >= 2), the expert's row
  // 8 j + 2 (l % 4) + q % 2.
  const float factor = entry.scale_2 * kEpilogueFactor;
  std::uint16_t* out = p.out[u.proj];
  fold_warps<kTiles>(acc, [&](int j, int q, int l, float sum) {
    const int n = u.n0 + l / 4 + (q >= 2 ? 8 : 0);
    const int t = 8 * j + 2 * (l % 4) + q % 2;
    if (n < p.n && t < rows)
      out[static_cast<std::size_t>(row_begin + t) * p.n + n] =
          format::float_to_bf16(__fmul_rn(sum, factor));
  });
}

template <int kTokens>
cudaError_t launch_tokens(const Nvfp4StreamParams& params, const StreamExperts& experts,
                          cudaStream_t stream) {
  const unsigned ctas =
      static_cast<unsigned>(experts.count * params.proj_count * params.row_blocks);
  stream_nvfp4_kernel<kTokens><<<ctas, kThreads, 0, stream>>>(params, experts);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamExperts& experts, cudaStream_t stream) {
  switch (kConfigTokens[config]) {
    case 8: return launch_tokens<8>(params, experts, stream);
    case 16: return launch_tokens<16>(params, experts, stream);
    case 32: return launch_tokens<32>(params, experts, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace metrale::cuda::sm90::stream
