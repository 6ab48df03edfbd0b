// The decode family's host/device contract: its configurations, the rule that fixes the order of
// its fp32 sums, the work list its plan kernel writes and the parameters of its two kernels.
//
// Work: an output tile is (expert, token tile of up to `tokens` rows, projection, 64 or 128 weight
// rows: the configuration's).
// K is cut into chunks; a unit is a run of whole chunks of one tile. A tile is one unit, or
// `splits` units when the GPU would otherwise idle (few tiles): then each unit leaves one fp32
// partial per chunk in the workspace and the last unit to finish folds them, in chunk order.
//
// Order of the sums, fixed by K and the expert's row count only (never by the split, the token
// tile or the other experts): each chunk is summed from zero over its k16 steps, the chunk sums
// are added in ascending order. So a grouped call, a single GEMM on one expert's rows, a split
// and an unsplit run all produce the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/fast_div.hpp"
#include "cuda/stage/expert_table.hpp"
#include "format/host_device.hpp"
#include "format/layouts.hpp"

namespace metrale::cuda::sm90::decode {

// Token widths (wgmma N) of the configurations (the family's plan picks one). An expert with more
// rows than the width takes several token tiles, each streaming its weights again.
inline constexpr int kTokenWidths[] = {8, 16, 32, 64, 128, 256};
inline constexpr int kWidthCount = sizeof(kTokenWidths) / sizeof(kTokenWidths[0]);
inline constexpr int kRows = 64;     // weight rows of one wgmma M: a half of a 128-row tile
inline constexpr int kKTile = 64;    // K per sub-tile (a pipeline stage holds kSubTiles of them)
static_assert(format::kDecodeKGroup == kKTile, "the decode order permutes K within a k-tile");
inline constexpr int kFoldMaxRows = 64;  // experts with more rows sum K in one chunk
// K: rows of codes in whole 16-byte pieces (the loader's cp.async).
inline constexpr int kKMultiple = 32;

// Configurations: 0 .. kWidthCount - 1 are the token widths with output tiles of 64 weight rows;
// the next kWideUnitWidths are the narrowest widths again with 128-row tiles: two wgmma M halves
// on the same activations, so a k-tile's activations and its whole 512-byte SFB tile, read from L2
// for 64 rows in the first, serve twice the codes (at 8 tokens 1.375x the codes' bytes through L2
// instead of 1.75x, at 32 tokens 2.125x instead of 3.25x). Twice the rows a unit also makes half
// the units, which a launch of few units pays in its last wave (decode_family.cpp's
// wide_units_pay). Wider tokens keep 64 rows: two halves' accumulators would pass the registers
// of the kernels' CTAs an SM.
inline constexpr int kWideUnitWidths = 3;
inline constexpr int kConfigCount = kWidthCount + kWideUnitWidths;
inline constexpr int kMaxUnitRows = 2 * kRows;
// The family's plan takes 128-row units where a launch has at least this many waves of them on
// the resident grid (decode_family.cpp's wide_units_pay).
inline constexpr int kWideUnitWaves = 3;

METRALE_HD constexpr int config_tokens(int config) {
  return kTokenWidths[config < kWidthCount ? config : config - kWidthCount];
}
METRALE_HD constexpr int config_unit_rows(int config) {
  return config < kWidthCount ? kRows : kMaxUnitRows;
}
// The CTAs an SM a kernel is built for (its __launch_bounds__; the registers then bound it): 4 up
// to 32 tokens, so that 16 warps share an SM's issue slots (decode_loader.cuh's Shape says why),
// but 3 for 128-row tiles 32 tokens wide, whose two halves' accumulators take 168 registers.
METRALE_HD constexpr int ctas_an_sm(int tokens, int unit_rows) {
  return tokens <= 16 ? 4 : tokens <= 32 ? (unit_rows > kRows ? 3 : 4) : 1;
}
// The 128-row configuration of width configuration `config`, where there is one.
constexpr int wide_unit_config(int config) {
  return config < kWideUnitWidths ? kWidthCount + config : config;
}

// The configuration of the narrowest width holding `tokens` (64-row tiles).
constexpr int width_config(int tokens) {
  for (int i = 0; i < kWidthCount; ++i)
    if (tokens <= kTokenWidths[i]) return i;
  return kWidthCount - 1;
}

// The configuration of a launch whose largest expert has `largest` rows and whose experts with
// rows have `mean` rows on average (rounded up): the smallest width holding twice the mean, or the
// largest expert if that is less. Sizing for the largest made every expert pay the tensor-core
// work of the busiest: DeepSeek-V3 gate_up at T = 64 (512 rows, the largest expert past 16) took
// 2128 us at 32 tokens and 1488 at 8, its busier experts taking several tiles (docs/perf.md).
constexpr int token_config(int largest, int mean) {
  return width_config(largest < 2 * mean ? largest : 2 * mean);
}

// Elements per row of the decode-order activations: K padded to whole k-tiles (zeros past K),
// since the decode order permutes K within a k-tile.
METRALE_HD constexpr int act_stride(int k) { return (k + kKTile - 1) / kKTile * kKTile; }

// K-tiles per chunk for an expert with `rows` rows: 1024 values of K per 8 tokens (so a split
// tile's partials stay ~1/9 of the weight bytes it streams), the whole K above kFoldMaxRows.
METRALE_HD constexpr int chunk_k_tiles(int rows, int k_tiles) {
  if (rows > kFoldMaxRows) return k_tiles;
  int blocks = 1;
  while (8 * blocks < rows) blocks *= 2;
  return 16 * blocks;
}

struct Segment {                  // one expert with rows in the launch's window, expert order
  std::int32_t expert, row_begin, rows, token_tiles;
  std::int32_t chunk_tiles;       // k-tiles per chunk
  std::int32_t chunks;            // ceil(k_tiles / chunk_tiles)
  std::int32_t splits;            // units per output tile (1: no partials)
  std::int32_t first_tile;        // index of its first output tile among split tiles' counters
  std::int64_t first_partial;     // float offset of its partial slots (split experts only)
  std::int32_t fold_blocks;       // 8-token column blocks a partial keeps
  std::int32_t reserved;
};
static_assert(sizeof(Segment) == 48, "segments are read as 48-byte records");

// Split tiles are few by construction (split_capacity = kSplitTilesPerSm x SMs): a split only
// pays while the tiles alone would leave resident CTAs idle.
inline constexpr int kSplitTilesPerSm = 4;

// The work rule, shared by the plan kernel's CTA 0 (decode_plan.cu) and the host plan
// (decode_family.cpp), so that both give an expert the same tiles, chunks and split.

// Chunks of K for an expert with `rows` rows.
METRALE_HD constexpr int chunk_count(int rows, int k_tiles) {
  const int tiles = chunk_k_tiles(rows, k_tiles);
  return (k_tiles + tiles - 1) / tiles;
}

// Units per output tile. The persistent grid's CTAs take units in turn and stream a unit's
// chunks one after another, so with `splits` units a tile the busiest CTA has ceil(units / grid)
// units of ceil(chunks / splits) chunks, each unit costing about half a chunk more (finding it,
// filling its first stages, its partial): minimise that, but first keep at least half of the
// resident CTAs busy where a split can (fewer leave SMs' issue slots idle; past half, an SM's
// CTAs share its issue slots and the split's partials and second pass cost more than the CTAs
// it fills: DeepSeek-V3 gate_up at T = 1, 512 tiles on 528 CTAs, ran 81 µs split in two and
// 65 µs unsplit); on a tie the smaller split (fewer partials). Every split gives the same bits.
// `tiles`: the launch's output tiles; `chunks`: its experts' most chunks; `grid`: resident CTAs.
METRALE_HD constexpr int choose_splits(int tiles, int chunks, int grid, int split_capacity,
                                       int forced_splits) {
  if (tiles == 0 || tiles > split_capacity) return 1;
  if (forced_splits > 0) return forced_splits;
  // 32-bit throughout: tiles <= split_capacity and chunks <= K / 1024 keep units far below 2^31.
  int best = 1, best_cost = -1;
  bool best_starved = true;
  for (int s = 1; s <= chunks; ++s) {
    const int units = tiles * s;
    const bool starved = 2 * units < grid;
    const int cost = (units + grid - 1) / grid * (2 * ((chunks + s - 1) / s) + 1);
    if (best_cost < 0 || (best_starved && !starved) ||
        (starved == best_starved && cost < best_cost)) {
      best = s;
      best_cost = cost;
      best_starved = starved;
    }
  }
  return best;
}

// One expert's share of the work list once the launch's split is known (the prefix sums of
// tiles, units and partials over the experts place it).
struct ExpertWork {
  std::int32_t token_tiles, tiles, chunk_tiles, chunks, splits, units, fold_blocks;
  std::int64_t partials;  // floats of its partial slots (split experts only)
};

// An expert's output tiles (what the split rule counts): token tiles x `tiles_per_token_tile`
// (projections x weight tiles of `unit_rows` rows).
METRALE_HD constexpr int output_tiles(int rows, int tokens, int tiles_per_token_tile) {
  return (rows + tokens - 1) / tokens * tiles_per_token_tile;
}

// `splits`: choose_splits' answer for the launch.
METRALE_HD constexpr ExpertWork expert_work(int rows, int tokens, int unit_rows,
                                            int tiles_per_token_tile, int k_tiles, int splits) {
  ExpertWork w{};
  w.token_tiles = (rows + tokens - 1) / tokens;
  w.tiles = output_tiles(rows, tokens, tiles_per_token_tile);
  w.chunk_tiles = chunk_k_tiles(rows, k_tiles);
  w.chunks = (k_tiles + w.chunk_tiles - 1) / w.chunk_tiles;
  w.splits = splits < w.chunks ? splits : w.chunks;
  w.units = w.tiles * w.splits;
  w.fold_blocks = ((rows < tokens ? rows : tokens) + 7) / 8;
  w.partials = w.splits > 1 ? 1LL * w.tiles * w.chunks * w.fold_blocks * 8 * unit_rows : 0;
  return w;
}

METRALE_HD constexpr Segment segment_of(int expert, int row_begin, int rows, const ExpertWork& w,
                                        int first_tile, std::int64_t first_partial) {
  return Segment{expert,        row_begin,     rows,     w.token_tiles,
                 w.chunk_tiles, w.chunks,      w.splits, first_tile,
                 first_partial, w.fold_blocks, 0};
}

// Totals the plan kernel leaves for the main kernel.
struct PlanTotals {
  std::int32_t segments;
  std::int32_t units;
};

// The staging pass writes each 64-value k-tile of the activations as kPiecesPerKTile 16-byte
// pieces (8 values in decode order): a warp's 32 consecutive pieces are four whole k-tiles, and a
// gated input (Problem::glu: staged row i is act(a[i], up[i])) spreads a k-tile's 64 exps over
// eight threads.
inline constexpr int kPiecesPerKTile = kKTile / 8;
// The pieces a staging thread moves (the plan grid gives it that many): copying, 4, their loads in
// flight together; gated, one, its exps being what it waits for (2 or 4 a thread made the layer's
// down plan kernel slower: docs/perf.md, 2026-12-03, eighth session).
METRALE_HD constexpr int staging_batch(bool gated) {
  return gated ? 1 : 4;
}

// What both plan kernels share: the launch's shape and the workspace arrays they fill.
struct PlanShape {
  StagedTables tables;            // the expert table: [proj][tables.num_experts]
  std::int32_t m_total, proj_count, n_tiles, k_tiles, tokens, unit_rows;
  std::int32_t min_rows, max_rows;     // the launch's RowWindow
  std::int32_t grid;              // the main kernel's resident CTAs: what the split must keep busy
  std::int32_t split_capacity;    // tiles that may split (counters and partial slots for them)
  std::int32_t forced_splits;     // 0: automatic
  Segment* segments;
  std::int32_t* unit_first;       // [segments + 1]
  PlanTotals* totals;
  std::uint32_t* counters;        // [split_capacity]: zeroed
  // activations: group row i <- a[token_ids[i] or i], K reordered (format::decode_k_source)
  const std::uint16_t* a;
  std::int32_t a_rows;            // 0: ids trusted
  const std::int32_t* token_ids;
  std::uint16_t* act;             // [m_total, act_stride(K)]
  std::int32_t k;
  std::int32_t act_staged;        // 1: an earlier launch of the call wrote act (Plan::input_staged)
  GluInput glu;                   // glu.up set: a holds gate rows (no token ids)
};

// Host offsets, any expert count: the offsets and the table's first chunk travel here (later
// chunks are staged by stage_tables); the expert count is the table's
// (shape.tables.num_experts). ~21 KB of parameters.
struct PlanArgs {
  PlanShape shape;
  TableChunk chunk;
  HostOffsets offsets;
};

// Device offsets (the MoE layer's): no host offsets to carry, so the first chunk is a wide one
// (kWideTableChunk experts, ~25 KB of parameters).
struct DevicePlanArgs {
  PlanShape shape;
  WideTableChunk chunk;
  const std::int32_t* offsets;
};

inline constexpr std::size_t kMaxLaunchParameterBytes = 32764;  // CUDA 12.1+, sm_70+
static_assert(sizeof(PlanArgs) <= kMaxLaunchParameterBytes &&
                  sizeof(DevicePlanArgs) <= kMaxLaunchParameterBytes,
              "a plan launch's parameters must fit the 32764 bytes a launch may carry");

// Host offsets with few experts holding rows (decode sizes): the host plans the work list itself
// and the main kernel carries it (HostWork, ~6.4 KB of parameters), so the main kernel locates
// its units and starts streaming weights while the staging kernel still writes the activations;
// the table holds the listed experts alone, indexed 0 .. count - 1.
inline constexpr int kCompactExperts = 64;

struct HostWork {
  // The unit prefix [segments + 1] and the two counts: the block the kernel copies into shared
  // memory, 16 bytes a thread.
  alignas(16) std::int32_t unit_first[kCompactExperts + 1];
  std::int32_t segments, units, reserved;
  alignas(8) Segment segment[kCompactExperts];
  alignas(16) ExpertEntry entries[2][kCompactExperts];
};
static_assert(sizeof(HostWork) <= kMaxLaunchParameterBytes / 4,
              "the host-planned work list must leave a launch light");
inline constexpr int kHostPrefixBytes = offsetof(HostWork, segment);
static_assert(kHostPrefixBytes == (kCompactExperts + 4) * 4, "the copied block ends at the counts");

struct DecodeParams {             // the main kernel's parameters
  // The plan kernel's work list and table (a host-planned launch carries its own in HostWork).
  const ExpertEntry* table;       // [proj][num_experts]
  const Segment* segments;
  const std::int32_t* unit_first;
  const PlanTotals* totals;
  const std::uint16_t* act;       // [m_total, act_stride(K)], decode order
  float* partials;
  std::uint32_t* counters;
  std::uint16_t* out[2];          // bf16 [m_total, N] per projection
  std::int32_t n, k, num_experts, proj_count;
  FastDiv n_tiles;                // weight tiles of N (of the configuration's rows)
  std::int32_t scale_sfb;         // 1: SFB scales, 0: [K/16, N]
  std::int32_t scale_vec16;       // [K/16, N] rows 16-byte aligned (N % 16 == 0, aligned bases)
  std::int32_t max_segments;      // unit_first entries cached in shared memory
};

}  // namespace metrale::cuda::sm90::decode
