// The stream family's NVFP4 kernel: the grouped (or single) GEMM of experts with few rows each,
// the weights prepacked in the fragment order (stream_params.hpp).
//
// A CTA owns 16 weight rows of one expert and projection over all of K; lane (g, c) of a warp
// loads, for each 64-value group of its warp's K range, the 8 bytes of rows g and g + 8 that the
// fragment order puts where its mma A fragments need them, and the block scales of block c of
// both rows, which the quad shares (the decode both sm90 families run: fragment_order_frags,
// exact). The expert's rows are the n8 operand, kTokens at a time: lane (g, c) loads its B
// fragments, the values {2c, 2c + 1} and {2c + 8, 2c + 9} of each k16 step, from the expert's row
// 8 j + g (gathered through token_ids, or act(gate, up) of the gated input), in natural K order as
// the fragment order keeps it.
#include <cstddef>
#include <cstdint>

#include "cuda/silu_table.cuh"
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

// The CTA's expert: its entry for the CTA's projection and its group rows.
struct ExpertRows {
  ExpertEntry entry;
  int row_begin, rows;
};

// Host offsets: listed expert `slot`.
__device__ __forceinline__ bool locate(const StreamExperts& x, const Nvfp4StreamParams&, int slot,
                                       int proj, ExpertRows& found) {
  found = {x.entries[proj][slot], x.row_begin[slot], x.rows[slot]};
  return true;
}

// Device offsets: the slot-th expert with rows, found by one warp's ballots over the offsets
// (staged in shared memory by every thread: one load latency, not one per 32 experts); false
// when fewer experts have rows (the grid is sized for the most there can be). Rows past m_total
// are dropped.
__device__ __forceinline__ bool locate(const StreamTable& x, const Nvfp4StreamParams& p, int slot,
                                       int proj, ExpertRows& found) {
  __shared__ std::int32_t offsets[kWideTableChunk + 1];
  __shared__ int expert;
  const int experts = x.chunk.count;
  for (int i = threadIdx.x; i <= experts; i += kThreads)
    offsets[i] = min(max(x.offsets[i], 0), p.m_total);
  if (threadIdx.x == 0) expert = -1;
  __syncthreads();
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    int before = 0;  // experts with rows in the words already passed
    for (int base = 0; base < experts; base += 32) {
      const int e = base + lane;
      const bool has_rows = e < experts && offsets[e + 1] > offsets[e];
      const unsigned ballot = __ballot_sync(0xffffffffu, has_rows);
      if (has_rows && before + __popc(ballot & ((1u << lane) - 1)) == slot) expert = e;
      before += __popc(ballot);
      if (before > slot) break;
    }
  }
  __syncthreads();
  if (expert < 0) return false;
  found = {x.chunk.entries[proj][expert], offsets[expert], offsets[expert + 1] - offsets[expert]};
  return true;
}

// Where a row's block scale of block `c` of group 0 sits, and how far one group moves it (the
// same for every row: one SFB tile, or four rows of [K/16, N]).
struct ScaleWalk {
  std::size_t at;
  int step;
};
__device__ __forceinline__ ScaleWalk scale_walk(const Nvfp4StreamParams& p, int row, int c) {
  if (p.scale_sfb)
    return {format::sfb_offset(row, c, p.k), static_cast<int>(format::kSfbTileBytes)};
  return {format::k16_by_n_offset(row, c, p.n), 4 * p.n};
}

// A B-fragment register: the input's values k and k + 1 of a row (`at` points at k), gated or
// copied.
template <bool kGlu>
__device__ __forceinline__ std::uint32_t input_pair(const Nvfp4StreamParams& p,
                                                    const std::uint16_t* at, std::size_t up_at) {
  const std::uint32_t a = __ldg(reinterpret_cast<const unsigned int*>(at));
  if constexpr (!kGlu) {
    return a;
  } else {
    const std::uint32_t u = __ldg(reinterpret_cast<const unsigned int*>(p.glu.up + up_at));
    return glu_value(p.glu, a & 0xFFFFu, u & 0xFFFFu) |
           static_cast<std::uint32_t>(glu_value(p.glu, a >> 16, u >> 16)) << 16;
  }
}

template <int kTokens, bool kGlu, class Work>
__global__ void __launch_bounds__(kThreads, 2)
    stream_nvfp4_kernel(const __grid_constant__ Nvfp4StreamParams p,
                        const __grid_constant__ Work work) {
  constexpr int kTiles = kTokens / 8;                            // n8 tiles of the expert's rows
  constexpr int kBatch = kTiles == 1 ? 3 : kTiles == 2 ? 2 : 1;  // groups a batch
  const int lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  // The CTA's expert slot, projection and weight rows [n0, n0 + 16).
  const int per_slot = p.proj_count * p.row_blocks;
  const int slot = static_cast<int>(blockIdx.x) / per_slot;
  const int proj = (static_cast<int>(blockIdx.x) - slot * per_slot) / p.row_blocks;
  const int n0 =
      (static_cast<int>(blockIdx.x) - slot * per_slot - proj * p.row_blocks) * kNvfp4RowsPerCta;
  ExpertRows x;
  if (!locate(work, p, slot, proj, x)) return;  // CTA-uniform
  const WarpRange range = warp_range(p.k / kNvfp4GroupK);

  // Weight rows r0 = n0 + g and r1 = r0 + 8: 8 bytes a group each, and block c's scales.
  const int r0 = n0 + g, r1 = r0 + 8;
  const bool ok0 = r0 < p.n, ok1 = r1 < p.n;
  const std::size_t row_bytes = static_cast<std::size_t>(p.k) / 2;
  const std::size_t first_code_byte = static_cast<std::size_t>(range.first) * kGroupBytes + 8 * c;
  const auto* weights = static_cast<const std::uint8_t*>(x.entry.weight);
  const std::uint8_t* const w0_first = weights + (ok0 ? r0 : 0) * row_bytes + first_code_byte;
  const std::uint8_t* const w1_first = weights + (ok1 ? r1 : 0) * row_bytes + first_code_byte;
  const ScaleWalk walk0 = scale_walk(p, ok0 ? r0 : 0, c), walk1 = scale_walk(p, ok1 ? r1 : 0, c);
  const int scale_step = walk0.step;
  const std::size_t first_scale = static_cast<std::size_t>(range.first) * scale_step;
  const std::uint8_t* const sc0_first = x.entry.scale + walk0.at + first_scale;
  const std::uint8_t* const sc1_first = x.entry.scale + walk1.at + first_scale;
  const float factor = x.entry.scale_2 * kEpilogueFactor;
  std::uint16_t* const out = p.out[proj];

  // The expert's rows, kTokens at a time (an expert with more rows than the width streams its
  // weights again for each further tile: the dispatcher gives such experts to other families).
  for (int t0 = 0; t0 < x.rows; t0 += kTokens) {
    // The input rows of the lane's B fragments in tile j: the expert's row t0 + 8 j + g.
    const std::uint16_t* act[kTiles];
    std::size_t up_at[kTiles];
    bool act_ok[kTiles];
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      const int row = x.row_begin + t0 + 8 * j + g;  // group row
      int source = row;
      bool ok = t0 + 8 * j + g < x.rows;
      if (ok && p.token_ids != nullptr) source = p.token_ids[row];
      ok = ok && source >= 0 && (p.a_rows == 0 || source < p.a_rows);
      act_ok[j] = ok;
      const std::size_t first_value = static_cast<std::size_t>(range.first) * kNvfp4GroupK + 2 * c;
      act[j] = p.a + static_cast<std::size_t>(ok ? source : 0) * p.k + first_value;
      up_at[j] = static_cast<std::size_t>(ok ? row : 0) * p.k + first_value;
    }
    const std::uint8_t *w0 = w0_first, *w1 = w1_first, *sc0 = sc0_first, *sc1 = sc1_first;

    // A batch's weights (codes and block scales) are loaded a batch ahead of its products, so that
    // a warp's next weights are in flight while it decodes; its activations (L2 hits, mostly)
    // at the start of its own turn.
    struct Weights {
      uint2 codes0[kBatch], codes1[kBatch];
      std::uint32_t scales[kBatch];
    };
    auto load_weights = [&](int g0, Weights& into) {
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const bool in = g0 + i < range.last;
        into.codes0[i] = in && ok0 ? load_weights_8(w0 + i * kGroupBytes) : make_uint2(0, 0);
        into.codes1[i] = in && ok1 ? load_weights_8(w1 + i * kGroupBytes) : make_uint2(0, 0);
        const std::uint32_t scale0 = in && ok0 ? __ldg(sc0 + i * scale_step) : 0;
        const std::uint32_t scale1 = in && ok1 ? __ldg(sc1 + i * scale_step) : 0;
        into.scales[i] = scale0 | scale1 << 8;
      }
      w0 += kBatch * kGroupBytes;
      w1 += kBatch * kGroupBytes;
      sc0 += kBatch * scale_step;
      sc1 += kBatch * scale_step;
    };

    float acc[kTiles][4] = {};
    Weights now;
    load_weights(range.first, now);
    for (int g0 = range.first; g0 < range.last; g0 += kBatch) {
      Weights next;
      load_weights(g0 + kBatch, next);  // nothing past the warp's range
      std::uint32_t b[kBatch][kTiles][8];
#pragma unroll
      for (int i = 0; i < kBatch; ++i)
#pragma unroll
        for (int j = 0; j < kTiles; ++j)
#pragma unroll
          for (int v = 0; v < 8; ++v) {  // step v / 2's values {2c, 2c + 1} + 8 (v % 2)
            const int at = i * kNvfp4GroupK + 8 * v;
            b[i][j][v] = g0 + i < range.last && act_ok[j]
                             ? input_pair<kGlu>(p, act[j] + at, up_at[j] + at)
                             : 0;
          }
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        act[j] += kBatch * kNvfp4GroupK;
        up_at[j] += kBatch * kNvfp4GroupK;
      }
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (g0 + i >= range.last) break;  // warp-uniform (the quad's shuffles need every lane)
        std::uint32_t step_scales[4], frag[4][4];
        quad_shared(e4m3x2_to_scaled_bf16x2(now.scales[i]), step_scales);
        fragment_order_frags(now.codes0[i], now.codes1[i], step_scales, frag);
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
          for (int j = 0; j < kTiles; ++j)
            mma_16816(acc[j], frag[s][0], frag[s][1], frag[s][2], frag[s][3], b[i][j][2 * s],
                      b[i][j][2 * s + 1]);
      }
      now = next;
    }

    // Accumulator q of lane l in tile j: weight row n0 + l / 4 + 8 (q >= 2), the expert's row
    // t0 + 8 j + 2 (l % 4) + q % 2.
    fold_warps<kTiles>(acc, [&](int j, int q, int l, float sum) {
      const int n = n0 + l / 4 + (q >= 2 ? 8 : 0);
      const int t = t0 + 8 * j + 2 * (l % 4) + q % 2;
      if (n < p.n && t < x.rows)
        out[static_cast<std::size_t>(x.row_begin + t) * p.n + n] =
            format::float_to_bf16(__fmul_rn(sum, factor));
    });
    __syncthreads();  // the fold's shared sums are read before the next tile writes them
  }
}

template <int kTokens, class Work>
cudaError_t launch_tokens(const Nvfp4StreamParams& params, const Work& work, int ctas,
                          cudaStream_t stream) {
  if (ctas <= 0) return cudaSuccess;
  if (params.glu.up != nullptr) {
    stream_nvfp4_kernel<kTokens, true, Work><<<ctas, kThreads, 0, stream>>>(params, work);
  } else {
    stream_nvfp4_kernel<kTokens, false, Work><<<ctas, kThreads, 0, stream>>>(params, work);
  }
  return cudaGetLastError();
}

template <class Work>
cudaError_t launch_config(int config, const Nvfp4StreamParams& params, const Work& work, int ctas,
                          cudaStream_t stream) {
  switch (kConfigs[config].tokens) {
    case 8: return launch_tokens<8>(params, work, ctas, stream);
    case 16: return launch_tokens<16>(params, work, ctas, stream);
    case 32: return launch_tokens<32>(params, work, ctas, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamExperts& experts, int ctas, cudaStream_t stream) {
  return launch_config(config, params, experts, ctas, stream);
}

cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamTable& table, int ctas, cudaStream_t stream) {
  return launch_config(config, params, table, ctas, stream);
}

}  // namespace metrale::cuda::sm90::stream
