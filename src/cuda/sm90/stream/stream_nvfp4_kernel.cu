// The stream family's NVFP4 kernel: the grouped (or single) GEMM of experts with few rows each,
// the weights prepacked in the fragment order (stream_params.hpp).
//
// Work items are (expert slot, 16 weight rows, projection). A CTA's 8 warps form teams of 1, 2, 4
// or 8 (team_warps, stream_params.hpp); a persistent grid's teams take the items in turn (team t of
// CTA b: item b teams + t, then a grid's worth of teams on; on a launch that writes the gated
// output, the pair b teams + t, a row block's gate and up streamed together, whose fold hands both
// sums to the activation), and a team's warps cut K into contiguous ranges, a lone warp's sums
// stored from its registers, a team's folded through shared memory on a named barrier of its own. A
// warp's weights stream through a ring of shared-memory stages of its own, one 64-value group of K
// a stage (the 16 rows' 32 code bytes and 4 block scales each), filled by cp.async kStages groups
// ahead of its products and across its team's items and token tiles, so that HBM stays busy through
// each item's fold and the next item's first bytes are in flight while the last ones are
// multiplied. Lane (g, c) reads from a stage the 8 bytes of rows g and g + 8 that the fragment
// order puts where its mma A fragments need them, and the block scales of block c of both rows,
// which the quad shares (the decode both sm90 families run: fragment_order_frags, exact). The
// expert's rows are the n8 operand, kTokens at a time: lane (g, c) loads its B fragments, the
// values {2c, 2c + 1} and {2c + 8, 2c + 9} of each k16 step, from the expert's row 8 j + g
// (gathered through token_ids), in natural K order as the fragment order keeps it.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda/per_device.hpp"
#include "cuda/silu_table.cuh"
#include "cuda/sm90/decode/fp4_bits.cuh"
#include "cuda/sm90/primitives.cuh"
#include "cuda/sm90/stream/stream_mma.cuh"
#include "format/bf16.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::stream {
namespace {

using decode::e4m3x2_to_scaled_bf16x2;
using decode::fragment_order_frags;
using decode::kEpilogueFactor;
using decode::quad_shared;

constexpr int kGroupBytes = kNvfp4GroupK / 2;               // a row's codes of one group
constexpr int kCodeBytes = kNvfp4RowsPerCta * kGroupBytes;  // a stage's codes: 16 rows
// and their 4 block scales each, copied as 4-byte words: SFB, a row's 4 blocks a word (16
// words); [K/16, N], the 16 rows of a block from the word holding the first (5 words a block).
constexpr int kScaleWords = 20;
constexpr int kStageBytes = kCodeBytes + 4 * kScaleWords;  // 592, a multiple of 16
// Stages a warp: as many as leave the CTA's static shared memory (ring, fold, expert table)
// under 48 KB; the fold's sums grow with the token tiles and the projections an item folds.
template <int kTokens, bool kPair>
constexpr int kStages = kTokens == 8    ? (kPair ? 7 : 8)
                        : kTokens == 16 ? (kPair ? 6 : 7)
                                        : 6;

// A work item's expert: its entry for the item's projection and its group rows.
struct ExpertRows {
  ExpertEntry entry;
  int row_begin, rows;
};

// Host offsets: the experts with rows, listed in the parameters.
struct ListedExperts {
  const StreamExperts& x;
  __device__ int count() const { return x.count; }
  __device__ ExpertRows at(int slot, int proj) const {
    return {x.entries[proj][slot], x.row_begin[slot], x.rows[slot]};
  }
};

// Device offsets: every expert's entries in the parameters; the CTA lists the experts with rows
// once (the offsets staged in shared memory, each warp's ballots over words of 32 experts). Rows
// past m_total are dropped.
struct SearchedExperts {
  const StreamTable& x;
  std::int32_t* offsets;  // shared [kWideTableChunk + 1]
  std::int16_t* active;   // shared [kWideTableChunk]: the slot-th expert with rows
  int* active_count;      // shared
  __device__ void prepare(const Nvfp4StreamParams& p) {
    __shared__ unsigned word_bits[kWideTableChunk / 32];  // a word's experts with rows
    const int experts = x.chunk.count, words = (experts + 31) / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int i = threadIdx.x; i <= experts; i += kThreads)
      offsets[i] = min(max(x.offsets[i], 0), p.m_total);
    __syncthreads();
    for (int w = warp; w < words; w += kWarps) {
      const int e = 32 * w + lane;
      const unsigned ballot =
          __ballot_sync(0xffffffffu, e < experts && offsets[e + 1] > offsets[e]);
      if (lane == 0) word_bits[w] = ballot;
    }
    __syncthreads();
    for (int w = warp; w < words; w += kWarps) {
      const unsigned ballot = word_bits[w];
      int before = 0;
      for (int v = 0; v < w; ++v) before += __popc(word_bits[v]);
      if (ballot >> lane & 1u)
        active[before + __popc(ballot & ((1u << lane) - 1))] =
            static_cast<std::int16_t>(32 * w + lane);
      if (w == words - 1 && lane == 0) *active_count = before + __popc(ballot);
    }
    if (words == 0 && threadIdx.x == 0) *active_count = 0;
    __syncthreads();
  }
  __device__ int count() const { return *active_count; }
  __device__ ExpertRows at(int slot, int proj) const {
    const int e = active[slot];
    return {x.chunk.entries[proj][e], offsets[e], offsets[e + 1] - offsets[e]};
  }
};

// Where lane (g, c) finds the scales of block c of rows g and g + 8 in a stage: SFB, byte c of
// the rows' words; [K/16, N], block c's 16 rows from byte (c N) % 4 of its 5 words (the block
// starts at ((4 group + c) N + n0) bytes, n0 a multiple of 16).
struct ScaleSpots {
  int row0, row8;
};
__device__ __forceinline__ ScaleSpots scale_spots(const Nvfp4StreamParams& p, int g, int c) {
  if (p.scale_sfb) return {kCodeBytes + 4 * g + c, kCodeBytes + 4 * (g + 8) + c};
  const int at = kCodeBytes + 20 * c + (c * p.n) % 4 + g;
  return {at, at + 8};
}

// A warp's weight stream: the groups of its K range of each token tile of each of the CTA's
// items, in the order its products take them (kPair: each group's gate stage, then its up
// stage). `issue` copies the next stage's bytes (`fill`, lane l: 16 code bytes of row n0 + l / 2;
// lanes 0-19 a scale word: SFB, row n0 + l's 4 blocks (lanes 0-15); [K/16, N], word l % 5 of
// block l / 5's rows) and steps to the one after (`advance`).
template <int kTokens, bool kPair, class Experts>
struct WeightStream {
  static constexpr int kParts = kPair ? 2 : 1;  // the projections an item streams
  const Nvfp4StreamParams& p;
  const Experts& experts;
  WarpRange range;
  int total;   // the items end here
  int stride;  // next_item's
  int item, t0, group, part;
  const std::uint8_t* codes[kParts];
  const std::uint8_t* scales[kParts];
  bool code_ok;
  int scale_bytes;

  __device__ bool done() const { return item >= total; }

  __device__ void begin_item(int next) {
    item = range.first < range.last ? next : total;  // a warp with no K streams nothing
    if (done()) return;
    t0 = 0;
    point_at_range(item_place(p, item));
  }

  // The bytes of the item at `at` (kPair: its gate and up) at the start of the warp's K range
  // (again for each token tile: computed from the item, not kept, as registers are short).
  __device__ void point_at_range(const ItemPlace& at) {
    const int n0 = at.n0;
    const int lane = threadIdx.x % 32;
    group = range.first;
    part = 0;
    const std::size_t row_bytes = static_cast<std::size_t>(p.k) / 2;
    const int code_row = n0 + lane / 2;
    code_ok = code_row < p.n;
    const std::size_t code_at = (code_ok ? code_row : 0) * row_bytes +
                                static_cast<std::size_t>(range.first) * kGroupBytes +
                                16 * (lane % 2);
    std::size_t scale_at = 0;
    if (p.scale_sfb) {
      const int scale_row = n0 + lane;
      scale_bytes = lane < 16 && scale_row < p.n ? 4 : 0;
      if (scale_bytes > 0) scale_at = format::sfb_offset(scale_row, 4 * range.first, p.k);
    } else {
      // Word w of block q: the bytes of rows n0 .. n0 + 15 of the block from the 4-byte word
      // holding row n0's; the bytes before it and past row n - 1 are written as zeros.
      const int q = lane / 5, w = lane % 5;
      const std::size_t block_at = format::k16_by_n_offset(n0, 4 * range.first + q, p.n);
      const int shift = static_cast<int>(block_at % 4);
      const int rows_here = min(p.n - n0, kNvfp4RowsPerCta);
      scale_bytes = lane < kScaleWords ? min(max(shift + rows_here - 4 * w, 0), 4) : 0;
      if (scale_bytes > 0) scale_at = block_at - shift + 4 * w;
    }
#pragma unroll
    for (int i = 0; i < kParts; ++i) {
      const ExpertEntry e = experts.at(at.slot, at.proj + i).entry;
      codes[i] = static_cast<const std::uint8_t*>(e.weight) + code_at;
      scales[i] = e.scale + scale_at;
    }
  }

  // The next stage into shared address `stage` (nothing past the stream's end), as one cp.async
  // group.
  __device__ void issue(std::uint32_t stage) {
    if (!done()) {
      fill(stage);
      advance();
    }
    cp_async_commit();
  }

  __device__ void fill(std::uint32_t stage) const {
    const int lane = threadIdx.x % 32;
    const bool up = kPair && part == 1;
    cp_async_zfill<16>(stage + 16 * lane, up ? codes[kParts - 1] : codes[0], code_ok);
    if (lane < kScaleWords)
      cp_async_4_first(stage + kCodeBytes + 4 * lane, up ? scales[kParts - 1] : scales[0],
                       scale_bytes);
  }

  __device__ void advance() {
    if constexpr (kPair)
      if (part == 0) {
        part = 1;
        return;
      }
    part = 0;
    ++group;
    const int group_scale_bytes = p.scale_sfb ? static_cast<int>(format::kSfbTileBytes) : 4 * p.n;
#pragma unroll
    for (int i = 0; i < kParts; ++i) {
      codes[i] += kGroupBytes;
      scales[i] += group_scale_bytes;
    }
    if (group < range.last) return;
    t0 += kTokens;
    const ItemPlace at = item_place(p, item);
    if (t0 >= experts.at(at.slot, at.proj).rows)
      begin_item(next_item(p, item, stride));
    else
      point_at_range(at);
  }
};

// act(gate, up) for the gated output, out of line: its exp and division stay out of the
// products' registers (inlined, the 8- and 32-token kernels spilled in their loops).
__device__ __noinline__ std::uint16_t gated_value(const GluInput& glu, std::uint16_t gate,
                                                  std::uint16_t up) {
  return glu_value(glu, gate, up);
}

// A B-fragment register: the input's values k and k + 1 of a row (`at` points at k).
__device__ __forceinline__ std::uint32_t input_pair(const std::uint16_t* at) {
  return __ldg(reinterpret_cast<const unsigned int*>(at));
}

// kPair (a launch that writes the gated output): an item is a row block's gate and up together,
// streamed group by group (gate's stage, then up's) on the same B fragments into two sets of
// sums, folded together, so that the activation takes both from the fold: no second pass over
// K for up, no gate value stored and read back, one fold.
template <int kTokens, bool kPair, class Experts>
__device__ __forceinline__ void stream_items(const Nvfp4StreamParams& p, const Experts& experts) {
  constexpr int kTiles = kTokens / 8;  // n8 tiles of the expert's rows
  constexpr int kRing = kStages<kTokens, kPair>;
  constexpr int kParts = kPair ? 2 : 1;
  __shared__ alignas(16) std::uint8_t ring[kWarps][kRing][kStageBytes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, c = lane % 4;
  const Team team = warp_team(p.team_warps);
  const int teams = kWarps / team.members;
  const WarpRange range = warp_range(p.k / kNvfp4GroupK, team);
  const int total = experts.count() * p.proj_count * p.row_blocks;
  const int stride = static_cast<int>(gridDim.x) * teams;
  const int first = first_item(p, static_cast<int>(blockIdx.x) * teams + team.index);
  const ScaleSpots spots = scale_spots(p, g, c);
  const std::uint32_t ring_at = smem_address(ring[warp][0]);

  WeightStream<kTokens, kPair, Experts> load{p, experts, range, total, stride};
  load.begin_item(first);
#pragma unroll
  for (int s = 0; s < kRing; ++s) load.issue(ring_at + s * kStageBytes);
  int stage = 0;

  for (int item = first; item < total; item = next_item(p, item, stride)) {
    const ItemPlace at = item_place(p, item);
    const ExpertRows x = experts.at(at.slot, at.proj);
    // The expert's rows, kTokens at a time (an expert with more rows than the width streams its
    // weights again for each further tile: the dispatcher gives such experts to other families).
    for (int t0 = 0; t0 < x.rows; t0 += kTokens) {
      // The input rows of the lane's B fragments in tile j: the expert's row t0 + 8 j + g.
      const std::uint16_t* act[kTiles];
      bool act_ok[kTiles];
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        const int row = x.row_begin + t0 + 8 * j + g;  // group row
        int source = row;
        bool ok = t0 + 8 * j + g < x.rows;
        if (ok && p.token_ids != nullptr) source = p.token_ids[row];
        ok = ok && source >= 0 && (p.a_rows == 0 || source < p.a_rows);
        act_ok[j] = ok;
        const std::size_t first_value =
            static_cast<std::size_t>(range.first) * kNvfp4GroupK + 2 * c;
        act[j] = p.a + static_cast<std::size_t>(ok ? source : 0) * p.k + first_value;
      }

      float acc[kParts][kTiles][4] = {};
      for (int gi = range.first; gi < range.last; ++gi) {
        // The group's B fragments first (L2 hits, mostly): their latency runs under the wait.
        std::uint32_t b[kTiles][8];
#pragma unroll
        for (int j = 0; j < kTiles; ++j) {
#pragma unroll
          for (int v = 0; v < 8; ++v)  // step v / 2's values {2c, 2c + 1} + 8 (v % 2)
            b[j][v] = act_ok[j] ? input_pair(act[j] + 8 * v) : 0;
          act[j] += kNvfp4GroupK;
        }
#pragma unroll
        for (int i = 0; i < kParts; ++i) {  // the group's stage of each projection
          cp_async_wait<kRing - 1>();       // this stage has landed (the lane's own copies)
          __syncwarp();                     // and the other lanes'
          const std::uint32_t s = ring_at + stage * kStageBytes;
          const uint2 codes0 = ld_shared_v2(s + 32 * g + 8 * c);
          const uint2 codes1 = ld_shared_v2(s + 32 * (g + 8) + 8 * c);
          const std::uint32_t scales = ld_shared_u8(s + spots.row0) | ld_shared_u8(s + spots.row8)
                                                                          << 8;
          __syncwarp();  // every lane has read the stage before it is filled again
          load.issue(s);
          stage = stage + 1 == kRing ? 0 : stage + 1;

          std::uint32_t step_scales[4], frag[4][4];
          quad_shared(e4m3x2_to_scaled_bf16x2(scales), step_scales);
          fragment_order_frags(codes0, codes1, step_scales, frag);
#pragma unroll
          for (int st = 0; st < 4; ++st)
#pragma unroll
            for (int j = 0; j < kTiles; ++j)
              mma_16816(acc[i][j], frag[st][0], frag[st][1], frag[st][2], frag[st][3], b[j][2 * st],
                        b[j][2 * st + 1]);
        }
      }

      // Accumulator q of lane l in tile j: weight row n0 + l / 4 + 8 (q >= 2), the expert's row
      // t0 + 8 j + 2 (l % 4) + q % 2.
      fold_team_parts<kParts, kTiles>(
          [&](int i, int j, int q) { return acc[i][j][q]; }, team,
          [&](int j, int q, int l, const float(&sum)[kParts]) {
            const int n = at.n0 + l / 4 + (q >= 2 ? 8 : 0);
            const int t = t0 + 8 * j + 2 * (l % 4) + q % 2;
            if (n < p.n && t < x.rows) {
              // Each projection's sums times its scale_2; kPair: act(gate, up) into gate's out.
              const auto scaled = [&](int i) {
                const float factor = experts.at(at.slot, at.proj + i).entry.scale_2;
                return format::float_to_bf16(__fmul_rn(sum[i], factor * kEpilogueFactor));
              };
              std::uint16_t value = scaled(0);
              if constexpr (kPair) value = gated_value(p.glu, value, scaled(1));
              p.out[at.proj][static_cast<std::size_t>(x.row_begin + t) * p.n + n] = value;
            }
          });
      if (team.members > 1) team_sync(team);  // the fold's sums are read before the next's
    }
  }
  cp_async_wait<0>();
}

template <int kTokens, bool kPair, class Work>
__global__ void __launch_bounds__(kThreads, kTokens == 8 ? 3 : 2)
    stream_nvfp4_kernel(const __grid_constant__ Nvfp4StreamParams p,
                        const __grid_constant__ Work work) {
  if constexpr (std::is_same_v<Work, StreamTable>) {
    __shared__ std::int32_t offsets[kWideTableChunk + 1];
    __shared__ std::int16_t active[kWideTableChunk];
    __shared__ int active_count;
    SearchedExperts experts{work, offsets, active, &active_count};
    experts.prepare(p);
    stream_items<kTokens, kPair>(p, experts);
  } else {
    stream_items<kTokens, kPair>(p, ListedExperts{work});
  }
}

// The kernel's CTAs one multiprocessor holds at once (asked once a device).
template <int kTokens, bool kPair, class Work>
int resident() {
  return once_per_device(
      kTokens,
      [](int) { return resident_ctas(&stream_nvfp4_kernel<kTokens, kPair, Work>, kThreads); },
      [](cudaError_t) { return 1; });
}

// f(std::integral_constant<bool, pair>) for a launch that writes the gated output or not.
template <class F>
auto with_pairs(bool gated, F&& f) {
  return gated ? f(std::true_type{}) : f(std::false_type{});
}

// A persistent grid: as many CTAs as fit on the device at once, at most one for each of its
// teams' runs of items.
template <int kTokens, class Work>
cudaError_t launch_tokens(const Nvfp4StreamParams& params, const Work& work, int runs, int sms,
                          cudaStream_t stream) {
  if (runs <= 0) return cudaSuccess;
  return with_pairs(params.glu_output != 0, [&](auto pair) {
    constexpr bool kPair = decltype(pair)::value;
    const int teams = kWarps / params.team_warps;
    const long long fill = 1LL * resident<kTokens, kPair, Work>() * sms;
    const long long wanted = (runs + teams - 1) / teams;
    const int grid = static_cast<int>(wanted < fill ? wanted : fill);
    stream_nvfp4_kernel<kTokens, kPair, Work><<<grid, kThreads, 0, stream>>>(params, work);
    return cudaGetLastError();
  });
}

// f(std::integral_constant<int, tokens>) for NVFP4 configuration `config`'s token width (8, 16
// or 32; the family refuses wider ones before it launches).
template <class F>
auto with_tokens(int config, F&& f) {
  switch (kConfigs[config].tokens) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    default: return f(std::integral_constant<int, 32>{});
  }
}

template <class Work>
cudaError_t launch_config(int config, const Nvfp4StreamParams& params, const Work& work, int runs,
                          int sms, cudaStream_t stream) {
  if (kConfigs[config].tokens > kNvfp4MaxRows) return cudaErrorInvalidValue;
  return with_tokens(config, [&](auto tokens) {
    return launch_tokens<decltype(tokens)::value>(params, work, runs, sms, stream);
  });
}

}  // namespace

int stream_nvfp4_resident_ctas(int config, bool device_offsets, bool gated) {
  return with_tokens(config, [&](auto tokens) {
    return with_pairs(gated, [&](auto pair) {
      constexpr int kTokens = decltype(tokens)::value;
      constexpr bool kPair = decltype(pair)::value;
      return device_offsets ? resident<kTokens, kPair, StreamTable>()
                            : resident<kTokens, kPair, StreamExperts>();
    });
  });
}

cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamExperts& experts, int runs, int sms,
                                cudaStream_t stream) {
  return launch_config(config, params, experts, runs, sms, stream);
}

cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamTable& table, int runs, int sms, cudaStream_t stream) {
  return launch_config(config, params, table, runs, sms, stream);
}

}  // namespace metrale::cuda::sm90::stream
