// The tiled family's host side: dense bf16 GEMMs and NVFP4 experts with many rows. Picks a tile
// from kTiles, stages the expert table and host offsets into the workspace, sizes the grid and
// launches tiled_kernel.cuh on the caller's stream.
#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "core/config.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/family.hpp"
#include "cuda/sm90/tiled/tiled_params.hpp"
#include "cuda/sm90/tiled/tma_maps.hpp"
#include "cuda/stage/stage_tables.hpp"
#include "cuda/stage/workspace_carve.hpp"

namespace metrale::cuda::sm90 {
namespace {

// The smallest tile holding twice the mean rows of an active expert. Routing is uneven, so a
// tile sized to the mean splits the busier experts in two and reads their weights twice; the 2x
// was measured (docs/perf.md, "tile choice", over the four presets, T = 1..4096): on all 40
// shapes it picks a tile within 5 % of the fastest, where sizing to the mean lost up to 1.3x.
// Whether the widest tile is worth it is the grid's question (choose_tile).
int pick_tile(double rows_per_expert) {
  for (int i : kChosenTiles)
    if (2 * rows_per_expert <= kTiles[i].tokens) return i;
  return std::end(kChosenTiles)[-1];
}

// Row tiles the grid must cover: exact for host offsets, a bound from m_total and
// max_rows_per_expert for device offsets (nothing here may read them).
int row_tiles(const GroupedNvfp4& a, const Plan& plan) {
  const ExpertGroups& g = a.groups;
  const long tokens = kTiles[plan.config].tokens;
  if (g.offsets_on_device) {
    const long rows = std::min(g.max_rows_per_expert, plan.rows.max_rows);
    const long by_rows = (g.m_total + tokens - 1) / tokens + g.num_experts;
    const long by_bound = g.num_experts * ((rows + tokens - 1) / tokens);
    return static_cast<int>(std::min(by_rows, by_bound));
  }
  return static_cast<int>(row_tiles_in_window(g, plan.rows, static_cast<int>(tokens)));
}

int channel_tiles(const GroupedNvfp4& a, const TileConfig& tile) {
  return (a.n + tile.weight_rows - 1) / tile.weight_rows;
}

// The grid's output tiles: row tiles x channel tiles x projections (each cut into
// splits_of(plan) CTAs).
int grid_tiles(const GroupedNvfp4& a, const Plan& plan) {
  return row_tiles(a, plan) * channel_tiles(a, kTiles[plan.config]) * a.proj_count;
}

// The K ranges a plan cuts each tile into (1: none), and whether they fold through the
// workspace (the wide tiles: folds_in_cluster).
int splits_of(const Plan& plan) {
  return std::max(plan.splits, 1);
}
bool workspace_fold(const Plan& plan) {
  return splits_of(plan) > 1 && !folds_in_cluster(kTiles[plan.config]);
}

// Whether `plan` runs stream-K (stream_k_kernel.cuh): asked for, on a dense GEMM whose stages
// TMA copies, on a tile that has it, K whole (a forced split runs the tile grid).
bool stream_k_runs(const Plan& plan) {
  return plan.stream_k > 0 && plan.tma && has_stream_k(plan.config) && splits_of(plan) == 1;
}

// Stream-K's workers: a CTA a multiprocessor, or as many clusters of 2 as run at once (every
// worker must be resident: one waits on others); at most one a k-tile of the grid (so that every
// worker's run holds at least one). Its tiles are plan.stream_k row tiles of one channel tile.
int stream_k_workers(const GroupedNvfp4& a, const Plan& plan) {
  const int cluster = std::max(plan.stream_k, 1);
  const long long tiles = static_cast<long long>((row_tiles(a, plan) + cluster - 1) / cluster) *
                          channel_tiles(a, kTiles[plan.config]);
  const long long units = tiles * ((a.k + kBlockK - 1) / kBlockK);
  const int sms = std::max(device_sm_count(), 1);
  int resident = sms;
  if (plan.stream_k == 2) {
    const int pairs = stream_k_resident_pairs(plan.config);
    resident = pairs > 0 ? pairs : sms / 2;
  }
  return static_cast<int>(std::max<long long>(1, std::min<long long>(resident, units)));
}
int stream_k_ctas(const GroupedNvfp4& a, const Plan& plan) {
  return stream_k_workers(a, plan) * std::max(plan.stream_k, 1);
}

// Whether the launch reads staged tables: always but for one expert on host offsets (a single
// GEMM), whose entries and offsets travel in the launch's parameters (GroupedParams::single),
// unless a workspace fold needs its counters zeroed by the staging launch anyway.
bool staged(const GroupedNvfp4& a, const Plan& plan) {
  return a.groups.num_experts != 1 || a.groups.offsets_on_device || workspace_fold(plan);
}

struct Layout {
  ExpertEntry* table;
  std::int32_t* offsets;
  float* partials;  // a workspace fold's sums
  std::uint32_t* counters;
  int tiles;  // the grid's tiles (channel x row x projection), each cut into splits_of(plan)
  std::size_t bytes;
};

Layout carve(const Problem& problem, const Plan& plan, void* base) {
  const GroupedNvfp4& a = problem.args;
  const std::size_t experts = static_cast<std::size_t>(a.groups.num_experts);
  WorkspaceCarve c(base);
  Layout l{};
  if (staged(a, plan)) {
    l.table = c.take<ExpertEntry>(experts * static_cast<std::size_t>(a.proj_count));
    l.offsets = c.take<std::int32_t>(experts + 1);
  }
  const TileConfig& t = kTiles[plan.config];
  if (workspace_fold(plan)) {
    l.tiles = grid_tiles(a, plan);
    l.partials = c.take<float>(static_cast<std::size_t>(l.tiles) * splits_of(plan) * t.tokens *
                               t.weight_rows);
    l.counters = c.take<std::uint32_t>(static_cast<std::size_t>(l.tiles));
  } else if (stream_k_runs(plan)) {  // one accumulator tile a CTA, one count a tile
    l.tiles = grid_tiles(a, plan);
    l.partials =
        c.take<float>(static_cast<std::size_t>(stream_k_ctas(a, plan)) * t.tokens * t.weight_rows);
    l.counters = c.take<std::uint32_t>(static_cast<std::size_t>(l.tiles));
  }
  l.bytes = c.used();
  return l;
}

// A bf16 GEMM whose tiles would leave more than half of the multiprocessors idle (a dense GEMM
// of a narrow N, say) cuts each tile's K into ranges, at least kMinSplitKTiles k-tiles a range (so
// that a CTA's pipeline fill stays small), at most kMaxSplits (the portable cluster size), on the
// CTA-synchronised tile of the same shape, folded as folds_in_cluster says. NVFP4 weights keep one
// order of K: a grouped call and a GEMM on an expert's rows give the same bits (the seeds define
// the one by the other). Measured: docs/perf.md, "2026-12-02, eighth session" (the 128-token tile)
// and "2026-12-03" (every tile).
constexpr int kMinSplitKTiles = 8;
constexpr int kMaxSplits = 8;
// The configuration of the same tile (tokens, weight rows, chunk) with or without the
// warp-specialised roles; itself when there is none.
constexpr int twin_of(int config, bool specialized) {
  const TileConfig& t = kTiles[config];
  for (int i = 0; t.specialized != specialized && i < kTileCount; ++i) {
    const TileConfig& c = kTiles[i];
    if (c.specialized == specialized && c.tokens == t.tokens && c.weight_rows == t.weight_rows &&
        c.chunk == t.chunk)
      return i;
  }
  return config;
}
constexpr int cta_synchronised_twin(int config) {
  return twin_of(config, false);
}

// A CTA-synchronised grid puts its row tiles on grid.y, at most kMaxGridRows of them; past that
// (a dense GEMM of more than 16.7 M rows on the 256-token tile) the same tile's persistent twin
// walks them from a grid of one CTA a multiprocessor.
constexpr long kMaxGridRows = 65535;
Plan persistent_past_grid_rows(const Problem& problem, Plan plan) {
  if (!kTiles[plan.config].specialized && row_tiles(problem.args, plan) > kMaxGridRows)
    plan.config = twin_of(plan.config, true);
  return plan;
}

// Whether `plan` is a bf16 grid (host offsets) whose tiles fill at most half of the
// multiprocessors: the grid narrow_small_grid narrows and split_small_grid cuts.
bool small_bf16_grid(const Problem& problem, const Plan& plan) {
  const GroupedNvfp4& a = problem.args;
  return !problem.nvfp4 && !a.groups.offsets_on_device &&
         2 * grid_tiles(a, plan) <= device_sm_count();
}

// A small bf16 grid (small_bf16_grid: a dense GEMM of a narrow N at a few hundred rows) of tiles
// of 128 tokens or more first takes the CTA-synchronised 64-token tile: at least twice the CTAs,
// each with all of K, where a K split of the wide tile folds its ranges through the workspace
// (behind a staging launch that zeroes the fold's counters). split_small_grid may still cut the
// narrow tile's K, folded in its cluster. Measured with TMA copies against the 128-token tile's K
// split in one call, best of 2 rounds (an H100, docs/perf.md, forty-fourth session): Qwen3-30B
// dense M = 512 (48 tiles of 128 x 128; 96 of 64 x 128, whole) 14.6 us against 16.4 in 2 ranges;
// Qwen3-Next (32 tiles; 64, in 2 ranges) 14.6 against 15.3 in 4.
constexpr int kNarrowBf16Tile = 3;
static_assert(kTiles[kNarrowBf16Tile].tokens == 64 && !kTiles[kNarrowBf16Tile].specialized,
              "the CTA-synchronised 64-token tile");
Plan narrow_small_grid(const Problem& problem, Plan plan) {
  if (kTiles[plan.config].tokens > kTiles[kNarrowBf16Tile].tokens && small_bf16_grid(problem, plan))
    plan.config = kNarrowBf16Tile;
  return plan;
}

Plan split_small_grid(const Problem& problem, Plan plan) {
  if (!small_bf16_grid(problem, plan)) return plan;
  const GroupedNvfp4& a = problem.args;
  const int tiles = grid_tiles(a, plan);
  const int k_tiles = (a.k + kBlockK - 1) / kBlockK;
  int splits =
      std::min({device_sm_count() / std::max(tiles, 1), k_tiles / kMinSplitKTiles, kMaxSplits});
  const int twin = cta_synchronised_twin(plan.config);
  // The split grid in one wave of clusters: a cluster's CTAs start together, on one GPC, so past
  // what the device runs at once a second wave doubles the time (Qwen3-Next's dense M = 512, 32
  // tiles in clusters of 4 on the 128-token tile: 2.1x the time of the fold through the
  // workspace; docs/perf.md, "2026-12-03"). Fewer ranges until the tiles fit.
  while (splits >= 2 && !kTiles[twin].specialized && folds_in_cluster(kTiles[twin])) {
    const int fit = bf16_split_clusters(twin, splits);
    if (fit <= 0 || tiles <= fit) break;
    --splits;
  }
  if (splits < 2 || kTiles[twin].specialized) return plan;
  plan.config = twin;
  plan.splits = splits;
  return plan;
}

// The load of one expert of `rows` rows cut into row tiles of `tile` (the last one runs at its
// tile_width), on NVFP4 (`nvfp4`) or bf16 weights.
void add_expert(TileLoad& load, long rows, const TileConfig& tile, bool nvfp4) {
  const long full = rows / tile.tokens, rest = rows % tile.tokens;
  load.tiles += full + (rest > 0 ? 1 : 0);
  load.time += full * tile_time(tile.tokens, nvfp4) +
               (rest > 0 ? tile_time(tile_width(static_cast<int>(rest), tile), nvfp4) : 0.0);
}

// The rows of one expert under uniform routing, Poisson with mean `lambda` (the slots m_total
// over the experts): f(rows, probability) for the row counts in `window` within 8 standard
// deviations of the mean (the rest weighs less than 1e-12). Device offsets cannot be read on the
// host, so their experts are priced as uniform routing would spread them.
// (One exp per call, then p(k) = p(k - 1) lambda / k: a plan costs microseconds at any mean.)
template <class F>
void for_uniform_rows(double lambda, RowWindow window, F&& f) {
  if (lambda <= 0) return;
  const double spread = 8 * std::sqrt(lambda) + 8;
  const long first = std::max<long>({1, window.min_rows, std::lround(std::floor(lambda - spread))});
  const long last = std::min<long>(window.max_rows, std::lround(std::ceil(lambda + spread)));
  double p = std::exp(first * std::log(lambda) - lambda - std::lgamma(first + 1.0));
  for (long rows = first; rows <= last; p *= lambda / static_cast<double>(++rows)) f(rows, p);
}

// The mean rows an expert of device offsets gets under uniform routing: the slots over the
// experts (over the slots, when fewer), at most the caller's bound.
double uniform_mean(const ExpertGroups& g) {
  const int spread = std::max(1, std::min(g.num_experts, g.m_total));
  return std::min<double>(g.max_rows_per_expert, static_cast<double>(g.m_total) / spread);
}

// The mean rows of the experts in `window` under uniform routing (mean `lambda`): what the tile
// is sized to (pick_tile) when the offsets are on the device. A window that holds all but one
// expert in ten thousand has the overall mean (as host offsets would give it exactly; the
// truncated sum lands a hair above it, past pick_tile's threshold when lambda sits on one).
double uniform_window_mean(double lambda, RowWindow window) {
  double weight = 0, rows_sum = 0;
  for_uniform_rows(lambda, window, [&](long rows, double p) {
    weight += p;
    rows_sum += p * rows;
  });
  if (weight > 1 - 1e-4) return lambda;
  return weight > 0 ? rows_sum / weight : std::max(1.0, lambda);
}

// The load of the experts in `window` in row tiles of `tile`, over `channel_tiles`: exact for
// host offsets; for device offsets the expectation under uniform routing (for_uniform_rows), so
// that the choice is the one host offsets of such a routing would get. (Pricing every expert at
// the mean instead chose the 128-token tile for DeepSeek-V3 and gpt-oss at T = 4096, where host
// offsets get the faster 256-token one: docs/perf.md, "2026-12-02, sixth session".)
TileLoad expected_load(const ExpertGroups& g, RowWindow window, const TileConfig& tile,
                       long channel_tiles, bool nvfp4) {
  TileLoad load;
  if (g.offsets_on_device) {
    double tiles = 0;
    for_uniform_rows(uniform_mean(g), window, [&](long rows, double p) {
      TileLoad one;
      add_expert(one, rows, tile, nvfp4);
      tiles += p * one.tiles;
      load.time += p * one.time * g.num_experts;
    });
    load.tiles = std::lround(std::ceil(tiles * g.num_experts));
  } else {
    for (int e = 0; e < g.num_experts; ++e) {
      const int rows = g.offsets[e + 1] - g.offsets[e];
      if (rows > 0 && window.contains(rows)) add_expert(load, rows, tile, nvfp4);
    }
  }
  return TileLoad{load.tiles * channel_tiles, load.time * channel_tiles};
}

// The widest tile halves the NVFP4 decode per tensor-core operation but also halves the grid: on
// a grid that does not fill the GPU twice over (a dense GEMM at M = 512, say) the 128-token tile
// keeps more multiprocessors busy. Both tiles cut N in 128-row CTAs. `mean`: the mean rows of an
// expert in the window.
int choose_tile(const Problem& problem, RowWindow window, double mean) {
  const int tile = pick_tile(mean);
  const int widest = std::end(kChosenTiles)[-1], narrower = std::end(kChosenTiles)[-2];
  if (tile != widest) return tile;
  const GroupedNvfp4& a = problem.args;
  const long channels = static_cast<long>(channel_tiles(a, kTiles[widest])) * a.proj_count;
  auto load = [&](int t) {
    return expected_load(a.groups, window, kTiles[t], channels, problem.nvfp4);
  };
  if (!wide_tile_pays(load(widest), load(narrower), device_sm_count())) return narrower;
  return problem.nvfp4 ? widest : kBf16WideTile;
}

// Whether one expert's weights of a projection fit in L2.
bool weights_fit_l2(const Problem& problem) {
  const GroupedNvfp4& a = problem.args;
  const double weight_bytes = static_cast<double>(a.n) * a.k * (problem.nvfp4 ? 0.5 : 2.0);
  return weight_bytes <= static_cast<double>(device_l2_bytes());
}

// raster_tile's band: row tile by row tile while one expert's weights of a projection fit in
// L2, else bands of kRasterRows.
int band_rows(const Problem& problem) {
  return weights_fit_l2(problem) ? 1 : kRasterRows;
}

// A single GEMM of 33 to kNarrowTileRows rows, where pick_tile's headroom for uneven routing
// (its factor 2) takes the 128-token tile though the rows are exact: two row tiles of 32 while
// the weights stay in L2 for the second (more CTAs on the weight stream); past L2, one 64-token
// tile, the weights read once. Measured on the bench's dense GEMMs at M = 64 (docs/perf.md,
// "2026-12-03"): two 32-token row tiles 0.65-0.90x the time of the 128-token tile, one
// 64-token tile 1.38x on the four that fit and 0.72x on Mixtral's 235 MB. At 32 rows and fewer
// the mean rule stays (an 8-row GEMM on the 16-token tile: Mixtral 61 us, 69 on the 8-token one).
constexpr int kNarrowTileRows = 64;
int single_gemm_tile(const Problem& problem) {
  return weights_fit_l2(problem) ? 2 : 3;
}

// A dense bf16 GEMM (one expert on host offsets, its rows as they lie, one projection) has its
// stages copied by TMA (tma_stages.cuh) unless METRALE_CUDA_DENSE_COPY asks for cp.async.
bool dense_by_tma(const Problem& problem) {
  const GroupedNvfp4& a = problem.args;
  const ExpertGroups& g = a.groups;
  return !problem.nvfp4 && a.token_ids == nullptr && g.num_experts == 1 && !g.offsets_on_device &&
         a.proj_count == 1 && !core::dense_copy_by_cp_async();
}

// Stream-K (stream_k_kernel.cuh) for a dense GEMM whose stages TMA copies, on the
// CTA-synchronised twin of its tile, K whole, where METRALE_CUDA_DENSE_SCHEDULE asks for it.
// The family does not take it by itself: measured against the tile grid on every preset's dense
// GEMM at M = 48-4096 it ran 1.3-2.9x the time but for DeepSeek-V3 at M = 48-64 on the 64-token
// tile, 0.86x (an H200, docs/perf.md, forty-fifth session).
Plan stream_k_plan(Plan plan) {
  const core::DenseSchedule schedule = core::dense_schedule();
  const int twin = cta_synchronised_twin(plan.config);
  const bool asked =
      schedule == core::DenseSchedule::stream_k || schedule == core::DenseSchedule::stream_k_pairs;
  if (!plan.tma || !asked || !has_stream_k(twin)) return plan;
  plan.config = twin;
  plan.splits = 0;
  plan.stream_k = schedule == core::DenseSchedule::stream_k_pairs ? 2 : 1;
  return plan;
}

// The two TMA maps of plan.tma's launch in `p`, boxes of the tile's tokens and weight rows; false
// where they cannot be encoded (an operand not 16-byte aligned, or no driver entry point: the
// launch then copies by cp.async). Rows at or past a_rows read as zeros, as the gather reads them.
bool encode_tma_maps(const Problem& problem, const Plan& plan, GroupedParams& p) {
  if (!plan.tma) return false;
  const GroupedNvfp4& a = problem.args;
  const TileConfig& tile = kTiles[bf16_twin(plan.config)];
  const long rows = a.a_rows > 0 ? std::min<long>(a.a_rows, a.groups.m_total) : a.groups.m_total;
  const int sharing = stream_k_runs(plan) ? plan.stream_k : 1;  // CTAs sharing the weight box
  return encode_bf16_map(p.act_map, a.a, rows, a.k, tile.tokens) &&
         encode_bf16_map(p.weight_map, expert_entry(problem, 0, 0).weight, a.n, a.k,
                         tile.weight_rows / sharing);
}

}  // namespace

bool wide_tile_pays(TileLoad wide, TileLoad narrow, int sm_count) {
  const long sms = std::max(sm_count, 1);
  auto waves = [&](const TileLoad& l) {
    return l.tiles > 0 ? static_cast<double>((l.tiles + sms - 1) / sms) * l.time / l.tiles : 0.0;
  };
  return waves(wide) < waves(narrow);
}

namespace {

class TiledFamily final : public Family {
 public:
  const char* name() const override { return "sm90-tiled"; }
  int config_count() const override { return kTileCount; }

  std::string describe(const Plan& plan) const override {
    const TileConfig& t = kTiles[plan.config];
    return fmt::format("sm90-tiled tokens={} weight_rows={}{}{}{}{}{}{}", t.tokens, t.weight_rows,
                       t.chunk < t.tokens ? fmt::format(" chunk={}", t.chunk) : "",
                       t.specialized ? " warp-specialised" : "",
                       t.decoded > 0 ? fmt::format(" decoder(ring={})", t.decoded) : "",
                       splits_of(plan) > 1 ? fmt::format(" splits={}", plan.splits) : "",
                       plan.tma ? " tma" : "",
                       !stream_k_runs(plan) ? ""
                       : plan.stream_k == 1 ? " stream-k"
                                            : fmt::format(" stream-k cluster={}", plan.stream_k));
  }

  std::string why_not(const Problem& problem) const override {
    const int k = problem.args.k;
    if (problem.nvfp4 && k % 32 != 0)
      return fmt::format(
          "K = {} is not a multiple of 32 (packed rows are loaded 16 bytes at a time)", k);
    if (!problem.nvfp4 && k % 8 != 0)
      return fmt::format("K = {} is not a multiple of 8 (rows are loaded 16 bytes at a time)", k);
    return {};
  }

  Plan plan(const Problem& problem, RowWindow rows) const override {
    const ExpertGroups& g = problem.args.groups;
    Plan plan;
    plan.rows = rows;
    if (g.offsets_on_device) {
      const double mean = uniform_window_mean(uniform_mean(g), rows);
      plan.config = choose_tile(problem, rows, std::min<double>(mean, rows.max_rows));
      return plan;
    }
    const WindowRows w = rows_in_window(g, rows);
    if (g.num_experts == 1 && w.experts == 1 && w.rows > 32 && w.rows <= kNarrowTileRows)
      plan.config = single_gemm_tile(problem);
    else
      plan.config =
          choose_tile(problem, rows, w.experts ? static_cast<double>(w.rows) / w.experts : 1.0);
    plan = persistent_past_grid_rows(problem,
                                     split_small_grid(problem, narrow_small_grid(problem, plan)));
    plan.tma = dense_by_tma(problem);
    return stream_k_plan(plan);
  }

  std::size_t workspace_bytes(const Problem& problem, const Plan& plan) const override {
    return carve(problem, plan, nullptr).bytes;
  }

  void launch(const Problem& problem, const Plan& plan, core::Buffer ws,
              cudaStream_t stream) const override {
    const GroupedNvfp4& a = problem.args;
    const int tiles = row_tiles(a, plan);
    if (tiles == 0) return;
    const int splits = splits_of(plan);
    if (splits > 1 && (problem.nvfp4 || kTiles[plan.config].specialized))
      fail(Status::unsupported,
           "{}: a K split (splits = {}) runs on bf16 weights and a CTA-synchronised tile only "
           "(configuration {} is {}); NVFP4 weights keep one order of K",
           problem.op, splits, plan.config, describe(plan));
    if (splits > kMaxSplits && folds_in_cluster(kTiles[plan.config]))
      fail(Status::unsupported,
           "{}: a K split (splits = {}) folds within a thread-block cluster: at most {} ranges",
           problem.op, splits, kMaxSplits);
    if (plan.stream_k && !stream_k_runs(plan))  // asked for (stream_k_plan) on another tile
      fail(Status::unsupported,
           "{}: METRALE_CUDA_DENSE_SCHEDULE asks for stream-K, but configuration {} ({}) has no "
           "stream-K kernel: stream-K runs configurations 2, 3, 6 and 7, K whole, on TMA copies",
           problem.op, plan.config, describe(plan));
    const bool fragments = problem.nvfp4 && fragment_order(a);  // reads the environment: once
    if (fragments && kTiles[plan.config].decoded > 0)
      fail(Status::unsupported,
           "{}: configuration {} ({}) does not read prepacked weights in the fragment order "
           "(the prepacked layout unless METRALE_PREPACKED_LAYOUT=halves)",
           problem.op, plan.config, describe(plan));
    const int channels = channel_tiles(a, kTiles[plan.config]);
    dim3 grid(channels, tiles, a.proj_count * splits);
    if (kTiles[plan.config].specialized)  // persistent: at most one CTA per multiprocessor
      grid = dim3(static_cast<unsigned>(
          std::min<long>(static_cast<long>(grid.x) * grid.y * grid.z, device_sm_count())));
    if (grid.y > kMaxGridRows)
      fail(Status::unsupported, "{}: {} row tiles exceed the grid limit of {}", problem.op, grid.y,
           kMaxGridRows);
    const Layout l = carve(problem, plan, ws.ptr);
    thread_local HostOffsets offsets;  // ~8 KB: per-thread scratch, not a heap block per call
    fill_host_offsets(problem, offsets);
    if (staged(a, plan))
      stage_tables(problem, 0, &offsets,
                   StagedTables{.table = l.table,
                                .offsets = l.offsets,
                                .num_experts = a.groups.num_experts,
                                .proj_count = a.proj_count,
                                .counters = l.counters,
                                .counter_count = l.tiles},
                   stream);

    GroupedParams p{};
    p.a = a.a;
    p.token_ids = a.token_ids;
    p.a_rows = a.a_rows;
    p.n = a.n;
    p.k = a.k;
    p.num_experts = a.groups.num_experts;
    p.scale_sfb = a.scale_layout == ScaleLayout::sfb;
    p.scale_vec16 = problem.nvfp4 && !p.scale_sfb && a.n % 16 == 0 && scales_aligned(problem, 16);
    p.offsets = a.groups.offsets_on_device ? a.groups.offsets : l.offsets;
    p.m_total = a.groups.m_total;
    p.min_rows = plan.rows.min_rows;
    p.max_rows = plan.rows.max_rows;
    p.out[0] = a.out[0];
    p.out[1] = a.proj_count > 1 ? a.out[1] : nullptr;
    p.table = l.table;
    p.channel_tiles = channels;
    p.projections = a.proj_count;
    p.band_rows = band_rows(problem);
    p.splits = splits;
    p.partials = l.partials;
    p.counters = l.counters;
    if (!staged(a, plan)) {
      for (int j = 0; j < a.proj_count; ++j) p.single.entry[j] = expert_entry(problem, j, 0);
      p.single.offsets[0] = offsets.values[0];
      p.single.offsets[1] = offsets.values[1];
    }
    const bool tma_maps = encode_tma_maps(problem, plan, p);
    if (tma_maps && stream_k_runs(plan)) {
      METRALE_CUDA_CHECK(cudaMemsetAsync(l.counters, 0, sizeof(std::uint32_t) * l.tiles, stream));
      METRALE_CUDA_CHECK(
          launch_stream_k(plan.config, plan.stream_k, p, stream_k_workers(a, plan), stream));
      return;
    }
    const TiledWeights weights = tma_maps         ? TiledWeights::bf16_tma
                                 : !problem.nvfp4 ? TiledWeights::bf16
                                 : fragments      ? TiledWeights::nvfp4_fragments
                                 : prepacked(a)   ? TiledWeights::nvfp4_prepacked
                                                  : TiledWeights::nvfp4;
    METRALE_CUDA_CHECK(launch_grouped_gemm(plan.config, weights, p, grid, stream));
  }
};

}  // namespace

const Family& tiled_family() {
  static const TiledFamily family;
  return family;
}

}  // namespace metrale::cuda::sm90
