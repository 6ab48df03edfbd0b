// The stream family's host/device contract (stream_family.cpp, stream_kernel.cu,
// stream_nvfp4_kernel.cu). A GEMM of few activation rows is a stream of weight bytes, and the
// work is to keep HBM busy and the launch short: a few weight rows over all of K are a CTA's or a
// team of its warps' at a time, the warps cut K into contiguous ranges and feed mma.sync m16n8k16
// (no staging launch, no workspace), and the sums of the warps are added in warp order. So the
// order of a sum depends on the shape alone (K, and for NVFP4 the team size that team_warps picks
// from the shape and the device), and a second run gives the same bits.
//   bf16 weights (a dense GEMM): 8 to 32 weight rows a CTA, loaded straight from global memory
//     into registers, the weights as the mma's n8 operand, the activation rows as its m16 one
//     (stream_kernel.cu).
//   NVFP4 weights prepacked in the fragment order (format/fragment_order.hpp): work items of 16
//     weight rows of one expert and projection, taken in turn by a persistent grid's teams of
//     warps; the weights the m16 operand, streamed through a shared-memory ring a warp by
//     cp.async and decoded as both sm90 families decode that order; the expert's rows the n8
//     one, a token tile at a time (stream_nvfp4_kernel.cu); host offsets (the experts with rows
//     listed in the parameters) or device offsets (each CTA lists the experts with rows).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/fast_div.hpp"
#include "cuda/stage/expert_table.hpp"

namespace metrale::cuda::sm90::stream {

inline constexpr int kWarps = 8;
inline constexpr int kThreads = kWarps * 32;

// Configurations: the activation rows a CTA holds (bf16: all M; NVFP4: an expert's rows, a
// token tile at a time) and, for bf16, the weight rows it owns: 8 (the mma's n8), or several n8
// tiles sharing each activation fragment, so that at 32 and 64 tokens the CTAs re-read the
// activations from L2 4x and 2x less (and there are that many fewer of them). NVFP4 CTAs own 16.
struct StreamConfig {
  int tokens;
  int bf16_rows;
};
inline constexpr StreamConfig kConfigs[] = {{8, 8}, {16, 8}, {32, 8}, {64, 8}, {32, 32}, {64, 16}};
inline constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);
inline constexpr int kMaxRows = 64;
inline constexpr int kNvfp4MaxRows = 32;  // an n8 tile's 8 activation loads a group each: 4 tiles

// The narrowest configuration holding `rows` activation rows (rows <= kMaxRows), 8 weight rows.
constexpr int config_for_rows(int rows) {
  for (int i = 0; i < kConfigCount; ++i)
    if (rows <= kConfigs[i].tokens) return i;
  return kConfigCount - 1;
}

// A bf16 GEMM's configuration: the narrowest holding its rows, 8 weight rows a CTA, except that
// past 16 rows the 32 x 32 one takes an N wide enough to give it kWideMinCtas CTAs. Each 8-row
// CTA re-reads all M x K activations from L2, so at 32 rows that traffic is 8x the weights' over
// the whole grid; 32 weight rows a CTA cut it 4x while the grid still covers the SMs. H100, one
// call (docs/perf.md, twenty-eighth session), M = 32: 32 x 32 over 32 x 8 at 128 CTAs
// (DeepSeek-V3, N = 4096) 0.90x, 180 (gpt-oss) 0.80x, 896 (Mixtral) 0.76x; at 48 CTAs
// (Qwen3-30B, N = 1536) 1.5x and 32 (Qwen3-Next) 1.43x.
// Past 32 rows (small GEMMs only: family.hpp's kStreamSmallBf16CtaBytes), the 64 x 16 one.
inline constexpr int kWideMinCtas = 128;
inline constexpr int kSmallGemmConfig = 5;
inline constexpr int kSmallGemmRowsPerCta = kConfigs[kSmallGemmConfig].bf16_rows;
constexpr int bf16_config(int m, int n) {
  constexpr int wide = 4;
  static_assert(kConfigs[wide].tokens == 32 && kConfigs[wide].bf16_rows == 32);
  static_assert(kConfigs[kSmallGemmConfig].tokens == kMaxRows && kSmallGemmRowsPerCta == 16);
  if (m > kConfigs[wide].tokens) return kSmallGemmConfig;
  const int narrow = config_for_rows(m);
  const bool fills = (n + kConfigs[wide].bf16_rows - 1) / kConfigs[wide].bf16_rows >= kWideMinCtas;
  return kConfigs[narrow].tokens == 32 && fills ? wide : narrow;
}

// ---- bf16 weights: out[m, n] = a[m, k] · w[n, k]ᵀ ---------------------------------------------
inline constexpr int kBf16GroupK = 32;  // K a warp's lanes cover with one 16-byte load each

struct StreamParams {
  const std::uint16_t* a;  // bf16 [m, k]
  const std::uint16_t* w;  // bf16 [n, k]
  std::uint16_t* out;      // bf16 [m, n]
  std::int32_t m, n, k;
};

// ---- NVFP4 weights in the fragment order --------------------------------------------------
inline constexpr int kNvfp4RowsPerCta = 16;  // the mma's m16
inline constexpr int kNvfp4GroupK = 64;      // a fragment-order group: 8 bytes a lane and row
// Host offsets: the experts with rows, listed in the launch's parameters (~7 KB; the decode
// family's host plan lists 64): Qwen3-Next at T = 8 has ~74 of its 512 with rows.
inline constexpr int kStreamExperts = 128;

struct StreamExperts {  // slot i: expert entries[p][i], its group rows [row_begin, + rows)
  std::int32_t row_begin[kStreamExperts];
  std::int32_t rows[kStreamExperts];
  alignas(16) ExpertEntry entries[2][kStreamExperts];
  std::int32_t count;
};
static_assert(sizeof(StreamExperts) <= 32764 / 4, "the listed experts must leave a launch light");

// Device offsets (the MoE layer's): every expert's entries in the parameters (~25 KB, at most
// kWideTableChunk experts), and a CTA finds the slot-th expert with rows in the offsets itself.
struct StreamTable {
  WideTableChunk chunk;
  const std::int32_t* offsets;  // [chunk.count + 1], device
};

struct Nvfp4StreamParams {
  const std::uint16_t* a;         // bf16 [a_rows, k]
  const std::int32_t* token_ids;  // group row -> row of a, or null
  std::int32_t a_rows;            // 0: ids trusted; else ids outside [0, a_rows) read zeros
  std::int32_t m_total;           // group rows: device offsets past them are dropped
  std::uint16_t* out[2];          // bf16 [m_total, n] per projection
  std::int32_t n, k, proj_count;
  std::int32_t row_blocks;  // ceil(n / kNvfp4RowsPerCta)
  FastDiv items_per_slot;   // proj_count x row_blocks: an item's expert slot in one multiply
  std::int32_t scale_sfb;   // 1: SFB scales, 0: [K/16, N]
  std::int32_t team_warps;  // warps sharing an item's K: 1, 2, 4 or 8 (team_warps below)
  // 1: gate/up (proj_count 2) with the activation applied to its sums: a team takes a row
  // block's gate and up items together and writes act(gate, up) into out[0] (out[1] unused).
  std::int32_t glu_output;
  GluInput glu;  // that activation (glu.up unused)
};

// Work item `item`'s expert slot, projection and first weight row, a slot's items in row-block
// order with a block's projections (at most 2) adjacent: one high multiply, where two divisions
// by a variable cost ~50 instructions an item, taken by the loader and the products alike.
struct ItemPlace {
  int slot, proj, n0;
};
METRALE_HD inline ItemPlace item_place(const Nvfp4StreamParams& p, int item) {
  const int slot = static_cast<int>(p.items_per_slot.quotient(static_cast<std::uint32_t>(item)));
  const int in_slot = item - slot * static_cast<int>(p.items_per_slot.divisor);
  const int paired = p.proj_count > 1 ? 1 : 0;  // a block's projections: 1 << paired
  return {slot, in_slot & paired, (in_slot >> paired) * kNvfp4RowsPerCta};
}

// The items a team takes, `stride` runs (a grid's worth of teams) apart: one item a run, or on a
// launch that writes the gated output a row block's gate item, which stands for the pair (its up
// item is the next one, streamed with it). Read from the parameters at each step, so that the
// loop holds no more registers than the stride.
METRALE_HD inline int first_item(const Nvfp4StreamParams& p, int team_slot) {
  return p.glu_output ? 2 * team_slot : team_slot;
}
METRALE_HD inline int next_item(const Nvfp4StreamParams& p, int item, int stride) {
  return p.glu_output ? item + 2 * stride : item + stride;
}

// The warps that share a work item's K (a team; kWarps / team CTA teams take items in turn): the
// fewest that cut a warp's range to at most kTeamGroups groups and give at least 5/8 of the
// resident warps an item (or kWarps). A lone warp's long range is a serial chain of products on
// one set of sums, and a fold through shared memory costs about a group of products, so the
// sizes between are measured ones: H200, 20 rows of the five presets at T = 1 and 8 with every
// size forced (docs/perf.md, twenty-ninth session): this rule picks the best size on fifteen,
// one within 3 % of it on three, and 1.06-1.07x its time on DeepSeek-V3 gate_up and down at T = 8.
inline constexpr int kTeamGroups = 24;
constexpr int team_warps(long long items, int groups, long long resident_warps) {
  int warps = 1;
  while (warps < kWarps &&
         ((groups + warps - 1) / warps > kTeamGroups || 8 * items * warps < 5 * resident_warps))
    warps *= 2;
  return warps;
}
constexpr bool valid_team_warps(int warps) {
  return warps == 1 || warps == 2 || warps == 4 || warps == 8;
}

// Launch configuration `config` over ceil(n / its bf16 rows) CTAs (bf16), or over the work items
// below (NVFP4); return the launch's error.
cudaError_t launch_stream(int config, const StreamParams& params, cudaStream_t stream);
// `runs`: the runs of (expert, 16 weight rows, projection) work items a team takes at a time
// (first_item, next_item), of the listed experts (host) or of at most min(m_total, experts)
// experts (device: items past the experts with rows are skipped), taken by a persistent grid of
// at most the CTAs `sms` multiprocessors hold at once.
cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamExperts& experts, int runs, int sms,
                                cudaStream_t stream);
// The CTAs of NVFP4 configuration `config` one multiprocessor holds at once (host or device
// offsets, gated output or not: their kernels differ).
int stream_nvfp4_resident_ctas(int config, bool device_offsets, bool gated);
cudaError_t launch_stream_nvfp4(int config, const Nvfp4StreamParams& params,
                                const StreamTable& table, int runs, int sms, cudaStream_t stream);

}  // namespace metrale::cuda::sm90::stream
